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


def test_the_code_fingerprint_follows_sources_not_a_build_of_the_compiled_engine(tmp_path):
    from sim.sweep.store import package_fingerprint

    package = tmp_path / "sim"
    (package / "instance").mkdir(parents=True)
    source = package / "instance" / "batching.py"
    source.write_text("STEP = 1\n")
    (package / "data.csv").write_text("a,b\n1,2\n")
    before = package_fingerprint(package, "0.0.26")
    # a build adds extension modules and its record next to the sources: same code
    (package / "instance" / "batching.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF1")
    (package / "native.json").write_text('{"python": "cpython-311"}')
    assert package_fingerprint(package, "0.0.26") == before
    # a changed source, shipped data file or Vidur version is other code
    source.write_text("STEP = 2\n")
    changed = package_fingerprint(package, "0.0.26")
    assert changed != before
    (package / "data.csv").write_text("a,b\n1,3\n")
    assert package_fingerprint(package, "0.0.26") != changed
    assert package_fingerprint(package, "0.0.27") != package_fingerprint(package, "0.0.26")
