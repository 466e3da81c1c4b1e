"""Carrying out the auto-scaler's decisions: scale out after a cold start, drain, remove.

The policy (when to act) is ``sim.cluster.autoscaler``; this module only applies it to the
running simulation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from sim.cluster.autoscaler import SCALE_IN, SCALE_OUT, drain_candidate
from sim.instance.load import LoadReport

if TYPE_CHECKING:
    from sim.engine.simulation import Simulation


def autoscale(simulation: "Simulation", now: float, reports: Mapping[int, LoadReport]) -> None:
    """Ask the auto-scaler once per load report round and act on its answer."""
    serving = {i: r for i, r in reports.items() if not r.draining}
    action = simulation.autoscaler.decide(now, serving, simulation.starting)
    if action == SCALE_OUT:
        simulation.starting += 1
        simulation.scaling_log.append((now, SCALE_OUT, -1))
        simulation.env.process(_scale_out(simulation, now))
    elif action == SCALE_IN:
        drain(simulation, drain_candidate(serving))


def _scale_out(simulation: "Simulation", decided_at: float):
    """A new instance serves after the cold start; it is paid for from the decision."""
    yield simulation.env.timeout(simulation.config.autoscale.cold_start)
    simulation.starting -= 1
    instance_id = simulation.add_instance(billed_from=decided_at)
    simulation.scaling_log.append((simulation.env.now, "ready", instance_id))


def drain(simulation: "Simulation", instance_id: int) -> None:
    """Scale-in: no more dispatches; a fake request of infinite usage makes the instance a
    migration source until it is empty (without migration its requests simply finish)."""
    simulation.instances[instance_id].llumlet.draining = True
    simulation.scheduler.remove_instance(instance_id)
    simulation.scaling_log.append((simulation.env.now, SCALE_IN, instance_id))


def remove_drained(simulation: "Simulation") -> None:
    """Remove draining instances that hold nothing and move nothing any more."""
    for runtime in simulation.live_instances():
        llumlet = runtime.llumlet
        if llumlet.draining and llumlet.is_empty and not llumlet.migrating:
            simulation.stop_instance(llumlet.id)
            simulation.scaling_log.append((simulation.env.now, "removed", llumlet.id))
