"""The held-out bad inputs and faults of the features added after the first list (pools,
priority modes, capacity and its reports, compact copies, traces that replay their own
clock, damaged stores, two sweeps on one folder): each ends with exit code 2 and one line
naming the key or file, or with a documented answer; none runs unbounded, raises a
traceback, or writes into a folder llumsim did not make. (Config values of these features:
``BAD_VALUES`` in ``test_bad_inputs.py``; capacity flags: ``CAPACITY_EDGES`` in
``test_bad_inputs_sweeps.py``.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from sim.cli.main import main
from sim.presentation import compact
from sim.studies import capacity_report
from tests.sweep_support import REPO, fake_run_cell
from tests.test_bad_inputs import exits_2_with_one_line
from tests.test_bad_inputs_sweeps import GRID, assert_store_whole, stored_runs
from tests.test_sweep_compact import sweep_folder
from tests.test_workload_traces import AZURE_HEADER, BURST_HEADER, LENGTHS_HEADER

POOLS = "name: pools\nworkload: {source: synthetic, num_requests: 20}\npools:\n"
TWO_POOLS = POOLS + "  - {name: a, instances: 1}\n  - {name: b, instances: 1}\n"
NARROW_AND_WIDE = """\
name: narrow
scheduler: {{name: round-robin}}
workload: {{source: lengths, trace: {trace}, num_requests: 10, arrival: {{rate: 1.0}}}}
pools:
  - {{name: wide, instances: 1}}
  - {{name: narrow, instances: 1, max_batched_tokens: 512}}
