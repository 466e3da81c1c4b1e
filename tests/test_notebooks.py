"""Every notebook executes against smoke sweeps made here, so none can rot; and they are
stored without outputs (they are code, not results)."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

from sim.sweep.plots import RESULTS_ENV, SMOKE_ENV
from tests.sweep_support import REPO

NOTEBOOKS = REPO / "notebooks"
READS = {
    "k_study": ["k_study_smoke"],
    "paper": ["paper_smoke"],
    "migration": ["paper_smoke"],
    "stress": ["stress_smoke"],
}


def test_every_notebook_is_tested():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(READS)


@pytest.mark.parametrize("name", sorted(READS))
def test_notebook_is_stored_without_outputs(name):
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.parametrize("name", sorted(READS))
def test_notebook_executes_against_a_smoke_sweep(name, smoke_results, monkeypatch):
    for grid in READS[name]:
        smoke_results(grid)
    monkeypatch.setenv(RESULTS_ENV, str(smoke_results.root))
    monkeypatch.setenv(SMOKE_ENV, "1")
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}
    )
    client.execute()
    images = sum(
        "image/png" in output.get("data", {})
        for cell in notebook.cells
        for output in cell.get("outputs", [])
    )
    errors = [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.get("name") == "stderr"
    ]
    assert images >= 1 and not errors, errors
