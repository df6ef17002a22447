"""The one options object of the unbiased gain, checked once for every entry point.

:class:`GainOptions` holds every option of the unbiased gain and of pruning that the user
passes to :func:`unbiased_criteria.unbiased_importance`, :func:`unbiased_criteria.prune`, the
training hooks and the estimators. It checks them all when built, with one error naming the
argument, so a bad option gives the same message through every entry point.

The default seed: ``random_state=None`` means the host's seed parameter when the training hooks
and estimators were given one (``host_seed``), else 0, so results repeat from run to run as the
hosts' do. Pass a ``numpy.random.Generator`` (or ``SeedSequence``) for fresh draws.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping
from dataclasses import InitVar, dataclass, replace
from typing import Any

import numpy as np

from .gains import weight_scale

__all__ = ["GainOptions", "SEED_TYPES", "check_bool", "check_memory_budget", "check_seed",
           "host_seed_int"]

#: what ``random_state`` accepts, for error messages
SEED_TYPES = ("None, a non-negative int, or a numpy SeedSequence, Generator or RandomState")


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _check_int(value: Any, argument: str, minimum: int) -> int:
    if not _is_int(value) or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{argument} must be {what}, got {value!r}")
    return int(value)


def check_bool(value: Any, argument: str) -> bool:
    """``value`` as a bool; ``ValueError`` naming ``argument`` unless it is a Python or numpy
    bool (a truthy text such as ``"False"`` would silently switch an option on)."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{argument} must be True or False, got {value!r}")
    return bool(value)


def check_memory_budget(value: Any) -> float:
    """``memory_budget``, checked: ``ValueError`` naming it unless it is a positive number of
    bytes (an int or a float such as ``1e8``; not a bool, text or NaN). The one check of the
    in-memory and the Dask paths."""
    if not _is_real(value) or not value > 0:  # NaN is not > 0
        raise ValueError(f"memory_budget must be a positive number of bytes, got {value!r}")
    return value


def seed_sequence(seed: Any, argument: str) -> np.random.SeedSequence:
    """``seed`` as a SeedSequence; a Generator or RandomState gives one draw of its stream."""
    check_seed(seed, argument)
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(int(seed.integers(2**63)))
    if isinstance(seed, np.random.RandomState):
        return np.random.SeedSequence(int(seed.randint(np.iinfo(np.int32).max)))
    return np.random.SeedSequence(seed)


def check_seed(seed: Any, argument: str) -> None:
    """``ValueError`` naming ``argument`` unless ``seed`` is one of :data:`SEED_TYPES`; a
    Generator or RandomState is not drawn from (unlike :func:`seed_sequence`)."""
    if not isinstance(seed, np.random.SeedSequence | np.random.Generator
                      | np.random.RandomState) and not (seed is None
                                                        or (_is_int(seed) and seed >= 0)):
        raise ValueError(f"{argument} must be {SEED_TYPES}, got {seed!r}")


def host_seed_int(seed: np.random.SeedSequence) -> int:
    """The host's integer seed for a SeedSequence (the hosts take ints, and draw a
    Generator's or RandomState's in ``[0, 2**31 - 1)``): its first generated word in that
    range, the same for the same sequence; ``seed`` is not changed."""
    return int(seed.generate_state(1, np.uint32)[0]) % int(np.iinfo(np.int32).max)


def _host_seed(seed: Any) -> Any:
    """The host's seed parameter as a seed (hosts also take it as text, e.g. ``'7'``)."""
    if isinstance(seed, str):
        try:
            return int(seed)
        except ValueError:
            pass
    return seed


