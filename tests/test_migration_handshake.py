"""The migration handshake: pre-allocate/ACK/ABORT, post-stage checks, commit (INV-5
commit-or-abort)."""

from __future__ import annotations

import math

import pytest

from sim.engine import Simulation
from sim.instance.request import RequestState
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload, placed

CAPACITY = 100


def build(placements, prompts, outputs, transfer=None, mode="live") -> Simulation:
    n = len(placements)
    config = make_config(
        cluster={"instances": 2, "kv_capacity_blocks": CAPACITY}, migration={"mode": mode}
    )
    return Simulation(
        config,
        LinearTimer(capacity_blocks=CAPACITY),
        make_workload([0.0] * n, prompts, outputs),
        transfer=transfer or make_transfer(),
        scheduler=placed(config, placements),
        check_every_step=True,  # blocks conserved on both sides after every step
    )


def migrate_at(simulation: Simulation, when: float, request_id: int, source=0, destination=1):
    simulation.run_until(when)
    return simulation.migrate(request_id, source, destination)


def assert_no_blocks_left(simulation: Simulation) -> None:
    for instance in (0, 1):
        ledger = simulation.llumlet(instance).ledger
        assert ledger.allocated == 0 and ledger.reserved == 0 and not ledger.reservations


def test_destination_out_of_memory_aborts_and_leaks_nothing():
    # the destination holds 88 of 100 blocks; stage 0 would need 39
    simulation = build([0, 1], [640, 1400], [200, 300])
    record = migrate_at(simulation, 0.5, 0)
    result = simulation.run()
    assert record.outcome == "aborted" and record.abort_reason == "destination_out_of_memory"
    request = result.requests[0]
    assert request.state is RequestState.FINISHED and request.instances == [0]
    assert request.migrations == 0
    assert_no_blocks_left(simulation)


def test_request_finishing_mid_migration_aborts_it():
    # a 5 s stage outlasts the request's remaining 10 tokens
    simulation = build([0, 1], [640, 64], [10, 50], transfer=make_transfer(stage_latency=5.0))
    record = migrate_at(simulation, 0.2, 0)
    result = simulation.run()
    assert record.outcome == "aborted" and record.abort_reason == "request_finished"
    assert result.requests[0].instances == [0]
    assert_no_blocks_left(simulation)


def test_request_preempted_mid_migration_aborts_it_and_it_still_finishes_at_the_source():
    # both source requests grow past 100 blocks during the 20 s stage: the later one
    # (the migrating one) is preempted by recompute
    simulation = build([0, 0], [800, 640], [600, 600], transfer=make_transfer(stage_latency=20.0))
    record = migrate_at(simulation, 0.5, 1)
    result = simulation.run()
    assert record.outcome == "aborted" and record.abort_reason == "request_preempted"
    request = result.requests[1]
    assert request.preemptions >= 1
    assert request.state is RequestState.FINISHED and request.instances == [0]
    assert_no_blocks_left(simulation)


def test_commit_frees_the_source_and_the_destination_holds_exactly_the_request_blocks():
    simulation = build([0, 1], [640, 160], [300, 400])
    record = migrate_at(simulation, 1.0, 0)
    source, destination = simulation.llumlet(0), simulation.llumlet(1)
    while math.isnan(record.committed_at):  # step to the commit
        simulation.run_until(simulation.now + 0.001)
    request, other = simulation.request(0), simulation.request(1)
    assert source.ledger.allocated == 0
    held = destination.ledger.held(request)
    assert destination.ledger.allocated == held + destination.ledger.held(other)
    assert held >= -(-(request.seq_len - 1) // 16)  # all its KV came across
    assert source.ledger.held(request) == 0  # the source's table is gone, not shared
    result = simulation.run()
    assert record.outcome == "committed" and record.stages == 2
    request = result.requests[0]
    assert request.state is RequestState.FINISHED and request.generated == 300
    assert request.instances == [0, 1] and request.migrations == 1
    # downtime: the last stage's copy of at most 16 blocks (fixed latency 10 ms + bytes at
    # 2.5 GB/s, 8 MiB per block), from leaving the source batch to the commit
    last_copy = 0.01 + record.last_stage_blocks * 16 * 524_288 / 2.5e9
    assert record.downtime == pytest.approx(last_copy, rel=1e-9)
    assert 0 <= record.rejoin_delay < 0.1  # one destination iteration at most
    assert_no_blocks_left(simulation)


def test_last_stage_refused_resumes_the_request_at_the_source():
    simulation = build([0, 1], [640, 64], [300, 20])
    destination = simulation.llumlet(1)
    simulation.run_until(1.0)
    request = simulation.request(0)
    # another reservation leaves the destination room for stage 0 (completed blocks) only,
    # above the watermark a destination keeps free
    other = ("someone else",)
    room = simulation.llumlet(0).ledger.held(request) - 1 + destination.limits.watermark_blocks
    destination.ledger.reserve(other, destination.ledger.free - room)
    record = simulation.migrate(0, 0, 1)
    simulation.at(6.0, lambda: destination.ledger.cancel(other))
    result = simulation.run()
    assert record.outcome == "aborted" and record.abort_reason == "destination_out_of_memory"
    assert record.stages == 2 and not math.isnan(record.suspended_at)  # refused in the last stage
    request = result.requests[0]
    assert request.state is RequestState.FINISHED and request.instances == [0]
    assert_no_blocks_left(simulation)


def test_blocking_and_recompute_modes_commit_and_finish_once():
    for mode in ("blocking", "recompute"):
        simulation = build([0, 1], [640, 160], [300, 400], mode=mode)
        record = migrate_at(simulation, 1.0, 0)
        result = simulation.run()
        assert record.outcome == "committed" and record.stages == 1
        assert result.requests[0].instances == [0, 1]
        assert result.requests[0].state is RequestState.FINISHED
        # blocking: the whole KV cache in one stopped copy; recompute: a re-prefill at the
        # destination of every token the request had, far longer than a copy stage
        if mode == "blocking":
            assert record.blocks >= 40 and record.downtime == pytest.approx(
                0.01 + record.blocks * 16 * 524_288 / 2.5e9, rel=1e-9
            )
        else:
            assert record.blocks == 0 and record.downtime >= LinearTimer().per_prefill_token * 640
        assert_no_blocks_left(simulation)


def test_a_request_is_moving_from_the_instant_its_migration_starts():
    # adaptive PD's move and a hand-off once both started the same request in one tick: the
    # second start must see the first before its process has run
    simulation = build([0, 1], [640, 64], [200, 50])
    record = migrate_at(simulation, 0.5, 0)
    assert simulation.request(0).migration is record
    with pytest.raises(ValueError, match="moving already"):
        simulation.migrate(0, 0, 1)
    simulation.run()
    assert record.outcome == "committed" and simulation.request(0).migrations == 1
