"""The migration handshake: pre-allocate/ACK/ABORT, post-stage checks, commit."""

from __future__ import annotations

import math

from sim.cluster.base import FixedPlacementScheduler
from sim.engine.simulation import Simulation
from sim.instance.request import RequestState
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload

CAPACITY = 100


def build(placements, prompts, outputs, transfer=None, mode="live") -> Simulation:
    n = len(placements)
    simulation = Simulation(
        make_config(
            cluster={"instances": 2, "kv_capacity_blocks": CAPACITY},
            migration={"mode": mode},
        ),
        LinearTimer(capacity_blocks=CAPACITY),
        make_workload([0.0] * n, prompts, outputs),
        transfer=transfer or make_transfer(),
        scheduler=FixedPlacementScheduler(placements),
    )
    simulation.check_every_step = True  # blocks conserved on both sides after every step
    return simulation


def migrate_at(simulation: Simulation, when: float, request_id: int, source=0, destination=1):
    records = []

    def trigger():
        yield simulation.env.timeout(when)
        records.append(simulation.migrate_request(simulation.requests[request_id], source, destination))

    simulation.env.process(trigger())
    return records


def assert_no_blocks_left(simulation: Simulation) -> None:
    for runtime in simulation.instances.values():
        ledger = runtime.llumlet.ledger
        assert ledger.allocated == 0 and ledger.reserved == 0 and not ledger.reservations


def test_destination_out_of_memory_aborts_and_leaks_nothing():
    # the destination holds 88 of 100 blocks; stage 0 would need 39
    simulation = build([0, 1], [640, 1400], [200, 300])
    records = migrate_at(simulation, 0.5, 0)
    result = simulation.run()
    (record,) = records
    assert record.outcome == "aborted" and record.abort_reason == "destination_out_of_memory"
    request = result.requests[0]
    assert request.state is RequestState.FINISHED and request.instances == [0]
    assert request.migrations == 0
    assert_no_blocks_left(simulation)


def test_request_finishing_mid_migration_aborts_it():
    # a 5 s stage outlasts the request's remaining 10 tokens
    simulation = build([0, 1], [640, 64], [10, 50], transfer=make_transfer(stage_latency=5.0))
    records = migrate_at(simulation, 0.2, 0)
    result = simulation.run()
    (record,) = records
    assert record.outcome == "aborted" and record.abort_reason == "request_finished"
    assert result.requests[0].instances == [0]
    assert_no_blocks_left(simulation)


def test_request_preempted_mid_migration_aborts_it_and_it_still_finishes_at_the_source():
    # both source requests grow past 100 blocks during the 20 s stage: the later one
    # (the migrating one) is preempted by recompute
    simulation = build([0, 0], [800, 640], [600, 600], transfer=make_transfer(stage_latency=20.0))
    records = migrate_at(simulation, 0.5, 1)
    result = simulation.run()
    (record,) = records
    assert record.outcome == "aborted" and record.abort_reason == "request_preempted"
    request = result.requests[1]
    assert request.preemptions >= 1
    assert request.state is RequestState.FINISHED and request.instances == [0]
    assert_no_blocks_left(simulation)


def test_commit_frees_the_source_and_the_destination_holds_exactly_the_request_blocks():
    simulation = build([0, 1], [640, 160], [300, 400])
    records = migrate_at(simulation, 1.0, 0)
    source = simulation.instances[0].llumlet
    destination = simulation.instances[1].llumlet
    seen = {}

    def watch():
        while not records or math.isnan(records[0].committed_at):
            yield simulation.env.timeout(0.001)
        request = simulation.requests[0]
        other = simulation.requests[1]
        seen["source_allocated"] = source.ledger.allocated
        seen["destination_allocated"] = destination.ledger.allocated
        seen["expected"] = request.blocks + other.blocks
        seen["request_blocks"] = request.blocks
        seen["needed"] = -(-(request.seq_len - 1) // 16)

    simulation.env.process(watch())
    result = simulation.run()
    (record,) = records
    assert record.outcome == "committed" and record.stages == 2
    assert seen["source_allocated"] == 0
    assert seen["destination_allocated"] == seen["expected"]
    assert seen["request_blocks"] >= seen["needed"]  # all its KV came across
    request = result.requests[0]
    assert request.state is RequestState.FINISHED and request.generated == 300
    assert request.instances == [0, 1] and request.migrations == 1
    assert record.downtime < 0.05 and record.rejoin_delay >= 0
    assert_no_blocks_left(simulation)


def test_last_stage_refused_resumes_the_request_at_the_source():
    simulation = build([0, 1], [640, 64], [300, 20])
    destination = simulation.instances[1].llumlet
    records = []

    def squeeze_then_migrate():
        yield simulation.env.timeout(1.0)
        request = simulation.requests[0]
        # another reservation leaves the destination room for stage 0 (completed blocks) only
        other = ("someone else",)
        destination.ledger.reserve(other, destination.ledger.free - (request.blocks - 1))
        records.append(simulation.migrate_request(request, 0, 1))
        yield simulation.env.timeout(5.0)
        destination.ledger.cancel(other)

    simulation.env.process(squeeze_then_migrate())
    result = simulation.run()
    (record,) = records
    assert record.outcome == "aborted" and record.abort_reason == "destination_out_of_memory"
    assert record.stages == 2 and not math.isnan(record.suspended_at)  # refused in the last stage
    request = result.requests[0]
    assert request.state is RequestState.FINISHED and request.instances == [0]
    assert_no_blocks_left(simulation)


def test_blocking_and_recompute_modes_commit_and_finish_once():
    for mode in ("blocking", "recompute"):
        simulation = build([0, 1], [640, 160], [300, 400], mode=mode)
        records = migrate_at(simulation, 1.0, 0)
        result = simulation.run()
        (record,) = records
        assert record.outcome == "committed" and record.stages == 1
        assert result.requests[0].instances == [0, 1]
        assert result.requests[0].state is RequestState.FINISHED
        assert record.downtime > 0
        assert_no_blocks_left(simulation)
