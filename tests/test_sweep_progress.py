"""Progress of sweeps off a terminal: lines in a log every 30 s or 5% (runs done, reused,
failed, ETA), so a sweep logged to a file shows how far it is before it ends."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys

from sim.sweep.progress import Progress
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
    from tests.sweep_support import fake_run_cell

    monkeypatch.setattr("sim.sweep.cell.run_cell", fake_run_cell(lambda c: c.workload.arrival.rate / 10))
    config = load_config(base={"workload": {"num_requests": 10, "arrival": {"rate": 3.0}}})
    slo = parse_slo("prefill_latency.p99<=1.0")
    result = search_capacity(config, [slo], tmp_path, seeds=2, tolerance=0.01, jobs=1, progress=True)
    lines = [m.groupdict() for m in map(LINE.match, capsys.readouterr().err.splitlines()) if m]
    runs = 2 * len(result.points)
    assert lines and lines[-1]["done"] == lines[-1]["total"] == str(runs)
    assert lines[-1]["computed"] == str(runs) and lines[-1]["reused"] == "0"
    # once bracketed, the total counts the bisection steps still to come
    assert any(int(line["total"]) > int(line["done"]) + 2 for line in lines)
