"""Fault injection: requests and blocks are conserved, migrations abort cleanly through the
handshake, and scheduling recovers after the fault."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import simpy

from sim.config import FaultConfig
from sim.engine import Simulation
from sim.engine.faults import FAULT_LOG, FaultInjector
from sim.engine.migrations import MIGRATIONS
from sim.instance.request import RequestState
from sim.metrics import cluster_table, request_table, summarize
from sim.metrics.faults import fault_summary
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
    assert all(m.outcome in ("committed", "aborted") for m in MIGRATIONS.of(result))


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
    started = [m.start for m in MIGRATIONS.of(result)]
    assert not [t for t in started if 20.0 < t < 40.0]  # migration stops
    assert [t for t in started if t < 20.0] and [t for t in started if t >= 40.0]  # and resumes
    assert [event.event for event in FAULT_LOG.of(result)] == ["scheduler_down", "scheduler_up"]


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
    reasons = [m.abort_reason for m in MIGRATIONS.of(result) if m.outcome == "aborted"]
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


# ---------------------------------------------------------------- windows that compose


def test_two_transfer_failure_windows_each_fail_every_stage_inside_them():
    windows = [(20.0, 50.0), (80.0, 110.0)]
    simulation = loaded_run(
        [{"kind": "transfer_failure", "probability": 1.0, "start": a, "end": b} for a, b in windows],
        n=400,
        rate=2.5,
    )
    result = simulation.run()
    assert_conserved(simulation, result)
    for start, end in windows:
        ended_inside = [m for m in MIGRATIONS.of(result) if start <= m.end <= end]
        assert any(m.abort_reason == "transfer_failed" for m in ended_inside)
        assert not [m for m in ended_inside if m.outcome == "committed"]
    committed = [m.committed_at for m in MIGRATIONS.of(result) if m.outcome == "committed"]
    assert [t for t in committed if 50.0 < t < 80.0] and [t for t in committed if t > 110.0]


def test_overlapping_transfer_failure_windows_fail_a_stage_if_any_of_them_does():
    env = simpy.Environment()
    windows = [
        FaultConfig(kind="transfer_failure", probability=0.5, start=0.0, end=10.0),
        FaultConfig(kind="transfer_failure", probability=0.5, start=5.0, end=15.0),
    ]
    injector = FaultInjector(env, windows, actions=None, rng=np.random.default_rng(0))
    shares = {}
    for when in (2.0, 7.0, 12.0, 20.0):
        env.run(until=when)
        shares[when] = np.mean([injector.stage_fails() for _ in range(20_000)])
    assert shares[2.0] == pytest.approx(0.5, abs=0.02)
    assert shares[7.0] == pytest.approx(0.75, abs=0.02)  # 1 - 0.5 * 0.5
    assert shares[12.0] == pytest.approx(0.5, abs=0.02)
    assert shares[20.0] == 0.0


def test_nested_and_overlapping_outages_keep_the_scheduler_away_until_the_last_ends():
    """A: round-robin [20, 60]; B: random [30, 50]; C: round-robin [35, 45]. The fallback is
    the latest open window's; the scheduler comes back when the last one closes."""
    faults = [
        {"kind": "scheduler_down", "start": 20.0, "end": 60.0, "fallback": "round-robin"},
        {"kind": "scheduler_down", "start": 30.0, "end": 50.0, "fallback": "random"},
        {"kind": "scheduler_down", "start": 35.0, "end": 45.0, "fallback": "round-robin"},
    ]
    simulation = loaded_run(faults, n=400, rate=2.5)
    expected = {25.0: "round-robin", 32.0: "random", 40.0: "round-robin", 47.0: "random", 55.0: "round-robin", 65.0: None}
    for when, fallback in expected.items():
        simulation.run_until(when)
        assert simulation.fallback_kind == fallback, when
    result = simulation.run()
    assert_conserved(simulation, result)
    started = [m.start for m in MIGRATIONS.of(result)]
    assert not [t for t in started if 20.0 < t < 60.0]  # no pairing while any window is open
    assert [t for t in started if t >= 60.0]
    assert [(e.time, e.event) for e in FAULT_LOG.of(result)] == [
        (20.0, "scheduler_down"), (30.0, "scheduler_down"), (35.0, "scheduler_down"), (60.0, "scheduler_up")
    ]


