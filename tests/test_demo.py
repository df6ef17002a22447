"""``unbiased-criteria demo``: every claim it prints is measured over 100 seeds and holds in at
least 95% of them (``benchmarks/demo_claims.py``; 99% as recorded); here the same check on a
few seeds, the recorded results, and one end-to-end run under 10 s of CPU."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from unbiased_criteria.demo import (
    CLAIMS,
    DEMO_SETTINGS,
    MEASURED_SHARE,
    UNPRINTED_CLAIMS,
    demo_run,
)

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "demo_claims.json"
HOSTS = ["lightgbm", "xgboost"]


def test_recorded_benchmark_backs_every_claim():
    out = json.loads(RESULTS.read_text())
    assert out["settings"] == DEMO_SETTINGS
    assert out["claims"] == CLAIMS
    for host in HOSTS:
        res = out["hosts"][host]
        assert res["seeds"] >= 100
        assert set(res["claim_share"]) == set(CLAIMS) | set(UNPRINTED_CLAIMS)
        for key in CLAIMS:
            assert res["claim_share"][key] >= 0.95, (host, key, res["claim_share"][key])
    # the share the demo quotes is the recorded smallest
    assert MEASURED_SHARE == min(out["hosts"][host]["claim_share"][key]
                                 for host in HOSTS for key in CLAIMS)


@pytest.mark.parametrize("host", HOSTS)
def test_claims_on_a_few_seeds_match_the_recorded_benchmark(host):
    """The benchmark's code path, rerun on 3 seeds: the same claims hold and fail."""
    pytest.importorskip(host)
    failed = json.loads(RESULTS.read_text())["hosts"][host]["claim_failed_seeds"]
    for seed in (0, 1, 2):
        run = demo_run(host, seed)
        want = {key: seed not in seeds for key, seeds in failed.items()}
        assert run.claims == want, seed
        # the table is the report's numbers
        frame = run.report.to_frame()
        assert list(run.table.index) == ["X1", "X2", "X3"]
        assert run.table["unbiased gain"].tolist() == frame["unbiased_gain"].tolist()
        assert abs(run.table["host gain share"].sum() - 1) < 1e-12
        if run.claims["unbiased_top_X1"]:
            assert run.table.loc["X1", "unbiased rank"] == 1


def test_demo_end_to_end(tmp_path):
    for host in HOSTS:
        pytest.importorskip(host)
    pytest.importorskip("matplotlib")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run([sys.executable, "-m", "unbiased_criteria.cli", "demo", "--plot",
                          "imp.png"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert res.returncode == 0, res.stderr
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 10, cpu  # CPU, not wall time: the test machine is shared
    out = res.stdout
    for host in HOSTS:
        assert f"{host}:" in out
        for text in CLAIMS.values():
            assert f"[yes] {text.format(host=host)}" in out
        for text in UNPRINTED_CLAIMS.values():
            assert text.format(host=host) not in out
        path = tmp_path / f"imp_{host}.png"
        assert path.read_bytes().startswith(b"\x89PNG")
        assert f"wrote plot to imp_{host}.png" in res.stderr
    assert "held in at least 99% of 100 seeds" in out
    assert "raises the held-out loss" in out


def test_demo_with_too_few_rows_for_a_split_says_no_instead_of_failing():
    """`demo --rows 30`: LightGBM makes no split on 30 rows (min_data_in_leaf 20), and the
    demo stopped with select()'s "nothing to test" error; its claims are now false."""
    pytest.importorskip("lightgbm")
    run = demo_run("lightgbm", rows=30)
    assert run.claims["unbiased_X1_selected"] is False
    assert not run.claims["unbiased_X1_positive"]
    # no split, no gain: every share 0, not 0/0
    assert run.table["host gain share"].tolist() == [0.0, 0.0, 0.0]
