"""Every notebook executes against smoke sweeps made here, pointed at them through the
variables of its parameters cell as a user points it at their own sweep, so none can rot;
and they are stored without outputs (they are code, not results)."""

from __future__ import annotations

import re

import nbformat
import pytest

from tests.sweep_support import REPO, execute_notebook, images_and_errors, stdout

NOTEBOOKS = REPO / "notebooks"
# per notebook: the variables of its parameters cell and the smoke grid each is pointed at
READS = {
    "k_study": {"STUDY": "k_study_smoke", "AUTOSCALE": "k_autoscale_smoke", "KMAP": "k_contract_smoke"},
    "paper": {"STUDY": "paper_smoke"},
    "migration": {"STUDY": "paper_smoke"},
    "stress": {"STUDY": "stress_smoke"},
}
NAMED_STUDY = re.compile(r"open_(sweep|capacity)\(\s*['\"]")  # a study named in a call, not a variable


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
def test_a_notebook_takes_its_studies_from_its_parameters_cell_only(name):
    cells = [c for c in nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells if c.cell_type == "code"]
    assert cells[0].metadata.get("tags") == ["parameters"]
    default = re.search(r'^STUDY = "(\w+)"', cells[0].source, re.MULTILINE)
    assert default and (REPO / "results" / default.group(1) / "sweep.json").is_file()  # a committed study
    assert not [c.source for c in cells if NAMED_STUDY.search(c.source)]


@pytest.mark.parametrize("name", sorted(READS))
def test_notebook_executes_against_a_smoke_sweep(name, smoke_results):
    studies = {variable: smoke_results(grid) for variable, grid in READS[name].items()}
    # the results folder holds only the smoke sweeps: a notebook opening its committed
    # study by name instead of through STUDY finds nothing there
    notebook = execute_notebook(name, smoke_results.root, studies)
    images, errors = images_and_errors(notebook)
    assert images >= 1 and not errors, errors
    assert f"{studies['STUDY']} - {READS[name]['STUDY']} -" in stdout(notebook)  # drew the sweep it was given
