"""Each part of a llumlet on its own: the waiting queue, the block ledger, the batch former,
the migration endpoint and the load reporter (``sim.instance``)."""

from __future__ import annotations

import pytest

from sim.instance.batching import BatchFormer
from sim.instance.blocks import BlockLedger
from sim.instance.endpoint import MigrationEndpoint
from sim.instance.errors import BlockLeakError
from sim.instance.limits import LlumletLimits
from sim.instance.load import LoadReport
from sim.instance.reporting import LoadReporter
from sim.instance.request import Request, RequestState
from sim.instance.status import InstanceStatus
from sim.instance.waiting import WaitingQueue
from tests.doubles import LinearTimer


def test_the_waiting_queue_serves_tiers_in_order_and_keeps_its_totals():
    queue = WaitingQueue(lanes=2, tiers=2, block_size=16)
    low, high, preempted = Request(0, 0.0, 20, 5, tier=1), Request(1, 1.0, 16, 5, tier=0), Request(2, 2.0, 33, 5, tier=1)
    preempted.requeued = True
    for request in (low, high):
        queue.push(request)
    queue.push(preempted, front=True)
    assert all(r.state is RequestState.QUEUED for r in (low, high, preempted))
    assert queue.count == 3 and queue.tokens == 20 + 16 + 33
    assert queue.demand_blocks == 2 + 1 + 3 and queue.per_tier == [1, 2] and queue.preempted == 1
    assert [queue.pop_head().id for _ in range(3)] == [1, 2, 0]  # tier 0 first, then the preempted head
    assert queue.count == queue.tokens == queue.demand_blocks == queue.preempted == 0
    queue.push(low)
    queue.clear()
    assert not queue and list(queue) == [] and queue.per_tier == [0, 0] and queue.tokens == 0


def test_the_ledger_accounts_for_every_block_through_reserve_commit_cancel_and_clear():
    ledger = BlockLedger(10)
    resident, migrated = Request(0, 0.0, 16, 5), Request(1, 0.0, 16, 5)
    ledger.allocate(resident, 4)
    assert ledger.reserve("m", 3) and not ledger.reserve("n", 4)  # 3 free: refused (ABORT)
    assert ledger.free == 3
    ledger.commit("m", migrated)
    ledger.check([resident, migrated])
    with pytest.raises(BlockLeakError):
        ledger.check([resident])  # the migrated request's 3 blocks claimed by no one
    ledger.reserve("n", 2)
    assert ledger.cancel("n") == 2 and ledger.release(resident) == 4
    ledger.clear()
    assert ledger.free == 10 and ledger.reservations == {}


def make_parts(capacity=100, tiers=1, headroom=()):
    limits = LlumletLimits(capacity_blocks=capacity, tiers=tiers)
    status, ledger = InstanceStatus(), BlockLedger(capacity)
    waiting = WaitingQueue(1, tiers, limits.block_size)
    done: list[Request] = []
    batches = BatchFormer(0, limits, LinearTimer(), lambda: 0.0, waiting, ledger, done.append)
    endpoint = MigrationEndpoint(0, limits, status, ledger, waiting, batches)
    reporter = LoadReporter(endpoint, headroom)
    return status, waiting, batches, endpoint, reporter


def run_prefill(batches, waiting, *requests):
    for request in requests:
        waiting.push(request)
    batches.complete(batches.next_batch())


def test_the_batch_former_keeps_its_lazy_accounting_exact_and_clears_on_failure():
    _, waiting, batches, _, _ = make_parts()
    short, long = Request(0, 0.0, 16, 3), Request(1, 0.0, 40, 50)
    run_prefill(batches, waiting, short, long)
    for _ in range(2):  # the short request's last two tokens
        batches.complete(batches.next_batch())
    batches.check()
    assert short.state is RequestState.FINISHED and list(batches.running) == [long]
    assert batches.progress(long) == 3 and batches.seq_sum == 43
    batches.clear()
    assert batches.holds_nothing and batches.seq_sum == 0 and batches.next_batch() is None


def test_the_endpoint_suspends_at_a_boundary_resumes_releases_and_accepts():
    _, waiting, batches, endpoint, _ = make_parts()
    moving, staying = Request(0, 0.0, 32, 50), Request(1, 0.0, 32, 50)
    run_prefill(batches, waiting, moving, staying)
    answers: list[bool] = []
    batches.busy = True  # an iteration runs: the suspension waits for its boundary
    endpoint.request_suspension(moving, answers.append)
    assert answers == [] and moving in batches.running
    batches.next_batch()
    assert answers == [True] and moving.state is RequestState.SUSPENDED and moving.blocks == 2
    endpoint.resume(moving)  # the migration aborted: batched again from the next step
    batches.next_batch()
    assert moving in batches.running
    batches.busy = False  # idle: applied at once
    endpoint.request_suspension(moving, answers.append)
    endpoint.release_suspended(moving)  # committed elsewhere: its blocks come back
    assert answers == [True, True] and moving.blocks == 0 and batches.holders() == [staying]
    arriving = Request(2, 0.0, 32, 50)
    endpoint.accept_migrated(arriving, rebuild=True)  # recompute: queued at the head
    assert arriving.instances == [0] and waiting.head() is arriving
    endpoint.request_suspension(arriving, answers.append)  # not running: refused at once
    assert answers[-1] is False


def test_a_report_is_handed_out_again_exactly_while_none_of_its_fields_changed():
    """Reuse is decided on the very fields a report carries: any change — the status the
    engine sets, a migration taking the instance, a tier's headroom — builds a new one."""
    status, waiting, batches, endpoint, reporter = make_parts(tiers=2, headroom=(10.0, 0.0))
    run_prefill(batches, waiting, Request(0, 0.0, 20, 40, tier=0))
    first = reporter.report()
    assert first.headroom_blocks == 10.0 and first.top_tier == 0
    batches.complete(batches.next_batch())  # a decode step that changes no field
    assert reporter.report() is first
    for change, field in (
        (lambda: setattr(status, "draining", True), "draining"),
        (lambda: setattr(endpoint, "in_flight", 1), "migrating"),
    ):
        before = reporter.report()
        change()
        after = reporter.report()
        assert after is not before and getattr(after, field) and after == LoadReport(*after)
    assert len(reporter.report()) == len(LoadReport._fields)

