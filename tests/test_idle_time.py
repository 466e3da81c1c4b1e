"""Idle stretches cost nothing: while the cluster has nothing to do the tick sleeps — no
report round, job or time-series row — and resumes on its own grid of times, so long think
times and trace gaps run in time and memory bounded by the work, not by the span, and the
requests are served exactly as a tick that never slept would serve them."""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sim.engine.simulation as simulation_module
from sim.config import load_config
from sim.engine import Simulation
from sim.engine.kernel import delay_to, grid_after
from sim.metrics import request_table

REPO = Path(__file__).resolve().parents[1]
SESSIONS = REPO / "experiments" / "configs" / "sessions.yaml"
DAY = 86_400.0


def test_the_grid_after_a_sleep_is_the_one_the_tick_adds_up_step_by_step():
    """The tick adds its interval to the last tick's time; a sleeping tick must land on
    those very floats (an ulp off reorders events that tie), over spans long enough to
    need several chunks."""
    for start, step, until in [(0.0, 0.05, 7.3), (0.1, 0.05, 1234.5678), (3.0, 0.001, 2_500.0), (5.0, 0.3, 5.0)]:
        time, before = start, 0
        while time < until:
            time += step
            before += 1
        assert grid_after(start, step, until) == (time, before)
    rng = np.random.default_rng(0)
    exact = 0
    drawn = zip(rng.uniform(0, 1e6, 400).tolist(), rng.uniform(0, 1e6, 400).tolist())
    edges = [(1e6, 1e6), (1e6, math.nextafter(1e6, math.inf)), (0.1, 1e6), (999_999.9, 1e6)]
    for now, when in [*drawn, *edges]:
        now, when = min(now, when), max(now, when)
        delay = delay_to(now, when)
        # never early (a float sum that cannot hit ``when`` lands on the float after it)
        assert now + delay in (when, math.nextafter(when, math.inf))
        exact += now + delay == when
    assert exact > 300


def _sessions(think: float, conversations: int, overrides: tuple[str, ...] = ()):
    return load_config(
        SESSIONS,
        [
            f"workload.num_requests={conversations}",
            f"workload.sessions.think_time={think}",
            "cluster.instances=2",
            "output.plots=false",
            "output.progress=false",
            *overrides,
        ],
    )


@pytest.mark.parametrize("reports", ["per-step", "periodic"])
def test_a_sleeping_tick_serves_every_request_as_a_ticking_one(monkeypatch, reports):
    """Conversations whose think time (mean 1,000 s) leaves the cluster idle between turns,
    under Llumnix with pairing on its report cadence: the request table is byte-identical
    whether the tick sleeps through the idle stretches or ticks through them, and the
    sleeping run records no sample inside a stretch."""
    config = _sessions(1000.0, 6, (f"scheduler.reports={reports}",))
    sleeping = Simulation(config).run()

    monkeypatch.setattr(simulation_module, "cluster_idle", lambda parts: lambda: False)
    ticking = Simulation(config).run()

    assert request_table(sleeping).equals(request_table(ticking))
    assert len(sleeping.load_samples) < len(ticking.load_samples) / 20
    busy = [(r.arrival, r.finish_time) for r in sleeping.requests]
    busy_until = np.maximum.accumulate([end for _, end in sorted(busy)])
    starts = sorted(start for start, _ in busy)
    for before, after in zip(busy_until[:-1], starts[1:]):
        # no sample strictly inside an idle stretch, past the first tick that found it idle
        inside = [s.time for s in sleeping.load_samples if before + 1.0 < s.time < after]
        assert not inside, (before, after, inside[:3])


def _capped(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS caps the address space on Linux")
def test_a_day_long_think_time_runs_in_a_process_capped_at_2_gib(tmp_path):
    """60 conversations with a day of think time between turns: ticking through the days
    recorded a sample per second and ran out of memory (the issue's MemoryError). Under a
    2-GiB cap it ends, with a time series that holds rows for the work, not for the span."""
    done = subprocess.run(
        [
            sys.executable, "-m", "sim", "run", str(SESSIONS), "--out", str(tmp_path), "--quiet", "--no-plots",
            "--set", "workload.num_requests=60", "--set", f"workload.sessions.think_time={DAY}",
            "--set", "cluster.instances=4",
        ],
        capture_output=True, text=True, cwd=REPO, timeout=300, preexec_fn=lambda: _capped(2 << 30),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["requests"]["finished"] > 60  # later turns came, a day apart
    span = summary["simulation"]["simulated_seconds"]
    assert span > 5 * DAY
    cluster = pd.read_csv(tmp_path / "cluster.csv")
    assert len(cluster) < span / 100  # a sample a second over the span would be > 400,000
