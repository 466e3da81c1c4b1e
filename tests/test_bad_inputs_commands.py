"""Bad input at the edges of the commands beside ``run`` — ``calibrate``'s and ``bench``'s
options, a count written with a digit ``int`` refuses, a study pointed at another study's
results folder — exits 2 with one ``llumsim: error:`` line, never a traceback, and before
any work (exit codes: docs/running.md)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from sim.cli.main import main
from sim.studies import findings, pd as pd_study, sessions
from tests.test_bad_inputs import exits_2_with_one_line


@pytest.fixture
def no_work(monkeypatch):
    """Bad input is refused before the report is computed."""
    monkeypatch.setattr("sim.hardware.calibration_report.calibration", lambda *a: pytest.fail("it calibrated"))
    monkeypatch.setattr("sim.bench.migration.run_bench", lambda *a: pytest.fail("it benchmarked"))


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["calibrate", "--max-batched-tokens", "-5"], "--max-batched-tokens: must be in 1..16384"),
        (["calibrate", "--max-batched-tokens", "1000000000"], "--max-batched-tokens: must be in 1..16384"),
        (["calibrate", "--plot", "{tmp}/missing/c.png"], "--plot {tmp}/missing/c.png: its folder {tmp}/missing does not exist"),
        (["calibrate", "--plot", "{tmp}"], "--plot {tmp}: is a folder"),
        (["calibrate", "--device", "a100_80gb", "--plot", "{tmp}/c.png"], "--plot: draws the A10 table"),
        (["bench", "migration", "--plot", "{tmp}/missing/m.png"], "--plot {tmp}/missing/m.png: its folder"),
    ],
    ids=["negative reserve", "reserve past the profiles", "plot in a missing folder", "plot onto a folder",
         "a device plot", "bench plot in a missing folder"],
)
def test_a_bad_option_exits_2_before_the_work(argv, expected, tmp_path, capsys):
    argv = [a.format(tmp=tmp_path) for a in argv]
    assert expected.format(tmp=tmp_path) in exits_2_with_one_line(argv, capsys)


def test_a_fleet_count_in_a_digit_int_refuses_is_named(tmp_path, capsys):
    """'²' is a digit to ``str.isdigit`` and not to ``int``: it ended in a traceback."""
    config = tmp_path / "c.yaml"
    config.write_text("name: c\ncluster: {instances: 2}\nworkload: {source: synthetic, num_requests: 20}\n")
    argv = ["capacity", str(config), "--slo", "e2e_latency.mean<=20", "--fleet", "cluster=²", "--out", str(tmp_path / "o")]
    assert "--fleet 'cluster=²': write POOL=N, N a whole number" in exits_2_with_one_line(argv, capsys)


def _results(folder, marker: str, columns: dict) -> None:
    """A results folder of some grid: its marker file and an index of these columns."""
    folder.mkdir()
    (folder / marker).write_text(json.dumps({"name": folder.name, "seeds": [0]}))
    pd.DataFrame(columns).to_parquet(folder / "index.parquet")


# the index columns of each study's own grid, as another study would find them
SESSIONS_RUNS = {"workload.arrival.rate": [1.0], "serving": ["llumnix/cache"], "latency.prefill_latency.p99": [0.1]}
K_STUDY_RUNS = {
    "scheduler": ["llumnix"], "workload.priority.tiers": [2], "workload.priority.sampler": ["uniform"],
    "workload.arrival.rate": [5.0], "latency.prefill_latency.p99": [1.0],
}


@pytest.mark.parametrize(
    ("study", "runs", "argv", "expected"),
    [
        (findings, SESSIONS_RUNS, ["{folder}"], "findings study: {folder}: its runs have no scheduler, workload.priority.tiers"),
        (sessions, K_STUDY_RUNS, ["{folder}"], "sessions study: {folder}: its runs have no serving, so not llumsim sweep experiments/grids/sessions.yaml's"),
        (pd_study, SESSIONS_RUNS, ["{other}", "{folder}"], "pd study: {other}: its runs have no workload.shape.input.match"),
    ],
    ids=["findings on the sessions sweep", "sessions on the K-tier sweep", "pd on the sessions sweep"],
)
def test_a_study_pointed_at_another_studys_results_exits_2_naming_it(study, runs, argv, expected, tmp_path, capsys):
    folder, other = tmp_path / "sweep", tmp_path / "capacity"
    _results(folder, "sweep.json", runs)
    _results(other, "capacity_grid.json", runs)
    argv = [a.format(folder=folder, other=other) for a in argv]
    assert study.main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("llumsim: error: "), err
    assert expected.format(folder=folder, other=other) in err
