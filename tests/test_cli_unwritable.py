"""An output the command cannot write is refused before any work, like a missing folder.

A folder without write permission was found only after the work: ``prune`` pruned, then
exit 2; ``importance --plot`` printed the whole table, then exit 2; ``select`` cross-fitted
and printed "kept 0 of 3", then exit 2. The commands run in a subprocess as a user the
folder's mode applies to (root without CAP_DAC_OVERRIDE), and the operating system itself
must refuse the write there (else the test says nothing and is skipped).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

#: root ignores a folder's mode: drop the capabilities that let it
DROP = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"] \
    if os.geteuid() == 0 else []


def as_user(args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([*DROP, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def locked(tmp_path):
    """A folder the commands' user cannot create a file in, and a read-only named pipe."""
    if DROP and shutil.which("setpriv") is None:
        pytest.skip("root, and no setpriv to run as a user a folder's mode applies to")
    folder = tmp_path / "locked"
    folder.mkdir()
    os.chmod(folder, 0o555)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o444)
    probe = as_user(["sh", "-c", "touch locked/x"], tmp_path)
    if probe.returncode == 0 or "Permission denied" not in probe.stderr:
        pytest.skip(f"the folder's mode does not apply here: {probe.stderr.strip()}")
    yield tmp_path
    os.chmod(folder, 0o755)


CLI = [sys.executable, "-m", "unbiased_criteria"]
MODEL = ["--train", "missing-train.csv", "--valid", "missing-valid.csv", "--label", "y"]


@pytest.mark.parametrize("args, option, path", [
    (["prune", "missing.txt", *MODEL, "--output", "locked/p.txt"], "--output", "locked/p.txt"),
    (["importance", "missing.txt", *MODEL, "--output", "locked/t.csv"], "--output",
     "locked/t.csv"),
    (["importance", "missing.txt", *MODEL, "--plot", "locked/i.png"], "--plot",
     "locked/i.png"),
    (["importance", "missing.txt", *MODEL, "--splits", "--output", "locked/s.csv"],
     "--output", "locked/s.csv"),
    (["select", "missing.csv", "--label", "y", "--host", "lightgbm", "--output",
      "locked/sel.csv"], "--output", "locked/sel.csv"),
    (["prune", "missing.txt", *MODEL, "--output", "fifo"], "--output", "fifo"),
    (["demo", "--plot", "locked/d.png"], "--plot", "locked/d"),
])
def test_unwritable_output_is_refused_before_any_work(locked, args, option, path):
    """The inputs do not even exist: the output is what the command refuses first."""
    if args[0] == "select":
        pytest.importorskip("sklearn")
    if args[0] == "demo":
        pytest.importorskip("matplotlib")
        pytest.importorskip("lightgbm")
    if "--plot" in args:
        pytest.importorskip("matplotlib")
    result = as_user([*CLI, *args], locked)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"unbiased-criteria: error: {option} {path}")
    assert "cannot be written" in lines[0]
    reason = "no write permission" if path == "fifo" else \
        "its folder 'locked' takes no new file (no write permission)"
    assert reason in lines[0]


def test_a_writable_folder_and_file_still_pass(tmp_path):
    """A read-only file in a writable folder is replaced whole, as before (the temporary
    file is renamed over it): not refused."""
    from unbiased_criteria.cli.output import check_target

    check_target(str(tmp_path / "new.csv"), "--output")
    existing = tmp_path / "old.csv"
    existing.write_text("x\n")
    os.chmod(existing, 0o444)
    check_target(str(existing), "--output")
