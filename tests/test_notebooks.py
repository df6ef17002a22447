"""The comparison notebooks run top to bottom in small mode, offline, writing no files.

Each notebook is executed with nbclient in a fresh kernel with ``UC_NOTEBOOK_SIZE=small``
(about 30 s each on two cores). The committed copies must carry the outputs of a full-size run,
and the README's figures (``notebooks/figures/``) must be their headline figures;
``python tests/test_notebooks.py`` rewrites those from the committed outputs.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="needs the `notebooks` extra")
nbclient = pytest.importorskip("nbclient", reason="needs the `notebooks` extra")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
FIGURES = NOTEBOOKS / "figures"
NAMES = [
    "01_bias_of_gain_importance.ipynb",
    "02_null_and_cardinality.ipynb",
    "03_feature_selection.ipynb",
    "04_pruned_training.ipynb",
]


def _files(root: Path) -> set[str]:
    skip = {".git", ".venv", ".pytest_cache", ".ruff_cache"}
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        out.update(os.path.join(dirpath, f) for f in filenames)
    return out


def _outputs(nb, kind: str) -> list:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if o.get("output_type") == kind or kind in o.get("data", {})]


def test_notebook_list_is_complete():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == NAMES


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """One temporary home for every cache the kernel would write (shared by the notebooks)."""
    return tmp_path_factory.mktemp("notebook-caches")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_in_small_mode(name, scratch, monkeypatch):
    monkeypatch.setenv("UC_NOTEBOOK_SIZE", "small")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # no __pycache__ in notebooks/
    for var, sub in (("MPLCONFIGDIR", "matplotlib"), ("NUMBA_CACHE_DIR", "numba"),
                     ("IPYTHONDIR", "ipython"), ("JUPYTER_RUNTIME_DIR", "jupyter-runtime")):
        monkeypatch.setenv(var, str(scratch / sub))
    before = _files(ROOT)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    assert not _outputs(nb, "error")
    assert _outputs(nb, "image/png"), "the notebook drew no figure"
    text = "".join(o.get("text", "") for o in _outputs(nb, "stream"))
    assert "size=small" in text
    assert _files(ROOT) == before, "the notebook wrote files into the repository"


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_carries_full_run(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "not executed top to bottom"
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    assert not _outputs(nb, "error")
    assert _outputs(nb, "image/png")
    text = "".join(o.get("text", "") for o in _outputs(nb, "stream"))
    assert "size=full" in text
    assert (NOTEBOOKS / name).stat().st_size < 2_000_000


def headline_png(nb) -> bytes:
    """The figure of the notebook's one code cell tagged ``headline``."""
    cells = [c for c in nb.cells if "headline" in c.metadata.get("tags", [])]
    assert len(cells) == 1, "exactly one cell must be tagged 'headline'"
    pngs = [o["data"]["image/png"] for o in cells[0].get("outputs", [])
            if "image/png" in o.get("data", {})]
    assert pngs, "the headline cell drew no figure"
    return base64.b64decode(pngs[0])


@pytest.mark.parametrize("name", NAMES)
def test_readme_figure_is_the_headline_figure(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert (FIGURES / f"{Path(name).stem}.png").read_bytes() == headline_png(nb)


if __name__ == "__main__":
    FIGURES.mkdir(exist_ok=True)
    for name in NAMES:
        out = FIGURES / f"{Path(name).stem}.png"
        out.write_bytes(headline_png(nbformat.read(NOTEBOOKS / name, as_version=4)))
        print("wrote", out)
