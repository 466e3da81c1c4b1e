"""The store writes a run whole or not at all, and the index flattens summaries into stable,
reproducible columns."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pandas as pd

from sim.config import load_config
from sim.sweep.index import _arrow_safe, flatten
from sim.files import remove_leftovers
from sim.sweep.store import RunStore
from tests.sweep_support import fake_summary


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_run_folder_appears_whole_and_leftovers_of_killed_writers_are_removed(tmp_path):
    store = RunStore(tmp_path)
    config = load_config(base={})
    leftover = tmp_path / f".tmp-{dead_pid()}-abc"
    leftover.mkdir()
    (leftover / "summary.json").write_text("{half")
    assert not store.is_done("abc")
    assert store.clean() == 1 and not leftover.exists()
    store.write("abc", config, {**fake_summary(config, 1.0), "latency_extra": math.nan})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc"]
    assert store.summary("abc")["latency_extra"] is None  # strict JSON: NaN is written as null
    assert store.is_done("abc") and not store.is_done("abc", ["migrations"])
    sweep_dir = tmp_path / "abc"  # any folder: here the run folder itself
    half_index = sweep_dir / f".tmp-{dead_pid()}-index.parquet"
    half_index.write_text("half")
    assert remove_leftovers(sweep_dir) == 1 and not half_index.exists()


def test_a_live_writers_temporary_folder_is_left_alone(tmp_path):
    store = RunStore(tmp_path)
    busy = tmp_path / f".tmp-{os.getppid()}-abc"
    busy.mkdir()
    assert store.clean() == 0 and busy.exists()


def test_asking_for_more_tables_replaces_the_run_folder_in_one_swap(tmp_path):
    store = RunStore(tmp_path)
    config = load_config(base={})
    store.write("k", config, fake_summary(config, 1.0))
    store.write(
        "k",
        config,
        {**fake_summary(config, 2.0), "tables": {"migrations": pd.DataFrame({"a": [1]})}},
    )
    assert (
        store.is_done("k", ["migrations"])
        and store.summary("k")["latency"]["prefill_latency"]["p99"] == 2.0
    )
    assert store.table("k", "migrations")["a"].tolist() == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k"]


def test_flatten_keeps_metrics_and_drops_what_is_not_a_function_of_the_config():
    summary = {
        "name": "run",
        "config_hash": "x",
        "scheduler": "llumnix",
        "config": {"seed": 0},
        "latency_by_tier": {"0": {"e2e_latency": {"p99": 1.5}}},
        "faults": {"faults": [{"kind": "scheduler_down", "window": [1, 2]}]},
        "migration": {"migrating_fraction": {"mean": 0.1, "per_instance": {"0": 0.1}}},
        "simulation": {"wall_seconds": 3.2, "requests_per_wall_second": 9.0, "batches": 7},
    }
    assert flatten(summary) == {
        "scheduler.name": "llumnix",
        "latency_by_tier.0.e2e_latency.p99": 1.5,
        "faults.faults.0.kind": "scheduler_down",
        "faults.faults.0.window.0": 1,
        "faults.faults.0.window.1": 2,
        "migration.migrating_fraction.mean": 0.1,
        "simulation.batches": 7,
    }


def test_a_coordinate_mixing_numbers_and_text_becomes_text_for_parquet(tmp_path):
    frame = _arrow_safe(pd.DataFrame({"x": [1.5, "a", None], "y": [1, 2.5, None]}))
    frame.to_parquet(tmp_path / "t.parquet")
    column = pd.read_parquet(tmp_path / "t.parquet")["x"]
    assert column[:2].tolist() == ["1.5", "a"] and column.isna()[2]
