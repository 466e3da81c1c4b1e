"""A compact copy of a sweep keeps what the findings and notebooks read, opens with
open_sweep like the full sweep (the same aggregate and, for the runs it kept, the same
per-run tables), names what it did not keep, and refuses a sweep still running."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from sim.presentation.compact import main, write_compact
from sim.sweep.folder import prepare_results_folder
from sim.presentation.plots import open_sweep

COLUMNS = ["workload.priority.tiers", "scheduler"]


def sweep_folder(root, complete=True):
    """A finished two-cell, three-seed sweep as ``llumsim sweep`` writes it (plus a failed run)."""
    rows = [
        {"workload.priority.tiers": k, "scheduler": "llumnix", "seed": seed, "config_hash": f"h{k}{seed}",
         "status": "ok", "latency.prefill_latency.p99": 1.0 + k + seed, "latency.prefill_latency.p90": 9.0,
         "latency_by_tier.0.e2e_latency.mean": 20.0 + seed, "cost.cost_per_latency": 0.1 * k,
         "throughput.tokens_per_second": 5.0}
        for k in (1, 4) for seed in range(3)
    ]
    rows.append({"workload.priority.tiers": 4, "scheduler": "llumnix", "seed": 3, "config_hash": "h43",
                 "status": "failed", "error": "watchdog: stalled"})
    root.mkdir(parents=True)
    full = pd.DataFrame(rows)
    full.to_parquet(root / "index.parquet", index=False)
    from sim.sweep.stats import aggregate
    from sim.sweep.index import ok_rows
    aggregate(ok_rows(full)).to_parquet(root / "aggregate.parquet", index=False)
    meta = {"name": "k_study", "source": "/somewhere/experiments/grids/k_study.yaml", "description": "d",
            "columns": COLUMNS, "seeds": [0, 1, 2, 3], "tables": ["migrations"], "runs": 8,
            "runs_done": 7 if complete else 5, "complete": complete}
    (root / "sweep.json").write_text(json.dumps(meta))
    for row in rows[:-1]:  # each finished run's migrations: k rows (none for seed 0 at K = 1)
        (root / "runs" / row["config_hash"]).mkdir(parents=True)
        count = 0 if row["seed"] == 0 and row["workload.priority.tiers"] == 1 else row["workload.priority.tiers"]
        pd.DataFrame({"request": range(count), "downtime": [0.02 * row["seed"]] * count}).to_parquet(
            root / "runs" / row["config_hash"] / "migrations.parquet", index=False)
    return root


def test_the_compact_copy_opens_like_the_sweep_with_only_the_columns_read(tmp_path):
    source = sweep_folder(tmp_path / "full" / "k_study")
    write_compact(source, tmp_path / "committed" / "k_study")
    full, compact = open_sweep("k_study", tmp_path / "full"), open_sweep("k_study", tmp_path / "committed")
    assert list(compact.index.columns) == [*COLUMNS, "seed", "config_hash", "status",
                                           "latency.prefill_latency.p99", "latency_by_tier.0.e2e_latency.mean",
                                           "cost.cost_per_latency"]
    assert len(compact.index) == 6 and (compact.index["status"] == "ok").all()  # the failed run stays behind
    kept = [c for c in compact.aggregate.columns if c in full.aggregate.columns]
    pd.testing.assert_frame_equal(compact.aggregate[kept], full.aggregate[kept])
    meta = compact.meta
    assert meta["source"] == "experiments/grids/k_study.yaml" and meta["tables"] == []
    assert meta["compact"] == {"runs": 6, "failed": 1, "metrics": 3}
    with pytest.raises(FileNotFoundError, match="table 'migrations' not kept by this compact copy"):
        compact.table("migrations")


def test_kept_tables_read_like_the_full_sweeps_for_their_runs_and_name_the_runs_left_behind(tmp_path):
    source = sweep_folder(tmp_path / "full" / "k_study")
    write_compact(source, tmp_path / "committed" / "k_study", metrics=[r"throughput\..+"],
                  tables={"migrations": []}, where={"seed": [0, 1]})
    full, compact = open_sweep("k_study", tmp_path / "full"), open_sweep("k_study", tmp_path / "committed")
    assert "throughput.tokens_per_second" in compact.index  # the study's own pattern
    assert compact.meta["tables"] == ["migrations"]
    assert compact.meta["compact"]["tables"] == {"where": {"seed": [0, 1]}, "runs": 4, "columns": {}}
    for where in ({"seed": 0}, {"seed": [0, 1], "workload.priority.tiers": 4}, {"seed": 0, "workload.priority.tiers": 1}):
        pd.testing.assert_frame_equal(compact.table("migrations", where), full.table("migrations", where))
    assert len(compact.table("migrations", {"seed": 0})) == 4  # K = 1's empty table adds no rows
    with pytest.raises(FileNotFoundError, match=r"keeps the runs where \{'seed': \[0, 1\]\} only; 2 selected"):
        compact.table("migrations", {"seed": [1, 2]})
    with pytest.raises(FileNotFoundError, match="table 'cluster' not kept"):
        compact.table("cluster", {"seed": 0})


def test_a_table_the_sweep_did_not_keep_or_a_where_on_no_column_is_refused(tmp_path, capsys):
    source = sweep_folder(tmp_path / "k_study")
    assert main([str(source), str(tmp_path / "out"), "--table", "cluster"]) == 2
    assert "table(s) cluster not kept by the sweep" in capsys.readouterr().err
    assert main([str(source), str(tmp_path / "out"), "--table", "migrations", "--where", "sed=0"]) == 2
    assert "--where sed: not a column of the index" in capsys.readouterr().err
    assert main([str(source), str(tmp_path / "out"), "--table", "migrations:downtime,length"]) == 2
    assert "--table migrations: no column(s) length (columns: request, downtime)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_copy_can_replace_the_sweeps_own_index_once(tmp_path, capsys):
    source = sweep_folder(tmp_path / "k_study")
    assert main([str(source), str(source), "--table", "migrations", "--where", "seed=0"]) == 0
    assert "tables/migrations.parquet" in capsys.readouterr().out
    assert len(open_sweep("k_study", tmp_path).table("migrations", {"seed": 0})) == 4  # run folders still there
    kept = pd.read_parquet(source / "tables" / "migrations.parquet")
    assert list(kept.columns) == ["config_hash", "request", "downtime"] and len(kept) == 4
    assert main([str(source), str(source)]) == 2  # a second pass would compact the compact copy
    assert "already a compact copy" in capsys.readouterr().err
    assert prepare_results_folder(source) == source.resolve()  # the next sweep may rebuild it there


def test_a_sweep_still_running_is_not_copied(tmp_path, capsys):
    source = sweep_folder(tmp_path / "k_study", complete=False)
    assert main([str(source), str(tmp_path / "out")]) == 2
    assert "not complete (5/8 runs)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
