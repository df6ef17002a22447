"""What the LightGBM and XGBoost estimators share: the host ``fit`` with our ``train``, and the
unbiased importance of the fitted model; and what every estimator of the library shares: a
``fit`` that raises leaves the estimator as it was (:func:`unchanged_on_error`)."""

from __future__ import annotations

import copy
import inspect
import re
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
from unbiased_criteria.adapters._compat import HostVersionError
from unbiased_criteria.adapters._record import model_record, written_of

from unbiased_criteria.errors import InputError
from unbiased_criteria.options import GainOptions, check_seed, host_seed_int
from unbiased_criteria.report import ImportanceReport
from unbiased_criteria.validation import check_weight

__all__ = ["with_train", "TrainingImportance", "IMPORTANCE_DOC", "check_fit_weights",
           "fit_argument_names", "unchanged_on_error", "check_unbiased_options",
           "host_seeds"]

#: what ``feature_importances_`` and ``unbiased_gain_`` are, for the estimators' docstrings
IMPORTANCE_DOC = (
    "The unbiased importance, clipped at 0: per feature, ``max(0, unbiased_gain_)`` (a\n"
    "        negative total is no evidence the model uses the feature). scikit-learn's\n"
    "        ``SelectFromModel`` and ``RFE`` read it as a magnitude (``abs``, square), so the\n"
    "        signed sum would rank strongly negative noise features first.\n"
    "        ``importance_type`` does not change it (the host's importances are the Booster's).\n"
    "    unbiased_gain_ : ndarray of shape (n_features,)\n"
    "        The signed sum: per feature, ``U`` summed over every split scored during\n"
    "        training, kept or not (the kept splits alone would be a winner's-curse sample);\n"
    "        ``importance_report_`` has it with standard errors."
)


def with_train(func: Callable, replacement: Callable) -> Callable:
    """A copy of ``func`` whose global name ``train`` means ``replacement``.

    The hosts' ``fit`` methods prepare the data sets, evaluation sets, metrics and callbacks
    and then call their ``train`` through their module's global name ``train``. Running a copy
    of the function (unwrapped from any decorator) with that one name rebound keeps every step
    of the host's ``fit`` without touching the host's module (no monkeypatching: other code and
    threads are unaffected).

    This relies on the hosts' layout, known to hold for ``LGBMModel.fit`` in LightGBM 4.0 to
    4.7 and ``XGBModel.fit`` (and its subclasses') in XGBoost 3.2 to 3.4 (see each adapter's
    ``compat`` module): ``fit`` is a plain Python function (possibly decorated with
    ``functools.wraps``) whose code names the global ``train``. Where it does not,
    :class:`~unbiased_criteria.adapters._compat.HostVersionError` says so.
    """
    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None or "train" not in code.co_names:
        raise HostVersionError(
            f"this host version's {func.__qualname__} does not call train(); the Unbiased* "
            "estimators need an update"
        )
    namespace = dict(func.__globals__)
    namespace["train"] = replacement
    new = types.FunctionType(func.__code__, namespace, func.__name__, func.__defaults__,
                             func.__closure__)
    new.__kwdefaults__ = copy.copy(func.__kwdefaults__)
    return new


@contextmanager
def fit_argument_names(renames: Sequence[tuple[str, str]]) -> Iterator[None]:
    """Errors of the training hook in the names of the estimator's ``fit``: ``(pattern,
    replacement)`` regular expressions over the message (``dtrain`` -> the training data,
    ``evals[0] ('validation_0')`` -> ``eval_set[0]``...). Only plain ``ValueError`` /
    ``InputError`` messages are renamed; any other exception passes as it is."""
    try:
        yield
    except ValueError as err:
        if type(err) not in (ValueError, InputError):
            raise
        text = str(err)
        renamed = text
        for pattern, replacement in renames:
            renamed = re.sub(pattern, replacement, renamed)
        if renamed == text:
            raise
        raise type(err)(renamed) from None


