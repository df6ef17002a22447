"""An XGBoost model loaded from a file forgets eta and lambda: they are inferred from its
leaves and the training rows, and the results equal those of the live Booster."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

xgb = pytest.importorskip("xgboost")

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.api import _prepare  # noqa: E402
from unbiased_criteria.leaf_params import infer_leaf_params  # noqa: E402


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1600, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=1600) > 0).astype(float)
    return X[:800], y[:800], X[800:], y[800:]


def fit(data, rounds=15, **params):
    X, y, _, _ = data
    params = {"objective": "binary:logistic", "max_depth": 4, "nthread": 1, **params}
    return xgb.train(params, xgb.DMatrix(X, y), rounds)


def loaded(bst):
    return xgb.Booster(model_file=bst.save_raw("json"))


def test_eta_and_lambda_recovered(data):
    X, y, Xv, yv = data
    model = loaded(fit(data, eta=0.3, reg_lambda=5.0))
    prep = _prepare(model, X, y, Xv, yv, None, None, None, 2**20)  # inferred here
    assert not prep.model.leaf_params_unknown
    assert prep.model.split_score.l2 == pytest.approx(5.0, rel=1e-4)
    assert prep.model.forest.trees[0].shrinkage == pytest.approx(0.3, rel=1e-4)
    read = ax.read_model(model)
    assert read.leaf_params_unknown
    fit_ = infer_leaf_params(read, prep.objective, prep.train)
    assert fit_.shrinkage == pytest.approx(0.3, rel=1e-4)
    assert fit_.l2 == pytest.approx(5.0, rel=1e-4)


def test_pruning_a_loaded_model_equals_pruning_the_live_one(data):
    X, y, Xv, yv = data
    live = fit(data, eta=0.05, reg_lambda=2.0, rounds=30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the inferred values fit
        from_file = uc.prune(loaded(live), X, y, Xv, yv, random_state=0)
    expected = uc.prune(live, X, y, Xv, yv, random_state=0)
    d = xgb.DMatrix(Xv)
    np.testing.assert_allclose(from_file.predict(d, output_margin=True),
                               expected.predict(d, output_margin=True), atol=1e-5)
    leaves = [t.n_leaves for t in ax.read_model(expected).forest.trees]
    assert [t.n_leaves for t in ax.read_model(from_file).forest.trees] == leaves
    assert sum(leaves) < sum(t.n_leaves for t in ax.read_model(live).forest.trees)
    # the defaults the loaded Booster reports (eta 0.3, lambda 1) are not the model's
    read = ax.read_model(loaded(live), params={"eta": 0.3, "lambda": 1.0})
    assert any("do not reproduce" in m for m in read.warnings)


def test_importance_of_a_loaded_model_matches_the_host(data):
    X, y, Xv, yv = data
    live = fit(data, eta=0.1, reg_lambda=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = uc.unbiased_importance(loaded(live), X, y, Xv, yv, random_state=0)
    expected = uc.unbiased_importance(live, X, y, Xv, yv, random_state=0)
    np.testing.assert_allclose(report.splits["biased_gain"], report.splits["host_gain"],
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(report.splits["unbiased_gain"],
                               expected.splits["unbiased_gain"], rtol=1e-6, atol=1e-8)
    # without training rows only B depends on lambda: a warning says so, U is computed
    with pytest.warns(UserWarning, match="biased_gain uses lambda=1"):
        uc.unbiased_importance(loaded(live), None, None, Xv, yv, random_state=0)
    with pytest.raises(ValueError, match="without training rows"):
        uc.prune(loaded(live), None, None, Xv, yv, random_state=0)


@pytest.mark.parametrize("params", [{"alpha": 2.0}, {"max_delta_step": 0.1}],
                         ids=["alpha", "max_delta_step"])
def test_l1_or_max_delta_step_cannot_be_identified(data, params):
    X, y, Xv, yv = data
    model = loaded(fit(data, eta=0.1, **params))
    with pytest.raises(ValueError, match="cannot be inferred.*max_delta_step.*--param eta="):
        uc.prune(model, X, y, Xv, yv, random_state=0)
    with pytest.warns(UserWarning, match="cannot be inferred"):
        uc.unbiased_importance(model, X, y, Xv, yv, random_state=0)
    # with the parameters given, pruning works
    model.set_param({"eta": 0.1, **params})
    uc.prune(model, X, y, Xv, yv, random_state=0)


def test_a_declared_alpha_lets_a_loaded_model_infer_eta_and_lambda(data):
    """A loaded model trained with alpha: declaring alpha alone (set_param or --param) was
    taken as the whole story, eta and lambda kept XGBoost's defaults and pruning wrote wrong
    leaves (a keep-all refit moved predictions by 1.06). The weights' check now accounts for
    alpha, so eta and lambda are inferred and the refit keeps the model."""
    X, y, Xv, yv = data
    live = fit(data, eta=0.1, reg_lambda=2.0, alpha=0.5, rounds=20)
    model = loaded(live)
    model.set_param({"alpha": 0.5})
    d = xgb.DMatrix(Xv)
    kept = uc.prune(model, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True,
                    random_state=0)
    np.testing.assert_allclose(kept.predict(d, output_margin=True),
                               live.predict(d, output_margin=True), atol=1e-5)
    # the live model's configuration fits its weights: nothing inferred, nothing warned
    assert not ax.read_model(live).leaf_params_unknown
    assert ax.read_model(model).leaf_params_unknown


def test_poisson_clip_is_taken_into_the_inference():
    """count:poisson clips leaf weights at max_delta_step 0.7 by default: eta and lambda are
    inferred around the clipped leaves, for a loaded model and for a dump, and pruning either
    equals pruning the live Booster."""
    import json

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(3000, 3)), columns=list("abc"))
    Xv = pd.DataFrame(rng.normal(size=(3000, 3)), columns=list("abc"))
    y, yv = rng.poisson(np.exp(X["a"])), rng.poisson(np.exp(Xv["a"]))
    live = xgb.train({"objective": "count:poisson", "nthread": 1, "max_depth": 3},
                     xgb.DMatrix(X, y), 8)
    read = ax.read_model(live)
    clipped = [np.isclose(np.abs(t.value[t.is_leaf]), 0.3 * 0.7, rtol=1e-6).sum()
               for t in read.forest.trees]
    assert sum(clipped) > 0  # the case: some leaves are clipped
    expected = uc.prune(live, X, y, Xv, yv, random_state=0)
    config = json.loads(live.save_config())["learner"]["learner_model_param"]
    params = {"objective": "count:poisson", "base_score": float(config["base_score"].strip("[]")),
              "feature_names": list("abc")}
    dump = live.get_dump(dump_format="json", with_stats=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*max_delta_step.*")  # the assumed 0.7
        from_dump = uc.prune(dump, X, y, Xv, yv, random_state=0, host_params=params)
        from_file = uc.prune(loaded(live), X, y, Xv, yv, random_state=0)
    def flat(dumped):  # every node's (id, split, leaf value) in order
        out, stack = [], [json.loads(t) for t in dumped][::-1]
        while stack:
            node = stack.pop()
            out.append((node["nodeid"], node.get("split"), node.get("leaf", 0.0)))
            stack.extend(node.get("children", [])[::-1])
        return out

    got, want = flat(from_dump), flat(expected.get_dump(dump_format="json", with_stats=True))
    assert [n[:2] for n in got] == [n[:2] for n in want]  # the same splits kept
    np.testing.assert_allclose([n[2] for n in got], [n[2] for n in want], rtol=1e-5)
    d = xgb.DMatrix(Xv)
    np.testing.assert_allclose(from_file.predict(d, output_margin=True),
                               expected.predict(d, output_margin=True), atol=1e-5)


def test_command_line_prunes_a_model_file_without_param(data, tmp_path):
    X, y, Xv, yv = data
    live = fit(data, eta=0.05, reg_lambda=2.0, rounds=30)
    live.save_model(tmp_path / "model.json")
    names = [f"f{i}" for i in range(X.shape[1])]
    for name, (A, b) in {"train": (X, y), "valid": (Xv, yv)}.items():
        frame = pd.DataFrame(A, columns=names).assign(y=b)
        frame.to_csv(tmp_path / f"{name}.csv", index=False, float_format="%.9g")
    res = subprocess.run(
        [sys.executable, "-m", "unbiased_criteria.cli", "prune", "model.json", "--train",
         "train.csv", "--valid", "valid.csv", "--label", "y", "--seed", "0", "--output",
         "pruned.json"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "warning" not in res.stderr
    expected = uc.prune(live, X, y, Xv, yv, random_state=0)
    got = xgb.Booster(model_file=str(tmp_path / "pruned.json"))
    d = xgb.DMatrix(Xv)
    np.testing.assert_allclose(got.predict(d, output_margin=True),
                               expected.predict(d, output_margin=True), atol=1e-5)


def _loaded_via_file(bst, tmp_path, suffix):
    path = tmp_path / f"m.{suffix}"
    bst.save_model(path)
    return xgb.Booster(model_file=str(path))


@pytest.mark.parametrize("suffix", ["json", "ubj"])
@pytest.mark.parametrize("source", ["prune", "hook", "prune_of_loaded"])
def test_a_written_model_saved_and_loaded_is_read_with_its_own_parameters(data, tmp_path,
                                                                          suffix, source):
    """The writer marked its models and the reader trusted the configuration: saved and
    loaded, a pruned or hook-trained model (eta 0.1, lambda 5) was scored with XGBoost's
    defaults (eta 0.3, lambda 1), without a word. Oracles: the host's loss_changes (B, tree 0)
    and the live model's own pruning."""
    X, y, Xv, yv = data
    params = {"eta": 0.1, "lambda": 5.0}
    if source == "hook":
        written = ax.train({"objective": "binary:logistic", "max_depth": 4, "nthread": 1,
                            **params}, xgb.DMatrix(X, y), 15, random_state=0)
    else:
        bst = fit(data, **params)
        template = loaded(bst) if source == "prune_of_loaded" else bst  # inferred eta, lambda
        written = uc.prune(template, X, y, Xv, yv, random_state=0)
    again = _loaded_via_file(written, tmp_path, suffix)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about: the parameters are known
        if source == "hook":  # its trees were grown on part of the rows: said, expected
            warnings.filterwarnings("ignore", message=".*hessian sums differ")
        else:  # scored on the rows that pruned it (said, and kept in the file): the same
            # numbers as the live model's are what this test compares
            warnings.filterwarnings("ignore", message="X_valid holds rows that pruned")
        read = ax.read_model(again)
        report = uc.unbiased_importance(again, X, y, Xv, yv, random_state=0)
    assert read.split_score.l2 == pytest.approx(5.0, rel=1e-3)
    assert read.forest.trees[0].shrinkage == pytest.approx(0.1, rel=1e-3)
    live = uc.unbiased_importance(written, X, y, Xv, yv, random_state=0)
    pd.testing.assert_frame_equal(report.splits, live.splits)
    if source != "hook":  # the hook grew its trees on part of the rows: no host oracle
        tree0 = report.splits[report.splits["tree"] == 0]
        # eta and lambda inferred from a loaded template fit its leaves to about 1e-4
        rtol = 1e-3 if source == "prune_of_loaded" else 1e-4
        np.testing.assert_allclose(tree0["biased_gain"], tree0["host_gain"], rtol=rtol)
    d = xgb.DMatrix(Xv)
    a = uc.prune(written, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True, random_state=0)
    b = uc.prune(again, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True, random_state=0)
    np.testing.assert_array_equal(a.predict(d, output_margin=True),
                                  b.predict(d, output_margin=True))


