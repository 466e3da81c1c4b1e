"""Each part of a llumlet on its own: the waiting queue, the block ledger, the batch former,
the migration endpoint and the load reporter (``sim.instance``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.instance.batching import BatchFormer
from sim.instance.blocks import BlockLedger
from sim.instance.endpoint import MigrationEndpoint
from sim.instance.errors import BlockLeakError
from sim.instance.kv_transfer import KvTransfer
from sim.instance.limits import LlumletLimits
from sim.instance.load import LoadReport
from sim.instance.reporting import LoadReporter
from sim.instance.request import FIELDS, Request, RequestState
from sim.instance.status import InstanceStatus
from sim.instance.virtual_usage import headroom_usage
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


def test_blocks_have_identity_a_commit_hands_over_the_reserved_blocks_and_freed_ones_come_back():
    ledger = BlockLedger(6)
    first, second = Request(0, 0.0, 16, 5), Request(1, 0.0, 16, 5)
    ledger.allocate(first, 2)
    assert ledger.grow(first, max_blocks=3) and not ledger.grow(first, max_blocks=3)  # at its limit
    assert ledger.table(first) == (0, 1, 2) and ledger.held(first) == 3
    assert ledger.reserve("m", 2)
    reserved = ledger.reservations["m"]
    ledger.commit("m", second)
    assert ledger.table(second) == tuple(reserved) and not set(reserved) & set(ledger.table(first))
    freed = set(ledger.table(first))
    assert ledger.release(first) == 3 and ledger.held(first) == 0
    third = Request(2, 0.0, 16, 5)
    ledger.allocate(third, 3)  # the freed blocks are the ones handed out again
    assert set(ledger.table(third)) == freed and ledger.free == 1
    ledger.check([second, third])


def test_the_conservation_check_counts_references_so_a_block_in_two_tables_is_caught():
    ledger = BlockLedger(4)
    first, second = Request(0, 0.0, 16, 5), Request(1, 0.0, 16, 5)
    ledger.allocate(first, 1)
    ledger.allocate(second, 1)
    ledger.check([first, second])
    ledger._tables[second][0] = ledger._tables[first][0]  # one block in two tables: this ledger shares none
    with pytest.raises(BlockLeakError, match="references"):
        ledger.check([first, second])


OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["allocate", "grow", "release", "reserve", "cancel", "commit"]),
              st.integers(0, 3), st.integers(1, 5)),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(OPERATIONS)
def test_every_block_is_free_held_or_reserved_whatever_the_ledger_is_asked(operations):
    ledger = BlockLedger(12)
    requests = [Request(i, 0.0, 16, 5) for i in range(4)]
    for name, which, blocks in operations:
        request, key = requests[which], ("migration", which)
        if name == "allocate" and blocks <= ledger.free:
            ledger.allocate(request, blocks)
        elif name == "grow" and ledger.held(request) and ledger.free:
            ledger.grow(request, max_blocks=8)
        elif name == "release":
            ledger.release(request)
        elif name == "reserve":
            room = ledger.free
            assert ledger.reserve(key, blocks) == (blocks <= room)  # ACK, or ABORT with no room
        elif name == "cancel":
            ledger.cancel(key)
        elif name == "commit" and key in ledger.reservations:
            ledger.commit(key, request)
        ledger.check([r for r in requests if ledger.held(r)])
        assert ledger.free + ledger.allocated + ledger.reserved == ledger.capacity and ledger.free >= 0


SIM = Path(__file__).resolve().parents[1] / "sim"
REQUEST_NAMES = ("request", "req", "r", "victim", "migrant", "moving", "head", "arriving")


def _writes(path: Path):
    """(base name, attribute, line) of every assignment to an attribute in ``path``."""
    for node in ast.walk(ast.parse(path.read_text())):
        targets = list(node.targets) if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        while targets:
            target = targets.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                targets += target.elts  # a, b.c = ...
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                yield target.value.id, target.attr, target.lineno


def test_only_a_request_writes_its_fields_and_only_the_ledger_changes_block_counts():
    request_writes, block_writes = [], []
    for path in SIM.rglob("*.py"):
        where = path.relative_to(SIM.parent)
        for base, attr, line in _writes(path):
            if attr in FIELDS and base in REQUEST_NAMES and path.name != "request.py":
                request_writes.append(f"{where}:{line} {base}.{attr}")
            if attr in ("allocated", "reserved") and path.name != "blocks.py":
                block_writes.append(f"{where}:{line} {base}.{attr}")
    assert request_writes == [] and block_writes == []


def test_the_field_check_finds_a_write_it_should(tmp_path):
    # the checker itself: a request-field write and a ledger-count write in a module are found
    sample = tmp_path / "sample.py"
    sample.write_text("def f(request, ledger, done):\n    request.generated += 1\n    ledger.allocated, x = 3, 4\n    done[request.id] = 1\n")
    found = list(_writes(sample))
    assert sorted(found) == [("ledger", "allocated", 3), ("request", "generated", 2)]  # not a read in an index


def make_parts(capacity=100, tiers=1, headroom=(), watermark=0):
    limits = LlumletLimits(capacity_blocks=capacity, tiers=tiers, watermark_blocks=watermark)
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
    assert answers == [True] and moving.state is RequestState.SUSPENDED and batches.ledger.held(moving) == 2
    endpoint.resume(moving)  # the migration aborted: batched again from the next step
    batches.next_batch()
    assert moving in batches.running
    batches.busy = False  # idle: applied at once
    endpoint.request_suspension(moving, answers.append)
    endpoint.release_suspended(moving)  # committed elsewhere: its blocks come back
    assert answers == [True, True] and batches.ledger.held(moving) == 0 and batches.holders() == [staying]
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



def test_a_report_carries_each_count_under_its_own_name():
    """The reporter builds a report positionally (the hot path); every field is read back by
    name against the part that keeps it, on a state where no two counts coincide, so a swapped
    pair in the reporter's tuple fails here."""
    limits = LlumletLimits(capacity_blocks=300, tiers=3, watermark_blocks=6)
    status, ledger = InstanceStatus(), BlockLedger(limits.capacity_blocks)
    waiting = WaitingQueue(3, 3, limits.block_size)
    batches = BatchFormer(9, limits, LinearTimer(), lambda: 0.0, waiting, ledger, lambda r: None)
    endpoint = MigrationEndpoint(9, limits, status, ledger, waiting, batches)
    reporter = LoadReporter(endpoint, (40.0, 11.0, 0.0))
    run_prefill(batches, waiting, Request(0, 0.0, 100, 50, tier=2), Request(1, 0.0, 60, 50, tier=0))
    preempted = Request(2, 1.0, 200, 5, tier=2)
    preempted.requeued = True
    for request in (preempted, Request(3, 2.0, 500, 5, tier=1), Request(4, 3.0, 90, 5, tier=2)):
        waiting.push(request)
    ledger.reserve("incoming", 5)
    status.draining = True
    report = reporter.report()
    expected = {
        "instance_id": 9,
        "capacity_blocks": 300,
        "used_blocks": ledger.allocated,
        "reserved_blocks": 5,
        "num_running": 2,
        "num_waiting": 3,
        "waiting_demand_blocks": waiting.demand_blocks,
        "head_demand_blocks": waiting.head_demand_blocks(),
        "headroom_blocks": headroom_usage(batches.running_per_tier, (40.0, 11.0, 0.0)),
        "head_blocked": False,
        "draining": True,
        "migrating": False,
        "watermark_blocks": 6,
        "block_size": 16,
        "waiting_tokens": waiting.tokens,
        "num_preempted": 1,
        "top_tier": 0,
    }
    assert set(expected) == set(LoadReport._fields)
    counts = [value for value in expected.values() if type(value) is int]
    assert len(set(counts)) == len(counts), expected  # a swap of any two counts shows
    assert report._asdict() == expected