@contextmanager
def unchanged_on_error(estimator: object) -> Iterator[None]:
    """Run a ``fit`` so that, if it raises, ``estimator`` keeps the attributes it had before.

    The hosts' ``fit`` (and the grower's input handling) set fitted attributes step by step:
    the classes and their encoder, the feature count and names, the category mapping. A fit
    refused midway would leave a fitted estimator's old model with a new data set's
    attributes, which then predicts wrong labels or values without a word. The attributes
    are put back as they were (the objects themselves: a fit makes new ones, it does not
    change the old model's); a first fit that raises leaves the estimator unfitted.
    """
    saved = dict(estimator.__dict__)
    try:
        yield
    except BaseException:  # KeyboardInterrupt too: the old model stays whole
        estimator.__dict__.clear()
        estimator.__dict__.update(saved)
        raise


def check_unbiased_options(estimator: object, names: Sequence[str]) -> None:
    """The library's options of a hook estimator (``holdout_fraction``, ``n_draws``...),
    checked as the training hook checks them, before ``fit`` touches anything: one
    ``ValueError`` naming the option; and ``random_state``, which also seeds the held-out
    draws (a negative int reached the host's seed and was refused as "the seed")."""
    GainOptions(**{name: getattr(estimator, name) for name in names})
    check_seed(getattr(estimator, "random_state", None), "random_state")