@dataclass(frozen=True)
class GainOptions:
    """Options of the unbiased gain and of pruning, shared by every entry point.

    See :func:`unbiased_criteria.gains.unbiased_gain` for ``n_draws``, ``min_k``, ``lam`` and
    ``shortcut``. ``random_state`` seeds one stream per tree (held to a SeedSequence once
    built; see the module docstring for ``None``). ``cross_fit`` (validation-only mode)
    averages U over both assignments of the two halves. ``n_blocks >= 2`` also computes, for
    a block jackknife, U with each of ``n_blocks`` random blocks of held-out rows left out
    (0: none; 1 is refused, one block has no jackknife).
    ``prune_threshold``: splits with ``U <= prune_threshold`` are collapsed (None: no scoring
    or pruning in the training hooks). ``holdout_fraction`` and ``redraw_holdout``: the
    training hooks' held-out rows. ``refit_leaves``: pruning recomputes every leaf, not
    only the new ones.

    Every option is checked when the object is built: ``ValueError`` naming the argument
    (``argument_names`` maps a field to the caller's name for it, e.g. ``prune``'s
    ``threshold``). ``host_seed`` is the host's seed parameter, used when ``random_state`` is
    None.
    """

    n_draws: int = 1
    min_k: int = 5
    random_state: Any = None
    lam: float = 0.0
    shortcut: bool = False
    cross_fit: bool = True
    n_blocks: int = 0
    prune_threshold: float | None = 0.0
    holdout_fraction: float = 0.5
    redraw_holdout: bool = True
    refit_leaves: bool = False
    #: the held-out rows' typical weight (1: unweighted), the unit of the curvature floor
    #: (:func:`unbiased_criteria.gains.has_curvature`); set from the rows, not by users
    weight_scale: float = 1.0
    host_seed: InitVar[Any] = None
    argument_names: InitVar[Mapping[str, str] | None] = None

    def __post_init__(self, host_seed: Any, argument_names: Mapping[str, str] | None):
        names = dict(argument_names or {})

        def name(field: str) -> str:
            return names.get(field, field)

        def put(field: str, value: Any) -> None:
            object.__setattr__(self, field, value)

        put("n_draws", _check_int(self.n_draws, name("n_draws"), 1))
        put("min_k", _check_int(self.min_k, name("min_k"), 1))
        put("n_blocks", _check_int(self.n_blocks, name("n_blocks"), 0))
        if self.n_blocks == 1:  # a jackknife needs two blocks; one would give NaN errors
            raise ValueError(f"{name('n_blocks')} must be 0 (no standard errors) or at least 2 "
                             f"(a jackknife needs two blocks), got 1")
        if not _is_real(self.lam) or not math.isfinite(self.lam) or self.lam < 0:
            raise ValueError(f"{name('lam')} must be a finite number >= 0, got {self.lam!r}")
        put("lam", float(self.lam))
        for field in ("shortcut", "cross_fit", "redraw_holdout", "refit_leaves"):
            put(field, check_bool(getattr(self, field), name(field)))
        t = self.prune_threshold
        if t is not None and (not _is_real(t) or math.isnan(t)):
            # prune() names it "threshold" and has no "no pruning": None is the hooks' option
            none = "" if "prune_threshold" in names else " or None (no pruning)"
            raise ValueError(
                f"{name('prune_threshold')} must be a number (-inf keeps every split){none}, "
                f"got {t!r}"
            )
        put("prune_threshold", None if t is None else float(t))
        f = self.holdout_fraction
        if not _is_real(f) or not 0.0 <= f < 1.0:
            raise ValueError(f"{name('holdout_fraction')} must be in [0, 1), got {f!r}")
        put("holdout_fraction", float(f))
        scale = self.weight_scale
        if not _is_real(scale) or not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"weight_scale must be a finite number > 0, got {scale!r}")
        put("weight_scale", float(scale))
        seed = self.random_state
        if seed is None:
            # the one default-seed rule: the host's seed parameter if given, else 0
            seed = _host_seed(host_seed)
            argument = (f"the seed (the host's seed parameter, or an estimator's "
                        f"random_state, used where {name('random_state')} is None)")
            seed = 0 if seed is None else seed
        else:
            argument = name("random_state")
        put("random_state", seed_sequence(seed, argument))

    def with_weight_scale(self, weight: np.ndarray | None) -> GainOptions:
        """These options with the curvature floor's unit (:func:`~unbiased_criteria.gains.
        weight_scale`) from the held-out rows' weights as the model weighted them (checked
        already, times the classifier's class weights; None: unweighted): the floor bounds
        sums of their hessians, so its unit is theirs, and scaling them alone changes no
        ratio and no split's usability."""
        scale = weight_scale(None if weight is None else np.asarray(weight, dtype=np.float64))
        return self if scale == self.weight_scale else replace(self, weight_scale=scale)

    def warn_if_nothing_held_out(self, stacklevel: int) -> None:
        """The training hooks' one warning for pruning that cannot happen: with
        ``holdout_fraction=0`` no row is held out, so no split is scored or pruned (and the
        unbiased importance is NaN). ``prune_threshold=None`` asked for that: no warning."""
        if self.prune_threshold is not None and self.holdout_fraction == 0:
            warnings.warn("holdout_fraction=0 leaves no held-out rows: no split is scored or "
                          "pruned, and the unbiased importance is NaN (prune_threshold=None "
                          "says that on purpose)", UserWarning, stacklevel=stacklevel + 1)
