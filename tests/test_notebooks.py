"""Every notebook executes against smoke sweeps made here, so none can rot; and they are
stored without outputs (they are code, not results)."""

from __future__ import annotations

import nbformat
import pytest

from tests.sweep_support import REPO, execute_notebook, images_and_errors

NOTEBOOKS = REPO / "notebooks"
READS = {
    "k_study": ["k_study_smoke", "k_autoscale_smoke"],
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
def test_notebook_executes_against_a_smoke_sweep(name, smoke_results):
    for grid in READS[name]:
        smoke_results(grid)
    images, errors = images_and_errors(execute_notebook(name, smoke_results.root, smoke=True))
    assert images >= 1 and not errors, errors