def test_a_model_written_without_its_parameters_is_not_read_with_the_defaults(data, tmp_path):
    """A model written before the parameters were stored (the mark alone), loaded: its
    defaults say nothing, so eta and lambda are inferred (or pruning refuses), not assumed."""
    import json

    X, y, Xv, yv = data
    written = uc.prune(fit(data, eta=0.1, **{"lambda": 5.0}), X, y, Xv, yv, random_state=0)
    js = json.loads(written.save_raw("json"))
    del js["learner"]["attributes"]["unbiased_criteria_params"]
    again = xgb.Booster(model_file=bytearray(json.dumps(js).encode()))
    assert ax.read_model(again).leaf_params_unknown


@pytest.mark.parametrize("extra", [{"max_delta_step": 0.2}, {"alpha": 5.0}])
def test_continued_training_with_other_penalties_is_said(data, extra):
    """A model keeps only its last stage's parameters: trees grown before max_delta_step or
    alpha was added were scored (and refit) with them, B off by up to 290%, silently. The
    first iteration's gains against the model's own (loss_changes) now say so; for alpha,
    which the check of the trees' weights takes into account, the weights say it first."""
    X, y, Xv, yv = data
    first = fit(data, rounds=3, eta=0.1)
    both = xgb.train({"objective": "binary:logistic", "max_depth": 4, "nthread": 1,
                      "eta": 0.1, **extra}, xgb.DMatrix(X, y), 3, xgb_model=first)
    said = (r"biased_gain misses the model's own gains at \d+ of \d+ splits"
            if "max_delta_step" in extra else "do not reproduce the trees' own weights")
    with pytest.warns(UserWarning, match=said):
        uc.unbiased_importance(both, X, y, Xv, yv, random_state=0)
    with pytest.warns(UserWarning, match=said):
        uc.prune(both, X, y, Xv, yv, random_state=0)
    with warnings.catch_warnings():  # the same parameters throughout: nothing to say
        warnings.simplefilter("error")
        again = xgb.train({"objective": "binary:logistic", "max_depth": 4, "nthread": 1,
                           "eta": 0.1}, xgb.DMatrix(X, y), 3, xgb_model=first)
        uc.unbiased_importance(again, X, y, Xv, yv, random_state=0)
        uc.prune(again, X, y, Xv, yv, random_state=0)


