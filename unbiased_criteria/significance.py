"""Which features are significantly above 0: one-sided t-tests, optionally corrected for
testing many features at once (:func:`significant`)."""

from __future__ import annotations

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
                correction: str | None = None) -> np.ndarray:
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
        features with a test (a finite ratio: a positive standard error) count among the
        features tested.

    Returns
    -------
    ndarray of bool
    """
    from scipy import stats

    check_selection(alpha, correction)
    estimate = np.asarray(estimate, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = estimate / np.asarray(std_error, dtype=np.float64)
    dof = np.broadcast_to(np.asarray(dof, dtype=np.float64), z.shape)
    if correction is None:
        with np.errstate(invalid="ignore"):  # NaN ratios (no test) compare False
            return z > stats.t.ppf(1 - alpha, dof)
    tested = ~np.isnan(z)
    keep = np.zeros(z.shape, dtype=bool)
    if not tested.any():
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
