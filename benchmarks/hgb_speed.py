"""Post-hoc unbiased importance of a scikit-learn HistGradientBoostingRegressor, in units of the
estimator's own ``predict`` over the same rows (it has no ``pred_leaf``).

    python benchmarks/hgb_speed.py [--rows 200000] [--valid-rows 1000000] [--trees 500]
                                   [--repeat 3]
    python benchmarks/hgb_speed.py --rows 20000 --valid-rows 100000 --trees 100  # quick

Model: ``HistGradientBoostingRegressor(max_iter=--trees, max_leaf_nodes=63,
learning_rate=0.1, early_stopping=False, random_state=0)`` on the synthetic regression rows of
``posthoc_speed.py`` (20 standard normal features, y from x0..x4 plus N(0, 1); same seeds).
Timed in this process, interleaved, medians over ``--repeat``:

* ``uc.unbiased_importance(model, X_train, y_train, X_valid, y_valid, random_state=0)``
  (jackknife, ``n_blocks=20``) and the same with ``n_blocks=0``;
* the baseline: ``model.predict`` on ``X_train`` then ``X_valid`` (OpenMP threads as
  scikit-learn sets them; CPU seconds are reported beside wall seconds).

The result goes to ``benchmarks/results/hgb_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import time

from _common import RESULTS, data_set, machine, measure, median


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--valid-rows", type=int, default=1_000_000)
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    import sklearn
    from sklearn.ensemble import HistGradientBoostingRegressor

    import unbiased_criteria as uc

    X_train, y_train = data_set("train", args.rows)
    X_valid, y_valid = data_set("valid", args.valid_rows)
    params = {"max_iter": args.trees, "max_leaf_nodes": 63, "learning_rate": 0.1,
              "early_stopping": False, "random_state": 0}
    t0 = time.perf_counter()
    model = HistGradientBoostingRegressor(**params).fit(X_train, y_train)
    train_seconds = time.perf_counter() - t0

    def predict():
        model.predict(X_train)
        model.predict(X_valid)

    def importance(n_blocks):
        def op():
            report = uc.unbiased_importance(model, X_train, y_train, X_valid, y_valid,
                                            random_state=0, n_blocks=n_blocks)
            return {"n_splits": len(report.splits)}
        return op

    runs: dict[str, list[dict]] = {"predict": [], "importance": [], "importance_noblocks": []}
    for r in range(args.repeat):
        runs["predict"].append(measure(predict))
        runs["importance"].append(measure(importance(20)))
        runs["importance_noblocks"].append(measure(importance(0)))
        print(f"repeat {r + 1}/{args.repeat}: predict {runs['predict'][-1]['seconds']:.2f} s, "
              f"importance {runs['importance'][-1]['seconds']:.2f} s", flush=True)

    def med(kind, field="seconds"):
        return median(x[field] for x in runs[kind])

    base, full, nojack = med("predict"), med("importance"), med("importance_noblocks")
    out = {
        "rows_train": args.rows, "rows_valid": args.valid_rows, "features": X_train.shape[1],
        "trees": args.trees, "repeat": args.repeat,
        "call": "uc.unbiased_importance(model, X_train, y_train, X_valid, y_valid, "
                "random_state=0[, n_blocks=0])",
        "baseline": "model.predict(X_train); model.predict(X_valid), same process, "
                    "interleaved",
        "timing_note": "wall seconds are medians over repeats on a shared machine; "
                       "cpu_seconds (user + system, all threads) do not count waiting",
        "machine": {**machine(), "scikit-learn": sklearn.__version__},
        "model": {"params": params, "train_seconds": round(train_seconds, 2),
                  "n_leaves": int(sum(p.get_n_leaf_nodes() for it in model._predictors
                                      for p in it))},
        "predict_seconds": round(base, 3),
        "importance_seconds": round(full, 3),
        "ratio_to_predict": round(full / base, 2),
        "importance_no_jackknife_seconds": round(nojack, 3),
        "ratio_to_predict_no_jackknife": round(nojack / base, 2),
        "cpu_seconds": {
            "predict": round(med("predict", "cpu_seconds"), 3),
            "importance": round(med("importance", "cpu_seconds"), 3),
            "importance_no_jackknife": round(med("importance_noblocks", "cpu_seconds"), 3),
            "ratio_to_predict": round(med("importance", "cpu_seconds")
                                      / med("predict", "cpu_seconds"), 2),
        },
        "peak_extra_mb": round(med("importance", "peak_extra_bytes") / 2**20, 1),
        "n_splits": runs["importance"][0]["n_splits"],
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "hgb_speed.json"
    path.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: out[k] for k in ("predict_seconds", "importance_seconds",
                                          "ratio_to_predict", "ratio_to_predict_no_jackknife")},
                     ensure_ascii=False))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