@pytest.mark.parametrize("objective, said", [
    ("binary:logistic", "hessian sums differ from the model's own"),
    ("reg:squarederror", "misses the model's own gains"),  # hessians 1: only the gains tell
])
def test_trees_grown_from_scores_the_model_does_not_keep_are_said(data, objective, said):
    """A DMatrix base_margin, or a slice that leaves out the first trees: the model predicts
    from other scores than its trees were grown at, so its first trees' hessian sums or gains
    (loss_changes) are not those of the replay. The warning names these causes too."""
    X, y, Xv, yv = data
    margin = np.where(X[:, 0] > 0, 1.5, -1.5)
    params = {"objective": objective, "max_depth": 4, "nthread": 1}
    from_margin = xgb.train(params, xgb.DMatrix(X, y, base_margin=margin), 5)
    whole = xgb.train(params, xgb.DMatrix(X, y), 6)
    for model in (from_margin, whole[3:]):
        with pytest.warns(UserWarning, match=rf"(?s){said}.*base_margin or init_score it "
                                             r"does not keep, a slice"):
            uc.unbiased_importance(model, X, y, Xv, yv, random_state=0)
    with warnings.catch_warnings():  # the slice that keeps the first trees: nothing to say
        warnings.simplefilter("error")
        uc.unbiased_importance(whole[:3], X, y, Xv, yv, random_state=0)


