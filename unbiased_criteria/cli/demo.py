"""``unbiased-criteria demo``: prints :func:`unbiased_criteria.demo.demo_run` per installed host,
or the host-free :func:`unbiased_criteria.demo.noise_split_demo`."""

from __future__ import annotations

from pathlib import Path

from .. import model_files
from ..demo import CLAIMS, DEMO_HOSTS, DEMO_SETTINGS, MEASURED_SHARE, demo_run, noise_split_demo
from ..errors import InputError
from .output import check_plot_target, save_plot

__all__ = ["cmd_demo"]


def _demo_plot_path(path: str, host: str, n_hosts: int) -> str:
    if n_hosts == 1:
        return path
    p = Path(path)
    return str(p.with_name(f"{p.stem}_{host}{p.suffix}"))


def cmd_demo(args) -> int:
    """``unbiased-criteria demo``: the paper's example on generated data."""
    hosts = [h for h in model_files.installed_hosts() if h in DEMO_HOSTS]
    # each option applies to one of the two demos: given to the other it is an error, not
    # ignored (--core --plot wrote nothing and exited 0)
    if args.core and args.plot is not None:
        raise InputError(f"--plot {args.plot}: the core demo (--core) draws no plot; leave "
                         "out --core for the hosts' demo and its plot")
    if not args.core and not hosts and args.plot is not None:
        raise InputError(f"--plot {args.plot}: neither lightgbm nor xgboost is installed, "
                         "and the core demo shown instead draws no plot (pip install "
                         "lightgbm xgboost)")
    if not args.core and hosts and args.replications is not None:
        raise InputError(f"--replications {args.replications}: applies to the core demo "
                         "only; add --core")
    if args.core or not hosts:
        if not args.core:
            print("(neither lightgbm nor xgboost is installed: showing the core demo; "
                  "pip install lightgbm xgboost for the real one)\n")
        rows = 2000 if args.rows is None else args.rows
        replications = 2000 if args.replications is None else args.replications
        # computed before anything is printed: too few rows is one error, no half a report
        table = noise_split_demo(rows, replications, args.seed)
        print(f"The best of 19 thresholds on a 20-level noise feature, {rows} training "
              f"and {rows} held-out rows, {replications} replications:\n")
        print(table.round(4).to_string())
        return 0
    for host in hosts if args.plot else ():  # before any work
        check_plot_target(_demo_plot_path(args.plot, host, len(hosts)))
    s = DEMO_SETTINGS
    rows = s["rows"] if args.rows is None else args.rows
    print("The paper's example: y = 0.1*X1 + N(0,1); X1 binary, X2 six categories, X3 N(0,1).")
    print(f"Only X1 carries information. {s['trees']} trees (LightGBM {s['leaves']} leaves, "
          f"XGBoost depth {s['depth']}), learning rate {s['learning_rate']},\n{rows} training "
          f"and {rows} held-out rows, seed {args.seed}.\n")
    for host in hosts:
        run = demo_run(host, seed=args.seed, rows=rows)
        table = run.table.round({"host gain share": 3, "unbiased gain": 1, "± SE": 1})
        print(f"{host}:\n{table.to_string()}")
        for key, text in CLAIMS.items():
            mark = "yes" if run.claims[key] else "NO "
            print(f"  [{mark}] {text.format(host=host)}")
        print()
        if args.plot:
            save_plot(run.report, _demo_plot_path(args.plot, host, len(hosts)),
                       f"{host}: the paper's example")
    print("Why boosted totals of noise features are negative, not 0: once earlier trees have "
          "fit a noise\nfeature, a further split on it raises the held-out loss, which is what "
          "U measures.")
    measured = "" if rows == s["rows"] else f" at {s['rows']} rows"
    print(f"Each claim above held in at least {MEASURED_SHARE:.0%} of 100 seeds{measured} "
          "(benchmarks/demo_claims.py).")
    return 0
