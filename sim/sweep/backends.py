"""Where runs execute: a local pool of long-lived worker processes, or Ray tasks.

Both take the same tasks (store key, config, tables to keep, the runs sharing its
simulation) and yield (key, summary) as runs finish, in any order — or (key, ``RunError``) for a run that met bad input only while
running (a trace row) or that the watchdog stopped, so one failed cell does not stop the
others; workers only compute and return, the driver alone writes. A worker imports the
simulator once and keeps its replica models warm across runs (``sim.sweep.cell``).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any, Iterator, NamedTuple, Sequence, Union

from sim.config import ConfigError, SimulationConfig
from sim.engine.watchdog import SimulationStalled

BACKENDS = ("local", "ray")
# Ray: a task whose worker dies (killed, out of memory) runs again this many times, then its
# runs are stored as failed, naming why; with no task ending for WATCH_SECONDS, a probe task
# that needs no CPU must start within PROBE_SECONDS, or Ray cannot start workers (a memory
# cap, a broken node) and every run still waiting is failed rather than waited on for ever
RAY_RETRIES = 2
WATCH_SECONDS = 60.0
PROBE_SECONDS = 60.0


class Task(NamedTuple):
    """One simulation: the run ``key`` of ``config``, and the ``shared`` runs (key, config)
    answered by the same simulation relabelled (``sim.sweep.sharing``)."""

    key: str
    config: SimulationConfig
    tables: tuple[str, ...]
    shared: tuple[tuple[str, SimulationConfig], ...] = ()

    @property
    def keys(self) -> list[str]:
        return [self.key, *(key for key, _ in self.shared)]


class RunError(NamedTuple):
    """Why a run has no result: ``kind`` is ``error`` (a ConfigError met while running, such
    as a bad trace row) or ``stalled`` (the watchdog stopped it); ``reason`` is its line."""

    kind: str
    reason: str


Outcome = Union[dict[str, Any], RunError]  # a run's summary, or why there is none


def run_task(task: Task) -> list[tuple[str, Outcome]]:
    """Executed in a worker: one simulation through the simulator adapter, the outcome of
    each run it answers (a failed simulation fails them all)."""
    from sim.sweep import cell

    try:
        if not task.shared:
            return [(task.key, cell.run_cell(task.config, task.tables))]
        configs = [task.config, *(config for _, config in task.shared)]
        return list(zip(task.keys, cell.run_shared(configs, task.tables)))
    except ConfigError as exc:  # the message names the key; the driver adds the cell
        return [(key, RunError("error", str(exc))) for key in task.keys]
    except SimulationStalled as exc:
        return [(key, RunError("stalled", str(exc))) for key in task.keys]


def default_jobs() -> int:
    """All cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _worker_init() -> None:
    """Workers leave Ctrl-C to the driver, and die with it (Linux) rather than linger."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def run_local(tasks: Sequence[Task], jobs: int) -> Iterator[tuple[str, Outcome]]:
    """A pool of ``jobs`` long-lived processes (forked: the imports are already done)."""
    import multiprocessing

    # fork where available: workers start with the driver's imports and warm replica models
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    if method == "fork":
        from sim.sweep.cell import warm

        ready = []
        for task in tasks:
            try:
                warm(task.config)
                ready.append(task)
            except ConfigError as exc:  # its replica model cannot load: its runs fail alone
                for key in task.keys:
                    yield key, RunError("error", str(exc))
        tasks = ready
    if not tasks:
        return
    pool = multiprocessing.get_context(method).Pool(min(jobs, len(tasks)), _worker_init)
    try:
        for outcomes in pool.imap_unordered(run_task, tasks, chunksize=1):
            yield from outcomes
        pool.close()
    finally:
        pool.terminate()
        pool.join()


def run_ray(
    tasks: Sequence[Task], jobs: int | None, address: str | None = None
) -> Iterator[tuple[str, Outcome]]:
    """The same runs as Ray tasks, on a local Ray (``jobs`` CPUs, default all cores) or the
    cluster at ``address`` (at most ``jobs`` runs at a time, default as many as it has CPUs).

    On a local Ray the workers import the driver's checkout (``PYTHONPATH``), so both run the
    same code; cluster nodes need llumsim installed at the same version, with the traces.
    """
    try:
        import ray
    except ImportError:
        raise ConfigError("--backend ray: ray is not installed (pip install -e '.[ray]')") from None
    if not tasks:
        return
    started = not ray.is_initialized()
    if started:
        options: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False)
        if address is None:
            import sim

            root = str(Path(sim.__file__).resolve().parents[1])
            path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
            options.update(
                num_cpus=jobs or default_jobs(), runtime_env={"env_vars": {"PYTHONPATH": path}}
            )
        else:
            options.update(address=address)
        try:
            ray.init(**options)
        except Exception as exc:  # Ray's own start (a node that timed out, an address refused)
            why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConfigError(f"--backend ray: Ray did not start ({why})") from None
    remote = ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(run_task)
    pending: dict[Any, Task] = {}
    queue = list(tasks)
    slots = jobs or int(ray.cluster_resources().get("CPU", 1))
    window = 2 * max(slots, 1)  # enough queued that no worker waits, few enough to cancel
    try:
        while queue or pending:
            while queue and len(pending) < window:
                task = queue.pop(0)
                pending[remote.remote(task)] = task
            done, _ = ray.wait(list(pending), num_returns=1, timeout=WATCH_SECONDS)
            if not done and not _workers_start(ray):
                reason = f"Ray started no worker in {PROBE_SECONDS:g} s (out of memory, or a node that cannot start them)"
                for task in [*pending.values(), *queue]:
                    yield from ((key, RunError("error", reason)) for key in task.keys)
                return
            for ref in done:
                task = pending.pop(ref)
                yield from _outcomes(ray, ref, task)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()


def _outcomes(ray: Any, ref: Any, task: Task) -> list[tuple[str, Outcome]]:
    """A finished Ray task's outcomes; a task whose worker died on every try fails its runs,
    saying so (its simulation's own errors come back as values, never raised)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        reason = f"its Ray worker died on each of {RAY_RETRIES + 1} tries ({type(exc).__name__}: {why})"
        return [(key, RunError("error", reason)) for key in task.keys]


def _pid() -> int:
    return os.getpid()


def _workers_start(ray: Any) -> bool:
    """Whether Ray can start a worker now: a task needing no CPU (so none of the busy slots)
    returns within ``PROBE_SECONDS``."""
    probe = ray.remote(num_cpus=0, max_retries=0)(_pid).remote()
    ready, _ = ray.wait([probe], timeout=PROBE_SECONDS)
    if not ready:
        ray.cancel(probe, force=True)
    return bool(ready)


def execute(
    tasks: Sequence[Task],
    backend: str = "local",
    jobs: int | None = None,
    address: str | None = None,
) -> Iterator[tuple[str, Outcome]]:
    """Run ``tasks`` on ``backend``; yields (key, summary or RunError) as each finishes."""
    if jobs is not None and jobs < 1:
        raise ConfigError(f"--jobs: must be >= 1, got {jobs}")
    if backend == "local":
        if address is not None:
            raise ConfigError("--address: only the ray backend connects to a cluster")
        return run_local(tasks, jobs or default_jobs())
    if backend == "ray":
        return run_ray(tasks, jobs, address)
    raise ConfigError(f"--backend: unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
