"""What a run shows of itself: a stall description and progress to the watchdog, the check
that a drained run left nothing behind, and, at the end, the ``SimulationResult``.

Read-only functions of a ``Simulation``'s state, kept apart from the kernel that changes it.
They read it through ``Simulation``'s shape (the protocol below), so that this module does
not import the kernel that imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol

import simpy

from sim.config import SimulationConfig
from sim.engine import prefix_result, stall_result  # noqa: F401  (their sections: their state lives below the engine)
from sim.engine.faults import FaultInjector
from sim.engine.instances import InstanceRuntime, StepLog
from sim.engine.kernel import Kernel
from sim.engine.migrations import MigrationLauncher
from sim.engine.result import LoadSample, SimulationResult
from sim.engine.scaling import Scaler
from sim.engine.sections import collect_sections
from sim.engine.setup import InstancePool
from sim.instance.request import Request

if TYPE_CHECKING:
    from sim.workload.build import Workload


class Simulation(Protocol):
    """What of ``sim.engine.simulation.Simulation`` a run's inspection reads."""

    config: SimulationConfig
    env: simpy.Environment
    workload: "Workload"
    pools: dict[str, InstancePool]
    instances: dict[int, InstanceRuntime]
    live: dict[int, InstanceRuntime]
    steps: StepLog
    requests: list[Request]
    load_samples: list[LoadSample]
    migrations: MigrationLauncher
    scaler: Optional[Scaler]  # None without auto-scaling
    faults: FaultInjector
    kernel: Kernel  # the requests' endings


def progress(run: "Simulation") -> tuple[int, int, int, int]:
    """Changes whenever a request moves on: arrives, gains a token, migrates or ends. A
    migration that aborts moves nothing (endless refused or failed copies are a stall), and
    neither does a batch that computes a prompt again and again with no token coming of it
    (a prompt preempted each time it is part-way through). Summed at each watchdog round
    only, a quarter of the stall span apart."""
    tokens = sum(request.generated for request in run.requests)
    return run.kernel.done_count, len(run.requests), tokens, run.migrations.committed


def ended(run: "Simulation") -> int:
    """Requests finished or aborted so far."""
    return run.kernel.done_count


def pending(run: "Simulation") -> int:
    """Requests arrived and not ended."""
    return len(run.requests) - run.kernel.done_count


def instance_state(run: "Simulation", instance_id: int) -> str:
    llumlet = run.instances[instance_id].llumlet
    if llumlet.status.failed:
        return "failed"
    if instance_id not in run.live:
        return "removed"
    return "draining" if llumlet.status.draining else "serving"


def describe_stuck(run: "Simulation", shown: int = 10) -> str:
    """The pending requests (the first ``shown``), where each is, and the live instances."""
    stuck = [r for r in run.requests if not run.kernel.done[r.id]]
    parts = []
    for request in stuck[:shown]:
        where = request.instance
        place = "" if where is None else f" on instance {where} ({instance_state(run, where)})"
        parts.append(f"request {request.id} {request.state.value}{place}")
    more = f" and {len(stuck) - shown} more" if len(stuck) > shown else ""
    live = ", ".join(f"{i} ({instance_state(run, i)})" for i in run.live) or "none"
    return f"{len(stuck)} pending: {', '.join(parts)}{more}; live instances: {live}"


def check_all_ended(run: "Simulation") -> None:
    """Invariant of a run that drained: every request is finished or aborted, and no
    instance, live or removed, still holds one."""
    unended = [r.id for r in run.requests if not r.done]
    held = [i for i, r in run.instances.items() if not r.llumlet.is_empty]
    if unended or held:
        raise AssertionError(
            f"run drained with requests {unended[:10]} not ended and instances {held} not empty"
        )


def result(run: "Simulation", wall_seconds: float, interrupted: bool) -> SimulationResult:
    end = run.env.now
    lifetimes = {
        instance_id: (runtime.started_at, end if runtime.stopped_at is None else runtime.stopped_at)
        for instance_id, runtime in run.instances.items()
    }
    live_keys = run.migrations.live_reservation_keys()
    watch = run.steps.idle_watch
    return SimulationResult(
        config=run.config,
        requests=run.requests,
        load_samples=run.load_samples,
        instance_lifetimes=lifetimes,
        instance_pools={i: runtime.pool.name for i, runtime in run.instances.items()},
        end_time=end,
        wall_seconds=wall_seconds,
        capacity_blocks=next(iter(run.pools.values())).limits.capacity_blocks,  # the first pool's
        workload_description=run.workload.description,
        urgency=run.workload.urgency,
        interrupted=interrupted,
        not_arrived=len(run.workload) - len(run.requests),
        batches=run.steps.batches,
        batch_log=run.steps.batch_log,
        leaked_blocks=sum(r.llumlet.leaked_blocks(live_keys) for r in run.instances.values()),
        idle_stretches=watch.stretches if watch is not None else 0,
        stale_idle_seconds=watch.stale_idle_seconds if watch is not None else 0.0,
        instance_busy_seconds={i: runtime.busy_seconds for i, runtime in run.instances.items()},
        sections=collect_sections(run),
    )