"""


def exits_2_with_the_line(run, capsys) -> str:
    """``run()`` (a module's ``main``) returns 2 and writes one ``llumsim: error:`` line."""
    assert run() == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("llumsim: error: "), err
    assert captured.out == ""
    return err


# ------------------------------------------------------------------ an unbounded run
def test_a_trace_with_a_gap_of_a_billion_seconds_exits_2_within_bounded_memory(tmp_path):
    """Replayed as recorded, a gap of 10^9 s between two requests made the run step through
    every idle report round (~1 GB per 10^6 s, for days); each trace format with timestamps
    is refused before anything runs, in a process limited to 2 GiB of address space."""
    (tmp_path / "burst.csv").write_text(
        f"{BURST_HEADER}\n0,GPT-4,50,10,60,Conversation log\n1000000000,GPT-4,50,10,60,Conversation log\n"
    )
    (tmp_path / "azure.csv").write_text(
        f"{AZURE_HEADER}\n2023-11-16 18:15:46.0,374,44\n2055-01-01 00:00:00.0,374,44\n"
    )
    for name in ("burst", "azure"):
        (tmp_path / f"{name}.yaml").write_text(
            f"name: {name}\ncluster: {{instances: 2}}\nworkload: {{source: timestamped, trace: {name}.csv, "
            "num_requests: null, arrival: {process: trace, rate: null}}\n"
        )
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "from sim.cli.main import main\n"
        "for name in ('burst', 'azure'):\n"
        "    print(main(['run', f'{name}.yaml', '--quiet', '--out', f'out-{name}']), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 0 and len(lines) == 4, done.stderr
    for (error, code), trace in zip((lines[0:2], lines[2:4]), ("burst.csv", "azure.csv")):
        assert code == "2" and error.startswith(f"llumsim: error: workload.trace: {trace}: requests 0 and 1"), error
        assert "a gap is at most 86,400 s: time-scale the trace (workload.arrival.rate)" in error
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out")) == []


# ------------------------------------------------------------------ tracebacks
def test_capacity_of_a_pools_config_counts_every_pools_gpus(tmp_path, capsys):
    """Each probe's summary reports GPUs per pool; the search read them as one number and
    crashed after its first probe. Two pools of one instance count the GPUs that one pool
    of two does."""
    pools, cluster = tmp_path / "pools.yaml", tmp_path / "cluster.yaml"
    pools.write_text(TWO_POOLS)
    cluster.write_text(POOLS.removesuffix("pools:\n") + "cluster: {instances: 2}\n")
    gpus, printed = {}, {}
    for config in (pools, cluster):
        out = tmp_path / config.stem
        argv = ["capacity", str(config), "--slo", "e2e_latency.mean<=1000", "--low", "1", "--high", "2"]
        assert main(argv + ["--jobs", "1", "--quiet", "--out", str(out)]) == 4  # every rate tried meets it
        captured = capsys.readouterr()
        assert captured.err == ""
        printed[config.stem] = captured.out
        gpus[config.stem] = [p["average_gpus"] for p in json.loads((out / "capacity.json").read_text())["points"]]
    assert "up to 2 req/s on 1 x llama-7b (1 GPU each) + 1 x llama-7b (1 GPU each), 2.0 GPUs" in printed["pools"]
    assert "up to 2 req/s on 2 x llama-7b (1 GPU each), 2.0 GPUs" in printed["cluster"]
    assert gpus["pools"] == pytest.approx(gpus["cluster"], rel=1e-9) and len(gpus["pools"]) == 2


def report_folders(tmp_path) -> dict[str, tuple[list[str], str]]:
    """id: (capacity_report argv, what the one line must contain)."""
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "empty").mkdir()
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text("{}")
    cut_json = tmp_path / "cut_json"
    cut_json.mkdir()
    (cut_json / "capacity_grid.json").write_text('{"name": "k_capacity", "slos": [')
    cut_table = tmp_path / "cut_table"
    cut_table.mkdir()
    (cut_table / "capacity_grid.json").write_text("{}")
    pd.DataFrame({"scheduler": ["llumnix"] * 100}).to_parquet(cut_table / "index.parquet")
    data = (cut_table / "index.parquet").read_bytes()
    (cut_table / "index.parquet").write_bytes(data[: len(data) // 2])
    no_answer = tmp_path / "no_answer"  # whole tables, one lacking a column the report reads
    no_answer.mkdir()
    (no_answer / "capacity_grid.json").write_text("{}")
    cells = {"scheduler": ["llumnix"], "workload.priority.tiers": [1], "workload.priority.sampler": ["uniform"]}
    pd.DataFrame({**cells, "cost_per_latency": [1.0], **{f"{c}{end}": [1.0] for c in ("rate_per_gpu", "vs_baseline")
                                                        for end in ("", ".ci_low", ".ci_high")}}).to_parquet(no_answer / "index.parquet")
    pd.DataFrame({**cells, "seed": [0], "rate_per_gpu": [1.0]}).to_parquet(no_answer / "searches.parquet")
    missing = tmp_path / "missing"
    return {
        "missing": ([str(missing)], f"{missing}: no such folder; expected a capacity grid's results"),
        "a file": ([str(tmp_path / "a_file")], "a_file: not a folder; expected a capacity grid's results"),
        "empty": ([str(tmp_path / "empty")], "empty: no capacity_grid.json, so not a capacity grid's results"),
        "a sweep, not a capacity grid": ([str(sweep)], "sweep: no capacity_grid.json"),
        "a capacity grid, not a sweep": ([str(cut_table), "--autoscale"], "cut_table: no sweep.json, so not a sweep's results"),
        "truncated JSON": ([str(cut_json)], "cut_json/capacity_grid.json: damaged, not JSON"),
        "truncated table": ([str(cut_table)], "cut_table/index.parquet: cannot be read"),
        "a table without a column it reads": (
            [str(no_answer)], "no_answer/searches.parquet: no column answer, which this report reads"
        ),
        "a NaN bound": ([str(cut_table), "--floor", str(sweep), "--bounds", "0.9,nan"], "--bounds: 'nan' is not a share in (0, 1]"),
    }


REPORT_CASES = [
    "missing", "a file", "empty", "a sweep, not a capacity grid", "a capacity grid, not a sweep",
    "truncated JSON", "truncated table", "a table without a column it reads", "a NaN bound",
]


@pytest.mark.parametrize("case", REPORT_CASES)
def test_a_capacity_report_of_a_folder_it_cannot_read_exits_2_naming_it(case, tmp_path, capsys):
    argv, expected = report_folders(tmp_path)[case]
    assert expected in exits_2_with_the_line(lambda: capacity_report.main(argv), capsys)


def test_a_truncated_stored_summary_stops_the_next_sweep_naming_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sim.sweep.cell.run_cell", fake_run_cell(lambda c: 1.0))
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID + "seeds: 2\n")
    argv = ["sweep", str(grid), "--jobs", "1", "--quiet", "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    capsys.readouterr()
    damaged = stored_runs(tmp_path / "out")[0] / "summary.json"
    damaged.write_text(damaged.read_text()[:40])
    err = exits_2_with_one_line(argv, capsys)
    assert f"{damaged}: damaged, not JSON" in err and f"delete {damaged.parent} and rerun" in err
    shutil.rmtree(damaged.parent)
    assert main(argv) == 0 and "1 reused, 1 computed" in capsys.readouterr().out


# ------------------------------------------------------------------ silent nonsense or loss
@pytest.mark.parametrize("with_other_files", [True, False], ids=["someone's folder", "only someone's index.parquet"])
def test_a_compact_copy_never_writes_into_a_folder_llumsim_did_not_make(with_other_files, tmp_path, capsys):
    source = sweep_folder(tmp_path / "k_study")
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "index.parquet").write_bytes(b"my own index")
    if with_other_files:
        (dest / "thesis.tex").write_text("x")
    expected = "thesis.tex" if with_other_files else "holds no sweep.json, so not a llumsim results folder"
    err = exits_2_with_the_line(lambda: compact.main([str(source), str(dest)]), capsys)
    assert err.startswith(f"llumsim: error: output folder {dest}: not empty") and expected in err
    assert (dest / "index.parquet").read_bytes() == b"my own index"
    assert sorted(p.name for p in dest.iterdir()) == sorted(["index.parquet"] + ["thesis.tex"] * with_other_files)


def test_a_compact_copy_whose_where_matches_no_run_exits_2(tmp_path, capsys):
    source = sweep_folder(tmp_path / "k_study")
    argv = [str(source), str(tmp_path / "out"), "--table", "migrations", "--where", "seed=7"]
    err = exits_2_with_the_line(lambda: compact.main(argv), capsys)
    assert "--where seed=7: matches no run of the sweep" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("pools", "extra", "expected"),
    [
        ("pools: []\n", [], "pools: an empty list has no instances; list a pool, or drop pools for cluster"),
        (
            "pools:\n  - {name: a, instances: 1}\n  - {name: b, instances: 1, model: llama-13b}\n",
            ["--set", "scheduler.name=llumnix"],
            "pools[1].model: llama-13b differs from pools[0]'s llama-7b, and this run migrates (the llumnix "
            "preset's pairing), which cannot move a KV cache between models",
        ),
    ],
    ids=["no pools", "migrating between models"],
)
def test_pools_that_cannot_serve_exit_2_naming_the_key(pools, extra, expected, tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(POOLS.removesuffix("pools:\n") + pools)
    argv = ["run", str(config), "--quiet", "--out", str(tmp_path / "out"), *extra]
    assert expected in exits_2_with_one_line(argv, capsys)
    assert not (tmp_path / "out").exists()


def test_a_request_a_narrow_pool_refuses_is_served_by_a_wide_one(tmp_path, capsys):
    """Round-robin sent every other 1,000-token prompt to the pool with a 512-token budget,
    which aborted it: dispatch now chooses among the instances whose pool can prefill it."""
    (tmp_path / "long.csv").write_text(f"{LENGTHS_HEADER}\n" + "1000,5\n" * 10)
    (tmp_path / "c.yaml").write_text(NARROW_AND_WIDE.format(trace=tmp_path / "long.csv"))
    assert main(["run", str(tmp_path / "c.yaml"), "--quiet", "--no-plots", "--out", str(tmp_path / "out")]) == 0
    requests = pd.read_csv(tmp_path / "out" / "requests.csv")
    assert (requests["status"] == "finished").all(), requests["abort_reason"].value_counts()


# ------------------------------------------------------------------ misleading answers
def test_two_sweeps_storing_the_same_run_at_once_both_succeed(tmp_path, capsys, monkeypatch):
    """Another sweep on the same folder stores a run between this one's check and its rename
    (the rename then meets a non-empty folder): the same config, so the same result; this
    sweep keeps that folder rather than reporting a write failure."""
    monkeypatch.setattr("sim.sweep.cell.run_cell", fake_run_cell(lambda c: c.workload.arrival.rate))
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID + "axes: {workload.arrival.rate: [1, 2]}\n")
    out = tmp_path / "out"
    rename, raced = os.rename, []

    def rename_after_the_other_sweep(source, target, *args, **kwargs):
        staged = os.path.basename(os.fspath(source)).startswith(".tmp-")
        if staged and os.path.dirname(os.fspath(target)) == str(out / "runs") and not raced:
            shutil.copytree(source, target)  # the other sweep's identical run lands first
            raced.append(target)
        return rename(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "rename", rename_after_the_other_sweep)
    assert main(["sweep", str(grid), "--jobs", "1", "--quiet", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "2 computed" in captured.out and raced
    assert len(stored_runs(out)) == 2
    assert not [p for p in (out / "runs").iterdir() if p.name.startswith(".")]  # nothing left aside
    assert_store_whole(out)
