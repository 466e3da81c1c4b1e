"""Fault injection: each configured fault is a process that breaks something on time.

* ``scheduler_down``: from ``start`` to ``end`` the global scheduler is away. Frontends
  dispatch round-robin (or at random) over the live instances; no migration pairing, no
  scaling. At ``end`` it comes back and schedules from fresh load reports.
* ``instance_failure``: at ``at`` the instance dies with everything on it; its requests are
  aborted (or, with ``on_failure: retry``, dispatched again from scratch); migrations that
  touch it abort through the handshake. With ``restart_after``, a fresh instance with zero
  load joins that many seconds later.
* ``transfer_failure``: every migration stage in [start, end] fails with ``probability``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from sim.config import ConfigError, FaultConfig
from sim.instance.request import Request, RequestState

if TYPE_CHECKING:
    from sim.engine.simulation import Simulation

ABORT_INSTANCE_FAILED = "instance_failed"


def inject_faults(simulation: "Simulation") -> None:
    """Start one process per configured fault."""
    for index, fault in enumerate(simulation.config.faults):
        if fault.kind == "scheduler_down":
            simulation.env.process(_scheduler_outage(simulation, fault))
        elif fault.kind == "instance_failure":
            if fault.instance not in simulation.instances:
                raise ConfigError(
                    f"faults[{index}].instance: no instance {fault.instance} at start "
                    f"(the cluster starts with {len(simulation.instances)})"
                )
            simulation.env.process(_instance_failure(simulation, fault))
        else:
            start = 0.0 if fault.start is None else fault.start
            end = math.inf if fault.end is None else fault.end
            simulation.transfer_failure = (fault.probability, start, end)


def _scheduler_outage(simulation: "Simulation", fault: FaultConfig):
    env = simulation.env
    yield env.timeout(fault.start)
    simulation.scheduler_up = False
    simulation.fallback = fault.fallback
    simulation.pairing = {}
    simulation.scheduler.pairs.clear()  # migration stops; in-flight ones finish by themselves
    simulation.fault_log.append((env.now, "scheduler_down", fault.fallback))
    yield env.timeout(fault.end - fault.start)
    # back: start again from fresh load reports, not the ones from before the outage
    simulation.scheduler.reports.clear()
    simulation.scheduler.observe(
        {runtime.llumlet.id: runtime.llumlet.report() for runtime in simulation.live_instances()}
    )
    simulation.scheduler_up = True
    simulation.fault_log.append((env.now, "scheduler_up", ""))


def _instance_failure(simulation: "Simulation", fault: FaultConfig):
    env = simulation.env
    yield env.timeout(fault.at)
    if not simulation.instances[fault.instance].alive:
        simulation.fault_log.append((env.now, "instance_failure_skipped", fault.instance))
        return
    fail_instance(simulation, fault.instance, fault.on_failure)
    if fault.restart_after is not None:
        yield env.timeout(fault.restart_after)
        new_id = simulation.add_instance()
        simulation.fault_log.append((env.now, "instance_restarted", new_id))


def fail_instance(simulation: "Simulation", instance_id: int, on_failure: str = "abort") -> list[Request]:
    """An instance dies with its KV cache: its requests are aborted, or dispatched again
    from scratch (``retry``: progress and first-token time reset, ``retries`` counted)."""
    env = simulation.env
    lost = simulation.instances[instance_id].llumlet.fail()
    simulation.stop_instance(instance_id)
    simulation.fault_log.append((env.now, "instance_failed", instance_id))
    for request in lost:
        if on_failure == "retry":
            request.retries += 1
            request.generated = 0
            request.first_admitted = request.first_token_time = None
            request.preempted_at = None
            if request.migration is not None and request.migration.source == instance_id:
                request.migration = None
            simulation.dispatch(request)
        else:
            request.state = RequestState.ABORTED
            request.abort_reason = ABORT_INSTANCE_FAILED
            request.finish_time = env.now
            simulation.request_done(request)
    return lost


def stage_fails(simulation: "Simulation") -> bool:
    """Draw whether this migration stage's transfer fails (``transfer_failure`` faults)."""
    if simulation.transfer_failure is None:
        return False
    probability, start, end = simulation.transfer_failure
    if not start <= simulation.env.now <= end:
        return False
    return bool(simulation.rng.random() < probability)
