"""Suite-wide settings: in CI (environment variable ``CI`` set), a skipped test fails the run.

A missing extra (lightgbm, xgboost, scikit-learn, ...) turns its tests into skips through
``pytest.importorskip``; locally that is a convenience, in CI it would be a green run that
tested nothing. Tests that must not run on some host version are deselected explicitly, not
skipped.
"""

from __future__ import annotations

import os

import pytest


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _in_ci() or exitstatus != pytest.ExitCode.OK:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    if _in_ci() and skipped:
        terminalreporter.write_line(
            f"CI: {len(skipped)} test(s) skipped; a skip fails the run in CI "
            "(install the missing extra or deselect the test explicitly)", red=True,
        )
