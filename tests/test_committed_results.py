"""The studies committed under results/ open in a fresh clone — only the files a clone
holds, copied into an empty folder — with the per-run tables they kept, and every notebook
executes against them."""

from __future__ import annotations

import pandas as pd
import pytest

from sim.presentation.plots import open_sweep
from tests.sweep_support import REPO, execute_notebook, images_and_errors, shipped_results

# the full studies committed as compact indexes, and the notebooks that open them
COMMITTED = {"k_study": ["k_study"], "paper": ["paper", "migration"], "stress": ["stress"]}
MAX_BYTES = 5_000_000  # "a few MB at most": what a clone carries per study


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    results = tmp_path_factory.mktemp("clone_results")
    return results, shipped_results(results)


def test_every_notebook_opens_a_committed_study():
    notebooks = {path.stem for path in (REPO / "notebooks").glob("*.ipynb")}
    assert notebooks == {name for names in COMMITTED.values() for name in names}


def test_every_committed_study_opens_in_a_fresh_clone_with_all_its_seeds(clone):
    results, studies = clone
    assert set(COMMITTED) <= set(studies)
    for study in studies:
        sweep = open_sweep(study, results)
        assert sweep.meta["complete"] and len(sweep.index) == sweep.meta["compact"]["runs"]
        assert sorted(sweep.index["seed"].unique()) == sweep.meta["seeds"]
        assert len(sweep.aggregate) == len(sweep.index.groupby(sweep.columns, dropna=False))
        assert sum(f.stat().st_size for f in (results / study).rglob("*") if f.is_file()) < MAX_BYTES
    assert len(open_sweep("k_study", results).meta["seeds"]) >= 10
    assert len(open_sweep("k_autoscale", results).meta["seeds"]) >= 10
    assert len(open_sweep("slo_floor", results).meta["seeds"]) >= 10
    assert len(open_sweep("paper", results).meta["seeds"]) >= 5


def test_no_committed_run_of_the_fixed_engine_showed_an_idle_instance_busy(clone):
    """INV-4 idle-view on every run the idle-instance fix re-made: the summary's stale idle
    seconds are 0 — except in the paper grid's part run with the artifact's reporting, whose
    emptied instances keep their last busy snapshot (so the figure can come out otherwise)."""
    results, _ = clone
    column = "scheduler_view.stale_idle_instance_seconds"
    for study in ("paper", "k_autoscale", "slo_floor", "stress"):
        index = open_sweep(study, results).index
        part = index["part"] if "part" in index else pd.Series("", index=index.index)
        artifact = part == "diagnostic-priorities-artifact-reports"
        assert (index.loc[~artifact, column] == 0).all(), study
        if study == "paper":
            assert (index.loc[artifact, column] > 0).all() and artifact.sum() == 40


def test_the_committed_capacity_answer_has_ten_seeds_for_every_search():
    import json

    meta = json.loads((REPO / "results" / "k_capacity" / "capacity_grid.json").read_text())
    searches = pd.read_parquet(REPO / "results" / "k_capacity" / "searches.parquet")
    assert len(meta["seeds"]) >= 10
    assert (searches.groupby(["workload.priority.tiers", "workload.priority.sampler", "scheduler"]).size() == len(meta["seeds"])).all()


@pytest.mark.parametrize("study, table", [("paper", "migrations"), ("stress", "cluster")])
def test_the_kept_tables_hold_every_kept_run_and_refuse_the_others(study, table, clone):
    results, _ = clone
    sweep = open_sweep(study, results)
    where = sweep.meta["compact"]["tables"]["where"]
    rows = sweep.table(table, where)
    assert rows.groupby([*sweep.columns, "seed"], dropna=False).ngroups == sweep.meta["compact"]["tables"]["runs"] > 0
    with pytest.raises(FileNotFoundError, match="selected run"):
        sweep.table(table, {"seed": max(sweep.meta["seeds"])})


@pytest.mark.parametrize("name", sorted({n for names in COMMITTED.values() for n in names}))
def test_notebook_executes_against_the_committed_results(name, clone):
    results, _ = clone
    images, errors = images_and_errors(execute_notebook(name, results))  # STUDY's default
    assert images >= 4 and not errors, errors
