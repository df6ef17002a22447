"""Which features are significantly above 0: one-sided t-tests, optionally corrected for
testing many features at once (:func:`significant`)."""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["significant", "CORRECTIONS"]

#: ``correction=`` values: None tests each feature at ``alpha``; ``"holm"`` keeps the
#: chance of any false selection (the family-wise error) at ``alpha``; ``"fdr_bh"``
#: (Benjamini-Hochberg) keeps the expected share of false selections at ``alpha``
CORRECTIONS = (None, "holm", "fdr_bh")


def check_selection(alpha, correction) -> None:
    """``alpha`` in (0, 1) and ``correction`` one of :data:`CORRECTIONS`, else ValueError."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.floating) \
            or not 0 < alpha < 1:
        raise ValueError(f"alpha: expected a number in (0, 1), got {alpha!r}")
    if correction not in CORRECTIONS:
        raise ValueError(f"correction: expected None, 'holm' or 'fdr_bh', got {correction!r}")


def significant(estimate, std_error, dof, alpha: float = 0.05,
                correction: str | None = None, *, names=None,
                stacklevel: int = 3) -> np.ndarray:
    """Features whose ``estimate`` is significantly above 0, one-sided.

    Parameters
    ----------
    estimate, std_error : array-like of shape (n_features,)
    dof : int or array-like
        Degrees of freedom of Student's t for each ratio ``estimate / std_error``.
    alpha : float
        Level in (0, 1).
    correction : {None, "holm", "fdr_bh"}
        None: each feature at level ``alpha``. ``"holm"`` (Holm's step-down): the probability
        of selecting any feature whose true value is <= 0 stays <= ``alpha``.
        ``"fdr_bh"`` (Benjamini-Hochberg, by :func:`scipy.stats.false_discovery_control`):
        the expected share of such features among those selected stays <= ``alpha``. Only
        features with a test (a finite ratio: a positive standard error, and ``dof > 0``)
        count among the features tested; the others are never selected, with or without a
        correction.
    names : sequence of str, optional
        The features' names, for the warning.
    stacklevel : int
        Of the warning: 3 points at the caller of the function that calls this one.

    Returns
    -------
    ndarray of bool

    Warns
    -----
    UserWarning
        When a feature with ``estimate > 0`` has no test (a standard error of 0, e.g. every
        jackknife replicate alike with a handful of held-out rows): it is not selected.
    """
    from scipy import stats

    check_selection(alpha, correction)
    estimate = np.asarray(estimate, dtype=np.float64)
    std_error = np.asarray(std_error, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = estimate / std_error
    dof = np.broadcast_to(np.asarray(dof, dtype=np.float64), z.shape)
    # a standard error of 0 makes U / SE infinite (or NaN): that is no evidence, not
    # infinite significance (it once selected a feature on two held-out rows)
    with np.errstate(invalid="ignore"):
        tested = np.isfinite(z) & (std_error > 0) & (dof > 0)
    _warn_untested(estimate > 0, tested, names, stacklevel + 1)
    keep = np.zeros(z.shape, dtype=bool)
    if not tested.any():
        return keep
    if correction is None:
        keep[tested] = z[tested] > stats.t.ppf(1 - alpha, dof[tested])
        return keep
    p = stats.t.sf(z[tested], dof[tested])
    if correction == "holm":
        order = np.argsort(p, kind="stable")
        m = p.size
        passes = p[order] <= alpha / (m - np.arange(m))
        n_rejected = m if passes.all() else int(np.argmin(passes))  # stop at the first failure
        chosen = np.zeros(m, dtype=bool)
        chosen[order[:n_rejected]] = True
    else:
        chosen = stats.false_discovery_control(p, method="bh") <= alpha
    keep[tested] = chosen
    return keep


def _warn_untested(positive: np.ndarray, tested: np.ndarray, names, stacklevel: int) -> None:
    """Say which features with a positive estimate have no test (they are not selected)."""
    untested = np.flatnonzero(positive & ~tested)
    if not untested.size:
        return
    labels = ([str(names[i]) for i in untested] if names is not None
              else [f"feature {i}" for i in untested])
    shown = ", ".join(labels[:10]) + (f" and {len(labels) - 10} more" if len(labels) > 10
                                      else "")
    warnings.warn(
        f"{shown}: unbiased_gain > 0 but no test (a standard error of 0, every jackknife "
        f"replicate and fold total alike: too few held-out rows to show any variation; or "
        f"none), so not selected; pass more held-out rows", UserWarning, stacklevel=stacklevel)
