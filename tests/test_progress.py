"""``progress=True`` / ``--progress``: tqdm is a core dependency, the bar goes to stderr and
changes no result."""

from __future__ import annotations

import importlib.metadata
import re

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc
from unbiased_criteria.datasets import paper_example


def test_tqdm_is_a_core_dependency():
    requires = importlib.metadata.requires("unbiased-criteria") or []
    core = [r for r in requires if "extra ==" not in r]
    assert any(re.match(r"tqdm\b", r) for r in core), core


def test_importance_with_progress_bar(capsys):
    lgb = pytest.importorskip("lightgbm")
    X, y = paper_example(500, random_state=0)
    Xv, yv = paper_example(500, random_state=1)
    model = lgb.train({"objective": "regression", "num_leaves": 7, "verbose": -1, "seed": 0},
                      lgb.Dataset(X, y), num_boost_round=12)
    quiet = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0).to_frame()
    assert capsys.readouterr().err == ""
    shown = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0,
                                   progress=True).to_frame()
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "12/12" in captured.err and "trees" in captured.err
    pd.testing.assert_frame_equal(shown, quiet)
    assert np.isfinite(shown["unbiased_gain"]).all()
