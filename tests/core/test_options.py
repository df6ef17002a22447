"""The one options object: every option checked once, one message naming it; the seed rule."""

import dataclasses
import re

import numpy as np
import pytest

from unbiased_criteria.options import GainOptions

BAD = [
    ("n_draws", 0, "n_draws must be a positive integer, got 0"),
    ("n_draws", 1.5, "n_draws must be a positive integer, got 1.5"),
    ("n_draws", True, "n_draws must be a positive integer, got True"),
    ("min_k", "5", "min_k must be a positive integer, got '5'"),
    ("n_blocks", -1, "n_blocks must be an integer >= 0, got -1"),
    ("n_blocks", 1, "n_blocks must be 0 (no standard errors) or at least 2 (a jackknife "
     "needs two blocks), got 1"),
    ("lam", float("nan"), "lam must be a finite number >= 0, got nan"),
    ("lam", -1.0, "lam must be a finite number >= 0, got -1.0"),
    ("shortcut", 1, "shortcut must be True or False, got 1"),
    ("cross_fit", "yes", "cross_fit must be True or False, got 'yes'"),
    ("redraw_holdout", None, "redraw_holdout must be True or False, got None"),
    ("prune_threshold", float("nan"), "prune_threshold must be a number (-inf keeps every "
     "split) or None (no pruning), got nan"),
    ("prune_threshold", "0", "prune_threshold must be a number"),
    ("prune_threshold", False, "prune_threshold must be a number"),
    ("holdout_fraction", 1.0, "holdout_fraction must be in [0, 1), got 1.0"),
    ("holdout_fraction", float("nan"), "holdout_fraction must be in [0, 1), got nan"),
    ("holdout_fraction", True, "holdout_fraction must be in [0, 1), got True"),
    ("random_state", -1, "random_state must be None, a non-negative int, or a numpy "
     "SeedSequence, Generator or RandomState, got -1"),
    ("random_state", 1.5, "random_state must be None, a non-negative int"),
    ("random_state", True, "random_state must be None, a non-negative int"),
]


@pytest.mark.parametrize("field, value, message", BAD)
def test_every_bad_option_is_refused_by_name(field, value, message):
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        GainOptions(**{field: value})


def test_argument_names_rename_the_error():
    with pytest.raises(ValueError, match="^threshold must be a number"):
        GainOptions(prune_threshold=float("nan"), argument_names={"prune_threshold": "threshold"})


def test_good_options_are_normalised():
    o = GainOptions(n_draws=np.int64(3), lam=1, prune_threshold=-np.inf, holdout_fraction=0,
                    shortcut=np.bool_(True))
    assert (o.n_draws, o.lam, o.prune_threshold, o.holdout_fraction) == (3, 1.0, -np.inf, 0.0)
    assert type(o.n_draws) is int and o.shortcut is True
    assert GainOptions(prune_threshold=None).prune_threshold is None


def entropy(options):
    return options.random_state.entropy


def test_default_seed_is_the_host_seed_else_zero():
    assert entropy(GainOptions()) == 0
    assert entropy(GainOptions(host_seed=7)) == 7
    assert entropy(GainOptions(host_seed="7")) == 7  # hosts take parameters as text too
    assert entropy(GainOptions(random_state=3, host_seed=7)) == 3
    with pytest.raises(ValueError, match=r"^the seed \(the host's seed parameter, or an "
                                         r"estimator's random_state, used where random_state "
                                         r"is None\) must be"):
        GainOptions(host_seed="x")


def test_generators_give_one_draw_and_repeat_from_the_same_state():
    a = GainOptions(random_state=np.random.default_rng(5))
    b = GainOptions(random_state=np.random.default_rng(5))
    assert entropy(a) == entropy(b)
    c = GainOptions(random_state=np.random.RandomState(5))
    assert entropy(c) == np.random.RandomState(5).randint(np.iinfo(np.int32).max)
    ss = np.random.SeedSequence(11)
    assert GainOptions(random_state=ss).random_state is ss


def test_replace_keeps_the_checks():
    o = GainOptions(random_state=4)
    assert entropy(dataclasses.replace(o, n_blocks=3)) == 4
    with pytest.raises(ValueError, match="^min_k must be"):
        dataclasses.replace(o, min_k=0)