def host_seeds(params: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """``params`` with each seed parameter in ``names`` that holds a numpy SeedSequence as
    the host's integer seed for it (:func:`~unbiased_criteria.options.host_seed_int`): the
    hosts take ints and draw from a Generator or RandomState themselves, but refuse a
    SeedSequence. A new dict; the caller's SeedSequence is not changed."""
    return {k: host_seed_int(v) if k in names and isinstance(v, np.random.SeedSequence) else v
            for k, v in params.items()}


def _n_rows(X) -> int | None:
    """Rows of a fit input (array, frame, sparse matrix, list), or None if it cannot tell."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        return None


def check_fit_weights(weight, eval_weights, weight_name: str, eval_name: str, X=None,
                      eval_set=None) -> None:
    """``fit``'s sample weights and evaluation weights, finite, non-negative and one per row
    of ``X`` / of each ``eval_set`` pair's X, refused by their argument names before the host
    sees them (XGBoost would fail deep in C++)."""
    eval_X = [pair[0] if isinstance(pair, (tuple, list)) and len(pair) == 2 else None
              for pair in (eval_set or ())]
    for w, name, data in [
        (weight, weight_name, X),
        *((w, f"{eval_name}[{i}]", eval_X[i] if i < len(eval_X) else None)
          for i, w in enumerate(eval_weights or ())),
    ]:
        if w is not None:
            w = np.asarray(w)  # array-likes too (scikit-learn's checks pass one)
            rows = _n_rows(data) if data is not None else None
            check_weight(w, w.size if rows is None else rows, name)


class TrainingImportance:
    """``feature_importances_``, ``unbiased_gain_``, ``importance_report_`` and
    ``training_splits_`` from the fitted Booster's record.

    Mixed into the estimators before the host's model class; ``_not_fitted_error`` is the
    host's exception for an unfitted estimator, ``_host_booster()`` the fitted Booster (through
    the host's public accessor).
    """

    _not_fitted_error: type[Exception]
    _host_booster: Callable[[], object]
    _host_name: str  # the report's host

    def _training_record(self):
        if not self.__sklearn_is_fitted__():
            raise self._not_fitted_error(
                "No feature_importances found. Need to call fit beforehand.")
        booster = self._host_booster()
        # AttributeError throughout: scikit-learn's hasattr(est, "feature_importances_")
        # then says the estimator has none (SelectFromModel asks for another importance)
        if written_of(booster) is not None or written_of(self, booster) is not None:
            raise AttributeError(
                "this model was pruned after training (unbiased_criteria.prune): the record of "
                "its training describes the trees before pruning, not its own, so it has no "
                "training importance; measure the pruned model with "
                "unbiased_criteria.unbiased_importance(model, X, y, X_valid, y_valid) on "
                "held-out rows that did not prune it")
        try:
            record = model_record(booster, self)
        except ValueError as err:  # the Booster was changed after fit
            raise AttributeError(str(err)) from None
        if record is None:
            raise AttributeError(
                "this model's Booster has no training record (it was loaded or copied, not "
                "fitted by fit); the host's importances: get_booster() / booster_"
            )
        return record

    @property
    def feature_importances_(self) -> np.ndarray:
        """Unbiased importance of each feature, clipped at 0: ``max(0, unbiased_gain_)``.

        A feature whose ``U`` sums to a negative total showed no evidence of use on held-out
        rows: 0, as scikit-learn's importances are non-negative. Its tools read
        ``feature_importances_`` as a magnitude (``SelectFromModel`` takes ``abs``, ``RFE``
        the square): the signed sums, where noise features are strongly negative, would
        make them keep the noise. The signed sums: ``unbiased_gain_``; with standard errors
        and ``select()``: ``importance_report_``. NaN for every feature when nothing could
        be scored (see ``unbiased_gain_``).
        """
        return np.maximum(self._unbiased_gain(stacklevel=3), 0.0)  # NaN stays NaN

    @property
    def unbiased_gain_(self) -> np.ndarray:
        """Per feature, the signed sum of ``U`` over every split scored during training,
        kept or not.

        ``U`` is each split's unbiased gain on that round's held-out rows, measured before
        pruning decided on it, so it is unbiased for the split's gain on new data and the sum
        is too: a noise feature's expected total is <= 0. The sum over the kept splits only
        would not be: they were kept *because* their U was high on the very rows that
        measured it (the winner's curse: continuous noise then outranks informative
        features). Not normalised; NaN for every feature when nothing could be scored
        (``prune_threshold=None``, ``holdout_fraction=0``, no held-out row), 0 when the host
        made no split. ``importance_report_.to_frame()["unbiased_gain"]`` is the same sum,
        with standard errors and ``select()``.
        """
        return self._unbiased_gain(stacklevel=3)

    def _unbiased_gain(self, stacklevel: int) -> np.ndarray:
        """``unbiased_gain_``; ``stacklevel`` points the NaN warning at the caller."""
        record = self._training_record()
        if not record.scored:
            warnings.warn(
                "feature_importances_ is NaN: no split was scored during training "
                f"(prune_threshold={self.prune_threshold!r}, "
                f"holdout_fraction={self.holdout_fraction!r}); the host's importances: "
                "get_booster() / booster_", UserWarning, stacklevel=stacklevel)
        return record.importances()

    @property
    def importance_report_(self) -> ImportanceReport:
        """The importance of ``unbiased_gain_`` as an :class:`ImportanceReport`: every
        split scored during training (``splits``; ``kept`` says which are in the model),
        with block-jackknife standard errors over the training rows, so ``to_frame()`` and
        ``select()`` work; the same object as post-hoc importance and the native grower's
        ``importance_report_``. Refused when nothing was scored (``prune_threshold=None``,
        ``holdout_fraction=0``): its empty table would read as U = 0."""
        record = self._training_record()
        if not record.scored:
            raise ValueError(
                "importance_report_: no split was scored during training "
                f"(prune_threshold={self.prune_threshold!r}, "
                f"holdout_fraction={self.holdout_fraction!r}); fit with held-out rows and "
                "pruning on to measure the importance")
        return record.report(self._host_name)

    @property
    def training_splits_(self) -> pd.DataFrame:
        """Every split scored during training, one row per split (``kept`` says which are in
        the model); see ``training_splits``."""
        return self._training_record().splits.copy()
