"""Auto-scaling: draining empties and removes an instance, scale-out is used at once, and
the sustain period keeps a steady load from making the cluster oscillate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.cluster.scaling import SCALE_IN, SCALE_OUT, ScalingDecision, SustainedBand
from sim.config import AutoscaleConfig
from sim.engine import Simulation
from sim.engine.migrations import MIGRATIONS
from sim.engine.scaling import SCALING_LOG
from sim.instance.load import LoadReport
from sim.instance.request import RequestState
from sim.metrics import instance_table
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload
from tests.reports import make_report


def drain_at(simulation: Simulation, when: float, instance_id: int) -> list[int]:
    """Drain ``instance_id`` at ``when``; the ids of the requests it held then."""
    simulation.run_until(when)
    held = [r.id for r in simulation.requests if r.instance == instance_id and not r.done]
    simulation.drain(instance_id)
    return held


@pytest.mark.parametrize("scheduler", ["llumnix", "infaas++"])
def test_a_draining_instance_empties_is_removed_and_loses_nothing(scheduler):
    n = 40
    simulation = Simulation(
        make_config(cluster={"instances": 2}, scheduler={"name": scheduler}),
        LinearTimer(),
        make_workload([0.1 * i for i in range(n)], [200] * n, [300] * n),
        transfer=make_transfer(),
        check_every_step=True,
    )
    held = drain_at(simulation, 1.0, 1)
    result = simulation.run()
    assert held, "the drained instance held requests"
    _, stopped_at = result.instance_lifetimes[1]
    assert stopped_at < result.end_time and not simulation.is_alive(1)
    assert all(r.state is RequestState.FINISHED for r in result.requests)
    arrived_later = [r for r in result.requests if r.arrival > 1.0]
    assert all(r.instances[0] == 0 for r in arrived_later)  # no dispatch after the drain began
    moved = [result.requests[i] for i in held]
    if scheduler == "llumnix":
        # the fake request of infinite usage makes it a migration source until it is empty
        assert any(r.instances[-1] == 0 for r in moved)
        assert stopped_at < max(r.finish_time for r in moved)
    else:
        # without migration its requests finish where they are, then it goes
        assert all(r.instances == [1] for r in moved)
        assert stopped_at >= max(r.finish_time for r in moved)
    assert result.leaked_blocks == 0


def test_a_scaled_out_instance_gets_dispatches_and_migrations_before_older_ones_idle():
    n = 400
    rng = np.random.default_rng(5)
    arrival = np.cumsum(rng.exponential(1 / 6.0, n))
    simulation = Simulation(
        make_config(
            cluster={"instances": 1},
            scheduler={"name": "llumnix"},
            autoscale={
                "enabled": True,
                "rule": "sustained-band",
                "sustain": 2.0,
                "max_instances": 3,
                "cold_start": 5.0,
            },
        ),
        LinearTimer(),
        make_workload(arrival, np.full(n, 300), np.full(n, 300)),
        transfer=make_transfer(),
    )
    result = simulation.run()
    ready = [(e.time, e.instance) for e in SCALING_LOG.of(result) if e.action == "ready"]
    assert ready, "the load must trigger a scale-out"
    ready_at, new_id = ready[0]
    decided = min(e.time for e in SCALING_LOG.of(result) if e.action == SCALE_OUT)
    assert ready_at == pytest.approx(decided + 5.0)  # the cold start is honoured
    first_dispatch = min(r.arrival for r in result.requests if r.instances[0] == new_id)
    first_inbound = min(m.start for m in MIGRATIONS.of(result) if m.destination == new_id)
    samples = instance_table(result)
    idle = samples[
        (samples["instance"] < new_id)
        & (samples["time"] > ready_at)
        & (samples["running"] == 0)
        & (samples["queue_length"] == 0)
    ]["time"]
    older_idle = idle.min() if len(idle) else math.inf
    assert first_dispatch < older_idle and first_inbound < older_idle
    assert first_dispatch - ready_at < 1.0 and first_inbound - ready_at < 1.0


def _report(freeness_normal: float, instance_id: int = 0, running: int = 1) -> LoadReport:
    """A report whose F_normal is ``freeness_normal`` (851 blocks, ``running`` requests;
    whole blocks, so ``freeness_normal * running`` must be whole)."""
    used = 851 - round(freeness_normal * running)
    assert (851 - used) / running == freeness_normal
    return make_report(instance_id=instance_id, capacity_blocks=851, used_blocks=used, num_running=running)


def test_the_decision_waits_for_the_sustain_period_and_restarts_after_acting():
    scaler = SustainedBand(AutoscaleConfig(enabled=True, low=10, high=60, sustain=5.0, max_instances=4))
    low = {0: _report(2.0), 1: _report(4.0, 1)}
    assert scaler.decide(0.0, low, 2, 0) is None
    assert scaler.decide(4.9, low, 2, 0) is None
    assert scaler.decide(5.0, low, 2, 0) == ScalingDecision(SCALE_OUT, count=1)
    assert scaler.decide(6.0, low, 2, 0) is None  # the timer restarted after acting
    middle = {0: _report(30.0)}
    assert scaler.decide(12.0, middle, 1, 0) is None
    # instance 1 runs fewer requests: it is the one drained
    high = {0: _report(100.0, 0, running=3), 1: _report(100.0, 1, running=2)}
    assert scaler.decide(20.0, high, 2, 0) is None
    assert scaler.decide(24.0, high, 2, 1) is None  # no scale-in while an instance is starting
    assert scaler.decide(25.0, high, 2, 0) == ScalingDecision(SCALE_IN, instance=1)


def _steady_run(sustain: float) -> list:
    n = 2000
    rng = np.random.default_rng(3)
    arrival = np.cumsum(rng.exponential(1 / 4.0, n))
    simulation = Simulation(
        make_config(
            cluster={"instances": 4},
            scheduler={"name": "llumnix"},
            autoscale={"enabled": True, "rule": "sustained-band", "sustain": sustain},
            time_limit=400.0,
        ),
        LinearTimer(),
        make_workload(arrival, np.full(n, 256), np.full(n, 256)),
        transfer=make_transfer(),
    )
    return [e.action for e in SCALING_LOG.of(simulation.run()) if e.action in (SCALE_IN, SCALE_OUT)]


def test_a_steady_load_inside_the_band_does_not_make_the_cluster_oscillate():
    actions = _steady_run(sustain=10.0)
    assert len(actions) <= 8, actions
    # the bound is not vacuous: acting on every report oscillates scale-out/scale-in
    assert len(_steady_run(sustain=0.0)) > 100


def test_queue_aware_signal_scales_out_for_a_queue_that_f_normal_cannot_see():
    # plenty of free blocks per running request, but a long queue waiting behind them
    report = make_report(
        capacity_blocks=851, used_blocks=300, num_running=4, num_waiting=20, waiting_demand_blocks=700, head_demand_blocks=200
    )
    blind = SustainedBand(AutoscaleConfig(enabled=True, sustain=0.0))
    aware = SustainedBand(AutoscaleConfig(enabled=True, sustain=0.0, queue_aware=True))
    assert blind.decide(0.0, {0: report}, 1, 0) is None  # F_normal 137.75: "too free" (and at the minimum)
    assert aware.decide(0.0, {0: report}, 1, 0) == ScalingDecision(SCALE_OUT)
