"""``sweep``, ``capacity`` and ``paper`` as hard as ``run``: a grid too large or of the wrong
shape, YAML that expands, a bad output folder, a capacity search at its edges — exit code 2
and one line naming the file and key before anything runs; a full or read-only disk at any
later write — exit code 2, one line, and a store whose every run is whole; a run that fails
in one cell — recorded as failed, the others kept."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from sim.cli.main import main
from sim.config import ConfigError
from sim.engine.watchdog import SimulationStalled
from tests.disk_faults import FailingDisk
from tests.sweep_support import REPO, fake_run_cell
from tests.test_bad_inputs import OUT_IDS, bad_out, exits_2_with_one_line, laughs
from tests.test_workload_traces import LENGTHS_HEADER

BASE = "{workload: {source: synthetic, num_requests: 20}, cluster: {instances: 2}}"
GRID = f"base: {BASE}\n"
TEN = "{" + ", ".join(f"v{i}: {{}}" for i in range(10)) + "}"

# id: (grid file text, what the one line must contain after "<grid>: ")
BAD_GRIDS: dict[str, tuple[str, str]] = {
    "ten billion cells": (
        GRID + "variants: {" + ", ".join(f"g{i}: {TEN}" for i in range(10)) + "}\n",
        "axes/zip/variants: 10,000,000,000 cells x 1 seeds = 10,000,000,000 runs; a grid has at most 20,000",
    ),
    "parts over the limit together": (
        GRID + "seeds: 201\nparts: [{name: a, axes: {workload.arrival.rate: "
        + str(list(range(1, 51))) + "}}, {name: b, axes: {workload.arrival.rate: " + str(list(range(1, 51))) + "}}]\n",
        "parts: 50 + 50 cells x 201 seeds = 20,100 runs",
    ),
    "ten million seeds": (GRID + "seeds: 10000000\n", "seeds: 10,000,000 seeds per cell; at most 1,000"),
    "a list of 1,001 seeds": (GRID + f"seeds: {list(range(1001))}\n", "seeds: 1,001 seeds per cell"),
    "a negative seed": (GRID + "seeds: [0, -1]\n", "seeds: expected a count >= 1 or a list of seeds >= 0"),
    "tables as a number": (GRID + "tables: 5\n", "tables: expected a list of table names"),
    "tables as one name": (GRID + "tables: requests\n", "tables: expected a list of table names"),
    "a description that is a list": (GRID + "description: [1]\n", "description: expected text, got [1]"),
    "a name that is a mapping": (GRID + "name: {a: 1}\n", "name: expected text"),
    "a name too long": (GRID + f"name: {'x' * 300}\n", "name: must be a plain folder name"),
    "an empty file": ("", "an empty grid: give a base config, settings or dimensions"),
    "a name and nothing else": ("name: g\n", "an empty grid"),
    "axes as a list": (GRID + "axes: [1, 2]\n", "axes: expected a mapping, got [1, 2]"),
    "zip as a mapping": (GRID + "zip: {a: [1]}\n", "zip: expected a list of blocks"),
    "a variant group as a list": (GRID + "variants: {s: [1]}\n", "variants.s: expected a mapping"),
    "a part that is a number": (GRID + "parts: [5]\n", "parts[0]: expected a mapping, got 5"),
    "base as a number": ("base: 5\n", "base: expected a config file path or a mapping"),
    "a billion laughs": (GRID + f"axes: {{workload.arrival.rate: {laughs()}}}\n", "expands to 12,345,679,"),
    "an alias cycle": (GRID + "axes: &a {workload.arrival.rate: [*a]}\n", "(line 2): alias *a refers to its own anchor"),
    "a repeated key": (GRID + "seeds: 2\nseeds: 3\n", "(line 3): key 'seeds' appears twice in one mapping (first on line 2)"),
}


@pytest.fixture
def nothing_runs(monkeypatch):
    """Bad input must stop before a run is handed to a backend."""
    monkeypatch.setattr("sim.sweep.execution.execute", lambda *a, **k: pytest.fail("a run started"))


@pytest.mark.usefixtures("nothing_runs")
@pytest.mark.parametrize("mode", ["sweep", "dry-run"])
@pytest.mark.parametrize(("text", "expected"), BAD_GRIDS.values(), ids=BAD_GRIDS.keys())
def test_a_bad_grid_exits_2_naming_the_file_and_key(text, expected, mode, tmp_path, capsys):
    grid = tmp_path / "g.yaml"
    grid.write_text(text)
    out = tmp_path / "out"
    argv = ["sweep", str(grid), "--out", str(out)] + (["--dry-run"] if mode == "dry-run" else [])
    err = exits_2_with_one_line(argv, capsys)
    assert err.startswith(f"llumsim: error: {grid}") and expected in err
    assert not out.exists()


def test_a_base_config_that_expands_is_named(tmp_path, capsys):
    base = tmp_path / "base.yaml"
    base.write_text(f"workload: {{synthetic: {laughs()}}}\n")
    grid = tmp_path / "g.yaml"
    grid.write_text("base: base.yaml\n")
    err = exits_2_with_one_line(["sweep", str(grid), "--dry-run"], capsys)
    assert f"{grid}: {base}: expands to 12,345,679,023 nodes" in err


def test_a_set_value_that_expands_is_named(tmp_path, capsys):
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID)
    argv = ["sweep", str(grid), "--dry-run", "--set", f"cluster.instances={laughs()}"]
    assert "--set cluster.instances: expands to 12,345,679,019 nodes" in exits_2_with_one_line(argv, capsys)


@pytest.mark.usefixtures("nothing_runs")
def test_the_run_limit_refuses_only_what_is_over_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sim.sweep.grid.MAX_GRID_RUNS", 12)
    grid = tmp_path / "g.yaml"
    for seeds, code in ((3, 0), (4, 2)):  # 4 cells x 3 seeds = the limit; x 4 = over it
        grid.write_text(GRID + f"seeds: {seeds}\naxes: {{workload.arrival.rate: [1, 2, 3, 4]}}\n")
        assert main(["sweep", str(grid), "--dry-run"]) == code
    captured = capsys.readouterr()
    assert "g: 4 cells x 3 seeds = 12 runs" in captured.out
    assert "4 cells x 4 seeds = 16 runs; a grid has at most 12" in captured.err


# ------------------------------------------------------------------ output folders
def entry_point(command: str, tmp_path, out: str) -> list[str]:
    """argv of ``command`` writing to ``out``, on a tiny config or grid."""
    config = tmp_path / "c.yaml"
    config.write_text(BASE + "\n")
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID)
    return {
        "sweep": ["sweep", str(grid), "--jobs", "1", "--quiet"],
        "capacity": ["capacity", str(config), "--slo", "e2e_latency.mean<=10", "--jobs", "1", "--quiet"],
        "paper": ["paper", "--smoke", "--only", "serving-L-L", "--jobs", "1", "--quiet"],
    }[command] + ["--out", out]


@pytest.mark.usefixtures("nothing_runs")
@pytest.mark.parametrize("command", ["sweep", "capacity", "paper"])
@pytest.mark.parametrize("case", OUT_IDS)
def test_a_bad_output_folder_exits_2_before_anything_runs(case, command, tmp_path, capsys, monkeypatch):
    out, expected = bad_out(case, tmp_path, monkeypatch)
    err = exits_2_with_one_line(entry_point(command, tmp_path, out), capsys)
    assert err.startswith(f"llumsim: error: output folder {out}: ") and expected in err
    assert os.listdir(tmp_path / "home") == ["thesis.tex"]  # someone's folder untouched
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".tmp-")]


@pytest.mark.parametrize(
    ("readme", "expected"),
    [
        (None, "no such file"),
        ("# no markers here\n", "no <!-- paper-claims:begin --> ... <!-- paper-claims:end --> markers"),
        ("<!-- paper-claims:end -->\n<!-- paper-claims:begin -->\n", "no <!-- paper-claims:begin --> ... <!-- paper-claims:end --> markers (in that order)"),
        (b"\xff\xfe", "not UTF-8 text"),
    ],
    ids=["missing", "no markers", "markers reversed", "not UTF-8"],
)
@pytest.mark.usefixtures("nothing_runs")
def test_a_readme_the_table_cannot_go_into_stops_paper_before_the_sweep(readme, expected, tmp_path, capsys):
    path = tmp_path / "README.md"
    if readme is not None:
        path.write_bytes(readme if isinstance(readme, bytes) else readme.encode())
    argv = entry_point("paper", tmp_path, str(tmp_path / "out")) + ["--readme", str(path)]
    assert f"--readme {path}: {expected}" in exits_2_with_one_line(argv, capsys)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ capacity at its edges
CAPACITY_EDGES: dict[str, tuple[list[str], str]] = {
    "bracket upside down": (["--low", "8", "--high", "4"], "--low: 8 req/s is not below --high (4)"),
    "empty bracket": (["--low", "4", "--high", "4"], "--low: 4 req/s is not below --high (4)"),
    "NaN low": (["--low", "nan"], "--low: must be a rate in [0.001, 1e+06] req/s, got nan"),
    "infinite high": (["--high", "inf"], "--high: must be a rate in [0.001, 1e+06] req/s, got inf"),
    "negative low": (["--low", "-1"], "--low: must be a rate in"),
    "a rate no config takes": (["--high", "1e7"], "--high: must be a rate in [0.001, 1e+06] req/s, got 1e+07"),
    **{
        f"SLO bound {bound}": (["--slo", f"e2e_latency.mean<={bound}"], "the bound must be a finite number of seconds > 0")
        for bound in ("-1", "0", "inf", "nan")
    },
    "a tier the config lacks": (["--slo", "tier3.e2e_latency.p99<=5"], "--slo tier3.e2e_latency.p99: no tier 3 (workload.priority.tiers=1: tiers 0..0)"),
    "attainment without SLO targets": (
        ["--slo", "tier0.attainment>=0.99"],
        "--slo tier0.attainment: attainment is measured against the config's targets; set slo",
    ),
    "attainment above one": (["--slo", "attainment>=1.5"], "an attainment bound must be a share in (0, 1]"),
    "one metric bounded twice": (
        ["--slo", "e2e_latency.mean<=10", "--slo", "e2e_latency.mean<=5"],
        "--slo e2e_latency.mean: bounded twice (e2e_latency.mean<=10 and e2e_latency.mean<=5); give one bound per metric",
    ),
    "no seeds": (["--seeds", "0"], "--seeds: must be in 1..1,000, got 0"),
    "a billion seeds": (["--seeds", "1000000000"], "--seeds: must be in 1..1,000, got 1000000000"),
    "NaN tolerance": (["--tolerance", "nan"], "--tolerance: must be in (0, 1), got nan"),
    "burst arrivals": (["--set", "workload.arrival.process=burst"], "workload.arrival.process: burst ignores the rate"),
}


@pytest.mark.usefixtures("nothing_runs")
@pytest.mark.parametrize(("extra", "expected"), CAPACITY_EDGES.values(), ids=CAPACITY_EDGES.keys())
def test_a_capacity_search_that_cannot_be_made_exits_2_before_it_runs(extra, expected, tmp_path, capsys):
    argv = entry_point("capacity", tmp_path, str(tmp_path / "out"))
    if any(arg == "--slo" for arg in extra):
        argv = argv[:2] + argv[4:]  # this case's SLO instead of the default one
    assert expected in exits_2_with_one_line(argv + extra, capsys)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("rate", "slo", "code", "answer"),
    [
        # e2e mean = rate / 20 s (fake runs): <= 1e-9 s at no rate, <= 1e6 s at every rate
        (7.5, "1e-9", 1, "no rate meets the SLOs on 2 x llama-7b (1 GPU each): the lowest rate tried, 0.001831 req/s, misses them"),
        (7.5, "1e6", 4, "capacity: meets the SLOs at every rate tried, up to 30720 req/s"),
        (5e5, "1e6", 4, "capacity: meets the SLOs at every rate tried, up to 1e+06 req/s"),  # the highest a config takes
        (0.002, "1e-9", 1, "the lowest rate tried, 0.001 req/s, misses them"),
        (7.5, "1", 0, "capacity: 19.93 req/s (fails at 20.16)"),  # the boundary: 20 req/s
    ],
    ids=["no rate meets", "every rate meets", "every rate up to the highest allowed", "none down to the lowest allowed", "bracketed"],
)
def test_capacity_answers_at_its_edges(rate, slo, code, answer, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sim.sweep.cell.run_cell", fake_run_cell(lambda c: c.workload.arrival.rate / 10))
    argv = entry_point("capacity", tmp_path, str(tmp_path / "out"))
    argv[3] = f"e2e_latency.mean<={slo}"
    assert main(argv + ["--set", f"workload.arrival.rate={rate}", "--tolerance", "0.02"]) == code
    captured = capsys.readouterr()
    assert answer in captured.out and captured.err == ""
    saved = json.loads((tmp_path / "out" / "capacity.json").read_text())
    assert all(0.001 <= p["rate"] <= 1e6 for p in saved["points"])


# ------------------------------------------------------------------ a disk that fills
def stored_runs(out) -> list:
    runs = out / "runs"
    return [p for p in runs.iterdir() if not p.name.startswith(".")] if runs.is_dir() else []


def assert_store_whole(out) -> None:
    """Every run folder complete, no temporary file or folder anywhere in the results."""
    for folder in stored_runs(out):
        assert {p.name for p in folder.iterdir()} == {"summary.json", "config.yaml", "code.txt"}
        json.loads((folder / "summary.json").read_text())
    assert not [p for p in out.rglob(".*")], list(out.rglob(".*"))


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EROFS], ids=["full disk", "read-only"])
def test_a_sweep_whose_disk_fills_exits_2_keeps_whole_runs_and_resumes_to_the_same_index(
    error, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr("sim.sweep.cell.run_cell", fake_run_cell(lambda c: c.workload.arrival.rate))
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID + "seeds: 2\naxes: {workload.arrival.rate: [1, 2, 3, 4]}\n")
    reference, out = tmp_path / "reference", tmp_path / "out"
    assert main(["sweep", str(grid), "--jobs", "1", "--out", str(reference)]) == 0
    capsys.readouterr()
    disk = FailingDisk(monkeypatch, out, error, when=lambda: len(stored_runs(out)) >= 3)
    err = exits_2_with_one_line(["sweep", str(grid), "--jobs", "1", "--quiet", "--out", str(out)], capsys)
    assert f"{os.strerror(error)}; finished runs are kept, run the same command to resume" in err
    assert disk.failed and len(stored_runs(out)) == 3
    assert_store_whole(out)
    disk.heal()
    assert main(["sweep", str(grid), "--jobs", "1", "--out", str(out)]) == 0
    assert "3 reused, 5 computed" in capsys.readouterr().out
    for name in ("index.csv", "index.parquet", "aggregate.csv", "sweep.json"):
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EROFS], ids=["full disk", "read-only"])
def test_a_capacity_search_whose_disk_fills_exits_2_with_whole_runs(error, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sim.sweep.cell.run_cell", fake_run_cell(lambda c: c.workload.arrival.rate / 10))
    out = tmp_path / "out"
    FailingDisk(monkeypatch, out, error, when=lambda: len(stored_runs(out)) >= 2)
    err = exits_2_with_one_line(entry_point("capacity", tmp_path, str(out)), capsys)
    assert os.strerror(error) in err and len(stored_runs(out)) == 2
    assert_store_whole(out)
    assert not (out / "capacity.json").exists()


@pytest.fixture(scope="module")
def paper_part(tmp_path_factory):
    """``paper --smoke --only serving-L-L`` run once (2 runs); tests copy its folder."""
    out = tmp_path_factory.mktemp("paper") / "out"
    assert main(["paper", "--smoke", "--only", "serving-L-L", "--jobs", "1", "--quiet", "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EROFS], ids=["full disk", "read-only"])
@pytest.mark.parametrize("at", ["claims.md", "README.md"])
def test_paper_whose_disk_fills_exits_2_and_leaves_each_file_old_or_new(
    at, error, paper_part, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "out"
    shutil.copytree(paper_part, out)
    (out / "claims.md").unlink()
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- paper-claims:begin -->\nold\n<!-- paper-claims:end -->\ntail\n")
    written = out / ("sweep.json" if at == "claims.md" else "serving.png")
    stamp = written.stat().st_mtime_ns
    FailingDisk(monkeypatch, tmp_path, error, when=lambda: written.stat().st_mtime_ns != stamp)
    argv = entry_point("paper", tmp_path, str(out)) + ["--readme", str(readme)]
    assert main(argv) == 2  # after the sweep's line on stdout
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"llumsim: error: cannot write {tmp_path}") and os.strerror(error) in err
    assert len(err.splitlines()) == 1
    assert (out / "claims.md").exists() == (at == "README.md")  # whole or absent, never half
    assert readme.read_text().splitlines()[2] == "old"
    assert not [p for p in tmp_path.rglob(".tmp-*")]


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EROFS], ids=["full disk", "read-only"])
def test_a_run_whose_disk_fills_exits_2_keeping_the_previous_run(error, tmp_path, capsys, monkeypatch):
    config = tmp_path / "c.yaml"
    config.write_text(BASE + "\n")
    out = tmp_path / "out"
    argv = ["run", str(config), "--quiet", "--no-plots", "--out", str(out)]
    assert main(argv) == 0
    before = (out / "requests.csv").read_bytes()
    capsys.readouterr()
    FailingDisk(monkeypatch, tmp_path, error, when=lambda: any(tmp_path.glob(".tmp-*/requests.csv")))
    assert main(argv + ["--set", "seed=1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"llumsim: error: cannot write output folder {out}: {os.strerror(error)}"
    assert (out / "requests.csv").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# ------------------------------------------------------------------ a cell that fails
def failing_cells(config):
    """Rate 2 stalls, rate 3 meets bad input while running; the others answer."""
    rate = config.workload.arrival.rate
    if rate == 2:
        raise SimulationStalled("simulation stalled: no request progressed (test)")
    if rate == 3:
        raise ConfigError("traces/x.csv: row 7, column 'n': not a number (test)")
    return rate


def test_a_failed_cell_is_recorded_left_out_of_the_aggregate_and_retried_on_request(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr("sim.sweep.cell.run_cell", fake_run_cell(failing_cells))
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID + "seeds: 2\naxes: {workload.arrival.rate: [1, 2, 3]}\n")
    out = tmp_path / "out"
    argv = ["sweep", str(grid), "--jobs", "1", "--out", str(out)]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "6 runs (6 distinct): 0 reused, 2 computed, 4 FAILED (sweep.json lists them" in captured.out
    *progress, last = captured.err.strip().splitlines()  # the log's progress lines, then one line
    assert last.startswith(
        "llumsim: 4 runs failed: cell [workload.arrival.rate=2] seed 0: stalled: simulation stalled"
    )
    assert progress[-1].startswith("g: 6/6 runs (100%): 0 reused, 2 computed, 4 failed")
    meta = json.loads((out / "sweep.json").read_text())
    assert (meta["runs_done"], meta["runs_failed"], meta["complete"]) == (2, 4, False)
    assert {(f["cell"], f["kind"]) for f in meta["failed"]} == {
        ("workload.arrival.rate=2", "stalled"), ("workload.arrival.rate=3", "error")
    }
    index = pd.read_parquet(out / "index.parquet")
    assert index["status"].tolist() == ["ok", "ok", "failed", "failed", "failed", "failed"]
    assert index.loc[4, "error"] == "error: traces/x.csv: row 7, column 'n': not a number (test)"
    assert index.loc[2:, "latency.e2e_latency.mean"].isna().all()
    aggregate = pd.read_parquet(out / "aggregate.parquet")
    assert aggregate["workload.arrival.rate"].tolist() == [1]  # failed cells have no mean

    def stamps() -> dict[str, int]:
        return {p.name: p.stat().st_mtime_ns for p in stored_runs(out)}

    failed = set(index.loc[index["status"] == "failed", "config_hash"])
    before = stamps()
    assert main(argv) == 1 and stamps() == before  # stored as failed: not rerun by default
    assert "0 computed, 4 FAILED" in capsys.readouterr().out
    monkeypatch.setattr("sim.sweep.cell.run_cell", fake_run_cell(lambda c: c.workload.arrival.rate))
    assert main(argv + ["--retry-failed"]) == 0
    assert "2 reused, 4 computed in" in capsys.readouterr().out
    assert {key for key, stamp in stamps().items() if stamp != before[key]} == failed
    assert json.loads((out / "sweep.json").read_text())["complete"]
    assert set(pd.read_parquet(out / "index.parquet")["status"]) == {"ok"}


def test_a_trace_bad_in_one_cell_fails_that_cell_only(tmp_path, capsys, monkeypatch):
    """Real runs: the trace passes the grid's checks (it exists) and breaks mid-file."""
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text(f"{LENGTHS_HEADER}\n" + "30,5\n" * 20)
    bad.write_text(f"{LENGTHS_HEADER}\n" + "30,5\n" * 10 + "30,many\n")
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "base: {workload: {source: lengths, num_requests: 10}, cluster: {instances: 1}}\n"
        f"axes: {{workload.trace: [{good}, {bad}]}}\n"
    )
    assert main(["sweep", str(grid), "--jobs", "1", "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert f"1 runs failed: cell [workload.trace={bad}] seed 0: error: {bad}: row 12" in err
    index = pd.read_parquet(tmp_path / "out" / "index.parquet")
    assert index["status"].tolist() == ["ok", "failed"] and index.loc[0, "requests.finished"] == 10


def test_the_worst_inputs_are_refused_within_bounded_memory(tmp_path):
    """In a process limited to 2 GiB of address space, the inputs that used to grow until
    MemoryError (a grid of 10^10 cells, 10^7 seeds, an alias bomb, 10^9 capacity seeds)
    each end with exit code 2 and one line."""
    (tmp_path / "cells.yaml").write_text(BAD_GRIDS["ten billion cells"][0])
    (tmp_path / "seeds.yaml").write_text(BAD_GRIDS["ten million seeds"][0])
    (tmp_path / "bomb.yaml").write_text(f"workload: {{synthetic: {laughs()}}}\n")
    (tmp_path / "c.yaml").write_text(BASE + "\n")
    cases = [
        ["sweep", "cells.yaml", "--dry-run"],
        ["sweep", "seeds.yaml", "--dry-run"],
        ["run", "bomb.yaml"],
        ["capacity", "c.yaml", "--slo", "e2e_latency.mean<=1", "--seeds", "1000000000"],
    ]
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "from sim.cli.main import main\n"
        f"for argv in {cases!r}:\n"
        "    print(main(argv), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 0 and len(lines) == 2 * len(cases), done.stderr
    for error, code in zip(lines[::2], lines[1::2]):
        assert error.startswith("llumsim: error: ") and code == "2", (error, code)
