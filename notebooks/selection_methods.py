"""Notebook 3's selectors and its third host, next to the rankings of ``comparison.py``.

* ``cross-fitted unbiased gain``: ``uc.cross_fitted_importance`` on the whole training part
  (every row builds trees in some folds and is held-out evidence in one), reached through
  ``uc.UnbiasedSelector``, whose ``report_`` it is;
* ``UnbiasedSelector``: keeps the features significant at ``alpha``, however many; the
  variants of ``alpha`` and ``iterations="best"`` are read off the same cross-fit
  (:func:`selector_variants`), a different ``cv`` needs its own;
* ``BorutaShap`` (PyPI ``BorutaShap``): Boruta's shadow-feature test on mean |SHAP|, keeps
  the features it accepts. Version 1.0.17 imports ``scipy.stats.binom_test`` (removed in
  SciPy 1.12) and uses ``np.NaN`` (removed in NumPy 2): :func:`import_borutashap` supplies
  both to that module only;
* scikit-learn's ``HistGradientBoosting`` as a host (:func:`host_estimator`): its users have
  permutation importance only; the library adds the unbiased gain and the training gain.
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pandas as pd

import unbiased_criteria as uc

HOST_LABEL = {"lightgbm": "LightGBM", "xgboost": "XGBoost", "hgb": "HistGradientBoosting"}
MIN_K_WARNING = ".*fewer than min_k.*"  # small folds: such splits count 0, as documented


def one_thread() -> None:
    """Limit OpenMP and BLAS to one thread, HistGradientBoosting's included.

    Its OpenMP runtime loads with ``sklearn.ensemble``, so that is imported first; on a
    shared two-core machine the default (all cores) made it about ten times slower.
    """
    import sklearn.ensemble  # noqa: F401  (loads the OpenMP runtime to be limited)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def host_estimator(host: str, task: str, *, n_estimators: int, learning_rate: float,
                   seed: int, **extra):
    """An unfitted scikit-learn estimator of the host (one thread where the host has a knob).

    ``host`` is ``"lightgbm"`` or ``"xgboost"`` (as ``comparison.fit_host``) or ``"hgb"``
    (``HistGradientBoosting*``, no early stopping, ``max_leaf_nodes`` from ``extra``).
    """
    if host == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

        cls = (HistGradientBoostingRegressor if task == "regression"
               else HistGradientBoostingClassifier)
        return cls(max_iter=n_estimators, learning_rate=learning_rate, early_stopping=False,
                   random_state=seed, **extra)
    if host == "lightgbm":
        import lightgbm as lgb

        cls = lgb.LGBMRegressor if task == "regression" else lgb.LGBMClassifier
        params = {"num_leaves": 31, "verbose": -1, "n_jobs": 1, **extra}
        return cls(n_estimators=n_estimators, learning_rate=learning_rate, random_state=seed,
                   **params)
    if host == "xgboost":
        import xgboost as xgb

        cls = xgb.XGBRegressor if task == "regression" else xgb.XGBClassifier
        params = {"max_depth": 5, "tree_method": "hist", "n_jobs": 1, **extra}
        return cls(n_estimators=n_estimators, learning_rate=learning_rate, random_state=seed,
                   **params)
    raise ValueError(f"host: expected 'lightgbm', 'xgboost' or 'hgb', got {host!r}")


# ------------------------------------------------------------------- unbiased selector


def unbiased_selector(host: str, task: str, X, y, *, cv: int, alpha: float, seed: int,
                      host_params: dict, **model_params) -> uc.UnbiasedSelector:
    """``uc.UnbiasedSelector`` fitted on ``X, y`` (its ``report_`` is the cross-fitted ranking)."""
    est = host_estimator(host, task, seed=seed, **model_params, **host_params)
    with warnings.catch_warnings():  # "no split had usable evidence": the selector keeps none
        warnings.filterwarnings("ignore", message=".*usable held-out evidence.*")
        warnings.filterwarnings("ignore", message=MIN_K_WARNING)
        return uc.UnbiasedSelector(est, cv=cv, alpha=alpha, random_state=seed).fit(X, y)


def best_cut(report: uc.CrossFittedReport, n_blocks: int = 20) -> uc.CrossFittedReport:
    """The report ``iterations="best"`` would give, from the report of all iterations.

    For fold ``k``: the number of trees where the other folds' summed total U (all features,
    each fold's own held-out rows) peaks. One tree per iteration (regression, binary), so
    trees and iterations coincide.
    """
    folds = report.fold_reports()
    curves = [np.concatenate([[0.0], r.cumulative_importance().sum(axis=1).to_numpy()])
              for r in folds]
    longest = max(len(c) for c in curves)
    curves = np.stack([np.pad(c, (0, longest - len(c)), mode="edge") for c in curves])
    pooled = curves.sum(axis=0)
    cuts = [int(np.argmax(pooled - curves[k])) for k in range(len(folds))]
    return uc.CrossFittedReport.from_folds(
        [r.first_trees(c) for r, c in zip(folds, cuts)], n_blocks=n_blocks,
        trees_kept=cuts, iterations_kept=cuts)


def significant(report: uc.CrossFittedReport, alpha: float) -> list[str]:
    """``report.select(alpha)``, and none when no split had usable evidence (as the selector)."""
    if len(report.splits) == 0 or not report.splits["usable"].any():
        return []
    return report.select(alpha)


def selector_variants(report: uc.CrossFittedReport, alphas, *, best: bool) -> dict:
    """{(alpha, iterations): kept features} read off one cross-fit, iterations None/"best"."""
    out = {(a, None): significant(report, a) for a in alphas}
    if best:
        cut = best_cut(report)
        out.update({(a, "best"): significant(cut, a) for a in alphas})
    return out


# ------------------------------------------------------------------------ BorutaShap


def import_borutashap():
    """The ``BorutaShap`` class, with the two names its module lost to NumPy 2 and SciPy 1.12.

    Only that module sees them: ``scipy.stats.binom_test`` is set while it imports (it binds
    the name at import) and removed again; its ``np`` becomes numpy plus ``NaN``.
    """
    import scipy.stats

    added = not hasattr(scipy.stats, "binom_test")
    if added:
        def binom_test(x, n=None, p=0.5, alternative="two-sided"):
            return scipy.stats.binomtest(int(x), int(n), p, alternative=alternative).pvalue

        scipy.stats.binom_test = binom_test
    try:
        with warnings.catch_warnings():  # tqdm's "IProgress not found"
            warnings.filterwarnings("ignore", message=".*IProgress not found.*")
            import BorutaShap as module
    finally:
        if added:
            del scipy.stats.binom_test
    if not hasattr(module.np, "NaN"):
        class _NumpyWithNaN(types.ModuleType):
            NaN = np.nan

            def __getattr__(self, name):
                return getattr(np, name)

        module.np = _NumpyWithNaN("numpy")
    module.tqdm = lambda iterable, **_: iterable  # no progress bars in the notebook
    return module.BorutaShap


def borutashap_selection(host: str, task: str, X: pd.DataFrame, y, *, seed: int,
                         host_params: dict, n_trials: int = 20, **model_params) -> dict:
    """BorutaShap (its defaults but ``n_trials``) on ``X, y``: accepted and tentative features.

    The model is the host's with the ranking parameters; BorutaShap refits it in every trial
    on its own 70% of ``X`` with a shuffled copy of every column, and accepts a feature whose
    mean |SHAP| beats the best shadow's significantly often (binomial test, Bonferroni).
    """
    BorutaShap = import_borutashap()
    est = host_estimator(host, task, seed=seed, **model_params, **host_params)
    selector = BorutaShap(model=est, importance_measure="shap",
                          classification=task != "regression")
    y = pd.Series(np.asarray(y), index=X.index)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", message=".*TreeExplainer shap values output.*")
        selector.fit(X, y, n_trials=n_trials, random_state=seed, verbose=False)
    return {"accepted": list(selector.accepted), "tentative": list(selector.tentative)}


# --------------------------------------------------------------------------------- HGB


def hgb_importances(task: str, X, y, X_valid, y_valid, *, seed: int, host_params: dict,
                    **model_params) -> pd.DataFrame:
    """HistGradientBoosting fitted on the fit rows, ranked as its users can and as the library can.

    Columns: ``permutation`` (held-out rows, 5 shuffles, as ``comparison.permutation``),
    ``gain`` (the training gain B of every split, fit rows: the library's, scikit-learn has
    none) and ``unbiased gain`` (fit rows train, held-out rows held out).
    """
    from sklearn.inspection import permutation_importance

    model = host_estimator("hgb", task, seed=seed, **model_params, **host_params).fit(X, y)
    scoring = "neg_mean_squared_error" if task == "regression" else "neg_log_loss"
    perm = permutation_importance(model, X_valid, y_valid, scoring=scoring, n_repeats=5,
                                  random_state=seed, n_jobs=1)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=MIN_K_WARNING)
        table = uc.unbiased_importance(model, X, y, X_valid, y_valid,
                                       random_state=seed).to_frame()
    names = list(X.columns)
    frame = pd.DataFrame({
        "gain": table["biased_gain"].reindex(names),
        "permutation": pd.Series(perm.importances_mean, index=names),
        "unbiased gain": table["unbiased_gain"].reindex(names),
    })
    frame.index.name = "feature"
    return frame
