"""The studies committed under results/ open in a fresh clone — only the files a clone
holds, copied into an empty folder — and the notebook that reads each executes against it."""

from __future__ import annotations

import pytest

from sim.sweep.plots import open_sweep
from tests.sweep_support import execute_notebook, images_and_errors, shipped_results

# the full studies committed as compact indexes, and the notebooks that open them
COMMITTED = {"k_study": ["k_study"]}
MAX_BYTES = 5_000_000  # "a few MB at most": what a clone carries per study


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    results = tmp_path_factory.mktemp("clone_results")
    return results, shipped_results(results)


def test_every_committed_study_opens_in_a_fresh_clone_with_all_its_seeds(clone):
    results, studies = clone
    assert set(COMMITTED) <= set(studies)
    for study in studies:
        sweep = open_sweep(study, results)
        assert sweep.meta["complete"] and len(sweep.index) == sweep.meta["compact"]["runs"]
        assert sorted(sweep.index["seed"].unique()) == sweep.meta["seeds"]
        assert len(sweep.aggregate) == len(sweep.index.groupby(sweep.columns, dropna=False))
        assert sum(f.stat().st_size for f in (results / study).iterdir()) < MAX_BYTES
    assert len(open_sweep("k_study", results).meta["seeds"]) >= 10


@pytest.mark.parametrize("name", sorted({n for names in COMMITTED.values() for n in names}))
def test_notebook_executes_against_the_committed_results(name, clone):
    results, _ = clone
    images, errors = images_and_errors(execute_notebook(name, results, smoke=False))
    assert images >= 4 and not errors, errors
