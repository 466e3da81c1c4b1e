"""The Ray backend watches its workers: a task whose worker dies is tried again a bounded
number of times and then its runs are stored as failed, naming why; and when no worker can
start at all the sweep ends with its runs failed instead of waiting for ever (the issue's
sweep under a memory cap). Ray is in the ``test`` extra: these run wherever the suite does."""

from __future__ import annotations

import json
import os
import signal
import threading

import psutil
import pytest

from sim.cli.main import main
from sim.sweep import backends
from tests.sweep_support import REPO

GRID = f"""name: ray_deaths
base: {REPO}/experiments/configs/quickstart.yaml
set: {{workload.num_requests: 10, cluster.instances: 1, output.plots: false}}
seeds: 2
"""


class WorkerKiller:
    """Kills (SIGKILL) every Ray worker process this test's Ray started, as they appear once
    Ray is up: ``busy`` only those running a task, else every worker (none can start)."""

    def __init__(self, busy: bool) -> None:
        self.busy = busy
        self.killed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _is_worker(self, process: psutil.Process) -> bool:
        try:
            line = " ".join(process.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return False
        if self.busy:
            return "ray::run_task" in line
        return "default_worker.py" in line or line.startswith(("ray::IDLE", "ray::run_task", "ray::_pid"))

    def _loop(self) -> None:
        import ray

        me = psutil.Process()
        while not self._stop.wait(0.05):
            if not ray.is_initialized():  # Ray's own start needs its first workers
                continue
            for process in me.children(recursive=True):
                if self._is_worker(process):
                    try:
                        os.kill(process.pid, signal.SIGKILL)
                        self.killed += 1
                    except ProcessLookupError:
                        pass

    def __enter__(self) -> "WorkerKiller":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.parametrize("busy", [True, False], ids=["workers killed mid-run", "no worker can start"])
def test_a_ray_sweep_whose_workers_are_killed_ends_naming_why(busy, tmp_path, capsys, monkeypatch):
    import ray  # noqa: F401  (in the test extra: this test must run, not skip)

    monkeypatch.setattr(backends, "WATCH_SECONDS", 3.0)
    monkeypatch.setattr(backends, "PROBE_SECONDS", 3.0)
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID)
    out = tmp_path / "out"
    with WorkerKiller(busy) as killer:
        code = main(["sweep", str(grid), "--backend", "ray", "--jobs", "1", "--out", str(out), "--quiet"])
    assert killer.killed > 0
    assert code == 1  # ran; its runs are stored as failed, each naming why
    err = capsys.readouterr().err
    assert "Ray worker died on each of 3 tries" in err or "Ray started no worker in 3 s" in err
    reasons = [json.loads(path.read_text())["reason"] for path in out.rglob("failed.json")]
    assert len(reasons) == 2 and all("Ray" in reason for reason in reasons)