@pytest.mark.parametrize("ends", [(40.0, 60.0), (60.0, 40.0)])
def test_the_first_of_two_overlapping_outages_to_end_does_not_bring_the_scheduler_back(ends):
    faults = [
        {"kind": "scheduler_down", "start": 20.0, "end": ends[0]},
        {"kind": "scheduler_down", "start": 30.0, "end": ends[1]},
    ]
    simulation = loaded_run(faults, n=400, rate=2.5)
    simulation.run_until(50.0)
    assert simulation.fallback_kind == "round-robin"
    result = simulation.run()
    assert_conserved(simulation, result)
    assert not [m for m in MIGRATIONS.of(result) if 20.0 < m.start < 60.0]
    assert [e.time for e in FAULT_LOG.of(result) if e.event == "scheduler_up"] == [60.0]


# ---------------------------------------------------------------- recovery


@pytest.mark.parametrize(
    ("fault", "recovery"),
    [
        ({"kind": "instance_failure", "at": 30.0, "instance": 0}, 30.0),  # no restart: [30, 30]
        ({"kind": "instance_failure", "at": 30.0, "instance": 0, "restart_after": 10.0}, 20.0),
        ({"kind": "scheduler_down", "start": 30.0, "end": 45.0}, 15.0),
    ],
)
def test_recovery_is_measured_against_the_pre_fault_window_for_every_kind(fault, recovery):
    """Requests arriving in [30, 60) wait 10 s for their first token, the others 1 s: each
    fault recovers when the requests arriving after its end are back to 1 s, i.e. at 60."""
    arrival = np.arange(0.0, 120.0, 0.5)
    slow = (arrival >= 30.0) & (arrival < 60.0)
    requests = pd.DataFrame(
        {
            "arrival": arrival,
            "status": "finished",
            "abort_reason": "",
            "retries": 0,
            "prefill_latency": np.where(slow, 10.0, 1.0),
        }
    )
    summary = fault_summary(requests, [FaultConfig(**fault)], 200.0, leaked_blocks=0)
    (measured,) = summary["faults"]
    assert measured["p99_prefill_before"] == pytest.approx(1.0)
    assert measured["p99_prefill_during"] == pytest.approx(10.0)
    assert measured["recovery_seconds"] == recovery


def test_an_instance_failure_without_restart_recovers_only_once_the_survivors_catch_up():
    """Four instances near their capacity lose one at 60 s; arrivals slow down at 100 s. The
    P99 prefill of requests after the failure climbs, and recovery waits for the queues."""
    rng = np.random.default_rng(3)
    busy = np.cumsum(rng.exponential(1 / 2.8, 280))
    busy = busy[busy < 100.0]
    quiet = 100.0 + np.cumsum(rng.exponential(1 / 0.8, 120))
    arrival = np.concatenate([busy, quiet])
    n = len(arrival)
    simulation = Simulation(
        make_config(
            cluster={"instances": 4, "kv_capacity_blocks": 300},
            scheduler={"name": "llumnix"},
            faults=[{"kind": "instance_failure", "at": 60.0, "instance": 2}],
        ),
        LinearTimer(capacity_blocks=300),
        make_workload(arrival, rng.integers(50, 900, n), rng.integers(50, 600, n)),
        transfer=make_transfer(),
    )
    result = simulation.run()
    assert_conserved(simulation, result)
    requests = request_table(result)
    (fault,) = summarize(result, requests, cluster_table(result))["faults"]["faults"]
    assert fault["window"] == [60.0, 60.0]
    assert fault["p99_prefill_during"] > 2 * fault["p99_prefill_before"]
    assert fault["recovery_seconds"] is not None and fault["recovery_seconds"] > 10.0
