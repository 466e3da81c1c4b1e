"""Fault injection: requests and blocks are conserved, migrations abort cleanly through the
handshake, and scheduling recovers after the fault."""

from __future__ import annotations

import numpy as np

from sim.engine import Simulation
from sim.instance.request import RequestState
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload, placed

ALLOWED_ABORTS = {"instance_failed", "exceeds_instance_limits", "no_live_instance"}


def loaded_run(faults, instances=4, n=600, rate=9.0, seed=11, **sections) -> Simulation:
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1 / rate, n))
    prompts = rng.integers(50, 900, n)
    outputs = rng.integers(50, 600, n)
    return Simulation(
        make_config(
            cluster={"instances": instances, "kv_capacity_blocks": 300},
            scheduler={"name": "llumnix"},
            faults=faults,
            **sections,
        ),
        LinearTimer(capacity_blocks=300),
        make_workload(arrival, prompts, outputs),
        transfer=make_transfer(),
        check_every_step=True,
    )


def assert_conserved(simulation: Simulation, result) -> None:
    """Every request finished or was aborted with a reason; no block left behind."""
    assert len(result.requests) == len(simulation.workload)
    for request in result.requests:
        assert request.state in (RequestState.FINISHED, RequestState.ABORTED)
        if request.state is RequestState.ABORTED:
            assert request.abort_reason in ALLOWED_ABORTS
    assert result.leaked_blocks == 0
    for instance in simulation.live_ids:
        ledger = simulation.llumlet(instance).ledger
        assert ledger.allocated == 0 and ledger.reserved == 0
    assert all(m.outcome in ("committed", "aborted") for m in result.migrations)


def test_scheduler_outage_falls_back_to_round_robin_then_recovers():
    simulation = loaded_run([{"kind": "scheduler_down", "start": 20.0, "end": 40.0}])
    result = simulation.run()
    assert_conserved(simulation, result)
    during = sorted(
        (r for r in result.requests if 20.0 <= r.arrival < 40.0), key=lambda r: (r.arrival, r.id)
    )
    firsts = [r.instances[0] for r in during]
    assert len(during) > 20
    assert all((b - a) % 4 == 1 for a, b in zip(firsts, firsts[1:]))  # round-robin
    started = [m.start for m in result.migrations]
    assert not [t for t in started if 20.0 < t < 40.0]  # migration stops
    assert [t for t in started if t < 20.0] and [t for t in started if t >= 40.0]  # and resumes
    assert [event.event for event in result.fault_log] == ["scheduler_down", "scheduler_up"]


def test_instance_failure_aborts_its_requests_and_everything_else_finishes():
    simulation = loaded_run([{"kind": "instance_failure", "at": 30.0, "instance": 2}])
    result = simulation.run()
    assert_conserved(simulation, result)
    lost = [r for r in result.requests if r.abort_reason == "instance_failed"]
    assert lost and all(r.instance == 2 for r in lost)
    assert all(r.finish_time == 30.0 for r in lost)
    assert all(2 not in r.instances for r in result.requests if r.arrival > 30.0)


def test_instance_failure_with_retry_and_restart_loses_nothing():
    simulation = loaded_run(
        [{"kind": "instance_failure", "at": 30.0, "instance": 2, "on_failure": "retry", "restart_after": 10.0}]
    )
    result = simulation.run()
    assert_conserved(simulation, result)
    assert all(r.state is RequestState.FINISHED for r in result.requests)
    retried = [r for r in result.requests if r.retries]
    assert retried and all(r.generated == r.output_tokens for r in retried)
    assert result.instance_lifetimes[4][0] == 40.0  # the fresh instance with zero load
    assert any(4 in r.instances for r in result.requests if r.arrival > 40.0)


def test_transfer_failures_abort_migrations_through_the_handshake():
    simulation = loaded_run([{"kind": "transfer_failure", "probability": 0.5}])
    result = simulation.run()
    assert_conserved(simulation, result)
    reasons = [m.abort_reason for m in result.migrations if m.outcome == "aborted"]
    assert reasons.count("transfer_failed") >= 5
    assert all(r.state is RequestState.FINISHED for r in result.requests)


def _two_instances(stage_latency: float) -> Simulation:
    config = make_config(
        cluster={"instances": 2, "kv_capacity_blocks": 100}, migration={"prealloc_timeout": 10.0}
    )
    return Simulation(
        config,
        LinearTimer(capacity_blocks=100),
        make_workload([0.0, 0.0], [640, 160], [300, 400]),
        transfer=make_transfer(stage_latency=stage_latency),
        scheduler=placed(config, [0, 1]),
        check_every_step=True,
    )


def test_source_failure_mid_migration_frees_the_destination_reservation_after_the_timeout():
    simulation = _two_instances(stage_latency=4.0)
    destination = simulation.llumlet(1)
    simulation.run_until(1.0)
    record = simulation.migrate(0, 0, 1)
    simulation.run_until(2.0)
    simulation.fail_instance(0)
    simulation.run_until(10.0)  # after the stage, inside the handshake timeout
    orphaned = destination.ledger.reserved
    result = simulation.run()
    assert record.outcome == "aborted" and record.abort_reason == "source_failed"
    # the failure shows at the end of the stage (4 s latency + the copy), then the 10 s timeout
    assert 15.0 < record.end < 15.5
    assert orphaned > 0 and destination.ledger.reserved == 0
    assert result.requests[0].abort_reason == "instance_failed"
    assert result.requests[1].state is RequestState.FINISHED
    assert result.leaked_blocks == 0


def test_destination_failure_mid_migration_leaves_the_request_running_at_the_source():
    simulation = _two_instances(stage_latency=4.0)
    simulation.run_until(1.0)
    record = simulation.migrate(0, 0, 1)
    simulation.run_until(2.0)
    simulation.fail_instance(1)
    result = simulation.run()
    assert record.outcome == "aborted" and record.abort_reason == "destination_failed"
    survivor = result.requests[0]
    assert survivor.state is RequestState.FINISHED and survivor.instances == [0]
    assert 5.0 < record.end < 5.5  # noticed when the stage ends
    assert result.leaked_blocks == 0