class Link:
    """A link that takes 10 ms plus 1 ms per block."""

    stage_latency = 0.01

    def stage_time(self, blocks: int) -> float:
        return self.stage_latency + 0.001 * blocks


def test_a_kv_transfer_reserves_copies_over_the_link_and_commits_or_cancels():
    env = simpy.Environment()
    _, _, _, source, _ = make_parts(capacity=100)
    _, _, destination_batches, destination, _ = make_parts(capacity=30, watermark=3)
    transfer = KvTransfer(env, source, destination, ("handoff", 7), Link())
    request = Request(7, 0.0, 320, 10)
    assert not transfer.reserve(28) and destination.ledger.reserved == 0  # it would cut into the watermark
    assert transfer.reserve(20) and destination.ledger.reserved == 20
    slowed = []
    env.process(transfer.copy(20))
    env.run(until=0.005)
    slowed.append((source.batches.copying, destination_batches.copying))  # both ends copy meanwhile
    env.run()
    assert env.now == pytest.approx(0.03) and slowed == [(1, 1)] and destination_batches.copying == 0
    transfer.accept(20)
    transfer.commit(request)
    assert transfer.copied == 20 and destination.ledger.held(request) == 20 and destination.ledger.reserved == 0
    again = KvTransfer(env, source, destination, ("handoff", 8), Link())
    assert again.reserve(5) and again.cancel() == 5 and destination.ledger.free == 10