def test_a_model_continued_with_another_eta_is_read_tree_by_tree():
    """20 rounds at eta 0.3 continued (xgb_model=) with 20 at eta 0.05: the per-tree reading
    gave up where a small tree had a single usable parent of two leaves, the configured eta
    (0.05) was applied to every tree, and a refit at the model's own scores moved its margins
    by up to 4.05. Such a tree now takes the one rate of the other trees its reading matches.
    Oracle: XGBoost's own margins, which the refit keeps."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 6))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.5 * rng.normal(size=3000) > 1).astype(int)
    params = {"objective": "binary:logistic", "nthread": 1, "max_depth": 4}
    first = xgb.train({**params, "eta": 0.3}, xgb.DMatrix(X[:2000], y[:2000]), 20)
    model = xgb.train({**params, "eta": 0.05}, xgb.DMatrix(X[:2000], y[:2000]), 20,
                      xgb_model=first)
    read = ax.read_model(model)
    etas = np.array([t.shrinkage for t in read.forest.trees])
    np.testing.assert_allclose(etas, np.repeat([0.3, 0.05], 20), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*different learning rates")
        warnings.filterwarnings("ignore", message=".*no usable evidence")
        refit = uc.prune(model, X[:2000], y[:2000], X[2000:], y[2000:], threshold=-np.inf,
                         refit_leaves=True, random_state=0)
    d = xgb.DMatrix(X[2000:])
    np.testing.assert_allclose(refit.predict(d, output_margin=True),
                               model.predict(d, output_margin=True), atol=1e-5)


def test_a_declared_eta_of_zero_is_contradicted_by_the_trees(data):
    """eta=0 declared on a Booster (set_param, the CLI's --param eta=0) was taken as a fit of
    every tree: no warning, and pruning gave every collapsed node a leaf of 0. Like any eta
    the trees' weights contradict, it is said and the trees' own eta is used: the pruned
    model equals the one pruned with the true eta (oracle: the live Booster's prune). A
    model really grown with eta=0 (all leaves 0) is read with it."""
    X, y, Xv, yv = data
    live = fit(data, eta=0.3, rounds=15)
    model = loaded(live)
    model.set_param({"eta": 0})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pruned = uc.prune(model, X, y, Xv, yv, random_state=0, n_jobs=1)
    assert any("eta=0 does not fit the trees' own weights, which say 0.3" in str(w.message)
               for w in caught)
    expected = uc.prune(live, X, y, Xv, yv, random_state=0, n_jobs=1)
    d = xgb.DMatrix(Xv)
    np.testing.assert_allclose(pruned.predict(d, output_margin=True),
                               expected.predict(d, output_margin=True), atol=1e-5)
    zero = fit(data, eta=0.0, rounds=3)
    read = ax.read_model(zero, params={"eta": 0.0, "lambda": 1.0})
    assert not any("do not reproduce" in m for m in read.warnings)
    assert all(t.shrinkage == 0 for t in read.forest.trees)
