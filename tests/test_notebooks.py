"""The notebooks in notebooks/ run top to bottom (their own assertions check real values) and are
committed with outputs stripped."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = ["mla_vs_gqa.ipynb", "calibrate_rtx_pro_6000.ipynb", "validate_silicon.ipynb"]


def _code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


def test_expected_notebooks_exist() -> None:
    assert set(NAMES) <= {p.name for p in NOTEBOOKS.glob("*.ipynb")}


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    cells = _code_cells(nb)
    assert cells, f"{path.name} has no code cells"
    for cell in cells:
        assert cell.outputs == [], f"{path.name}: a code cell has outputs (strip them before committing)"
        assert cell.execution_count is None, f"{path.name}: a code cell has an execution count"


@pytest.mark.notebook
@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name: str) -> None:
    """Run with cwd = the repo root (where `research` imports from, as `scripts` do); any failed assertion in a
    cell fails the test."""
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS.parent)}})
    client.execute()
    errors = [o for c in _code_cells(nb) for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert all(c.execution_count is not None for c in _code_cells(nb))
    # every figure a cell shows is rendered inline (a non-interactive backend would show nothing)
    for cell in _code_cells(nb):
        shown = cell.source.count("plt.show()")
        images = sum(1 for o in cell.outputs if o.output_type == "display_data" and "image/png" in o.get("data", {}))
        assert images >= shown, f"{name}: a cell shows {shown} figure(s) but {images} rendered"
    assert sum(c.source.count("plt.show()") for c in _code_cells(nb)) >= 2
