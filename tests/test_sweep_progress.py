"""Progress of sweeps and runs off a terminal: lines in a log every 30 s or 5% (runs done,
reused, failed; a run's requests ended; ETA), so a sweep or a run logged to a file shows how
far it is before it ends, in a bounded number of lines; on a terminal a run's bar counts
ended requests."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys

import pytest

from sim.progress import Progress, RequestProgress
from tests.sweep_support import GRIDS, REPO

LINE = re.compile(
    r"^(?P<name>.+?): (?P<done>\d+)/(?P<total>\d+) runs \(\d+%\): (?P<reused>\d+) reused, "
    r"(?P<computed>\d+) computed, (?P<failed>\d+) failed; .+, ETA .+$"
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_a_line_every_five_percent_or_thirty_seconds_with_an_eta():
    stream, clock = io.StringIO(), Clock()
    shown = Progress("grid", 100, reused=20, stream=stream, clock=clock)
    for i in range(4):  # 4 runs in 40 s: one line at 30 s (not yet 5%)
        clock.now += 10
        shown.update(failed=i == 0)
    for _ in range(5):  # 5 quick runs: a line at 5 runs since the last
        clock.now += 0.1
        shown.update()
    lines = stream.getvalue().splitlines()
    assert lines == [
        "grid: 20/100 runs (20%): 20 reused, 0 computed, 0 failed; 0 s, ETA ?",
        "grid: 23/100 runs (23%): 20 reused, 2 computed, 1 failed; 30 s, ETA 12 min 50 s",
        "grid: 28/100 runs (28%): 20 reused, 7 computed, 1 failed; 40 s, ETA 6 min 04 s",
    ]
    shown.close()  # the last line says where it ended
    assert stream.getvalue().splitlines()[-1].startswith("grid: 29/100 runs (29%)")


def test_quiet_shows_nothing_and_a_finished_count_ends_with_done():
    stream = io.StringIO()
    quiet = Progress("grid", 10, show=False, stream=stream)
    quiet.update()
    quiet.close()
    assert stream.getvalue() == ""
    shown = Progress("grid", 2, stream=stream, clock=Clock())
    shown.update()
    shown.update()
    shown.close()
    assert stream.getvalue().splitlines()[-1].endswith("ETA done")


def test_a_sweep_with_stderr_in_a_file_leaves_progress_lines_in_it(smoke_results, tmp_path):
    """Half the smoke runs copied from a finished sweep: the logged sweep reuses those, runs
    the rest, and its log counts both."""
    reference = smoke_results("k_sweep_smoke")
    out = tmp_path / "logged"
    runs = sorted(p for p in (reference / "runs").iterdir())
    for folder in runs[: len(runs) // 2]:
        shutil.copytree(folder, out / "runs" / folder.name)
    log = tmp_path / "stderr.log"
    with log.open("w") as stderr:
        process = subprocess.run(
            [sys.executable, "-m", "sim", "sweep", str(GRIDS / "k_sweep_smoke.yaml"), "--jobs", "2", "--out", str(out)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            timeout=600,
        )
    assert process.returncode == 0, log.read_text()
    lines = [m.groupdict() for m in map(LINE.match, log.read_text().splitlines()) if m]
    assert len(lines) >= 3, log.read_text()  # the start, at least one 5% step, the end
    total, reused = len(runs), len(runs) // 2
    assert {line["name"] for line in lines} == {"k_sweep_smoke"}
    assert all(int(line["total"]) == total and int(line["reused"]) == reused for line in lines)
    assert int(lines[0]["done"]) == reused and int(lines[-1]["done"]) == total
    assert int(lines[-1]["computed"]) == total - reused and lines[-1]["failed"] == "0"
    assert [int(line["done"]) for line in lines] == sorted(int(line["done"]) for line in lines)


def test_a_capacity_search_logs_its_runs_and_counts_the_bisection_left(tmp_path, monkeypatch, capsys):
    from sim.config import load_config
    from sim.sweep.capacity import parse_slo, search_capacity
    from sim.sweep.execution import Execution
    from tests.sweep_support import fake_run_cell

    monkeypatch.setattr("sim.sweep.cell.run_cell", fake_run_cell(lambda c: c.workload.arrival.rate / 10))
    config = load_config(base={"workload": {"num_requests": 10, "arrival": {"rate": 3.0}}})
    slo = parse_slo("prefill_latency.p99<=1.0")
    result = search_capacity(config, [slo], tmp_path, seeds=2, tolerance=0.01, execution=Execution(jobs=1, progress=True))
    lines = [m.groupdict() for m in map(LINE.match, capsys.readouterr().err.splitlines()) if m]
    runs = 2 * len(result.points)
    assert lines and lines[-1]["done"] == lines[-1]["total"] == str(runs)
    assert lines[-1]["computed"] == str(runs) and lines[-1]["reused"] == "0"
    # once bracketed, the total counts the bisection steps still to come
    assert any(int(line["total"]) > int(line["done"]) + 2 for line in lines)


REQUEST_LINE = re.compile(
    r"^small: (?P<done>\d+)/(?P<total>\d+) requests \((?P<share>\d+)%\): (?P<simulated>[\d,]+) simulated s; .+, ETA .+$"
)
RUN = "name: small\ncluster: {instances: 2}\nscheduler: {name: llumnix}\nworkload: {source: synthetic, num_requests: 2000, arrival: {rate: 20.0}}\n"


def test_a_run_with_stderr_in_a_file_logs_ended_requests_in_a_few_lines_and_the_same_results(tmp_path):
    """A bar forced into a log wrote ~8,000 redraws; now a line per 5% of the requests (or
    30 s), counting those that ended, so the count reaches the total only once the run has
    drained; and showing progress changes nothing the run writes."""
    config = tmp_path / "small.yaml"
    config.write_text(RUN)
    for flags, name in (([], "logged"), (["--quiet"], "quiet")):
        with (tmp_path / f"{name}.log").open("w") as stderr:
            process = subprocess.run(
                [sys.executable, "-m", "sim", "run", str(config), "--no-plots", "--out", str(tmp_path / name), *flags],
                cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=300,
            )
        assert process.returncode == 0, (tmp_path / f"{name}.log").read_text()
    log = (tmp_path / "logged.log").read_text().splitlines()
    lines = [m.groupdict() for m in map(REQUEST_LINE.match, log) if m]
    assert len(lines) == len(log) and 3 <= len(lines) <= 22, log  # the start, each 5%, the end
    done = [int(line["done"]) for line in lines]
    summary = json.loads((tmp_path / "logged" / "summary.json").read_text())
    ended = summary["requests"]["finished"] + summary["requests"]["aborted"]
    assert done == sorted(done) and done[-1] == ended == int(lines[-1]["total"]) == 2000
    assert all(d < ended for d in done[:-1]) and log[-1].endswith("ETA done")
    simulated = [float(line["simulated"].replace(",", "")) for line in lines]
    assert simulated == sorted(simulated) and simulated[-1] == pytest.approx(summary["simulation"]["simulated_seconds"], abs=1)
    assert (tmp_path / "quiet.log").read_text() == ""
    for table in ("requests.csv", "instances.csv", "migrations.csv"):
        assert (tmp_path / "logged" / table).read_bytes() == (tmp_path / "quiet" / table).read_bytes(), table


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_a_runs_bar_counts_ended_requests_not_simulated_time():
    stream = Terminal()
    shown = RequestProgress("small", 100, stream=stream)
    shown.advance(10, now=500.0)  # all arrived by now, most still running
    assert shown.bar is not None and (shown.bar.n, shown.bar.total) == (10, 100)
    shown.advance(10, now=600.0)  # none ended since: the bar stays
    assert shown.bar.n == 10 and shown.simulated == 600.0
    shown.advance(100, now=900.0)
    shown.close()
    assert shown.bar.n == 100 and "100/100" in stream.getvalue()
