"""The load reporter (``sim.instance.reporting``): each count under its own name, and a
report handed out again exactly while none of its fields changed."""

from __future__ import annotations

from pathlib import Path

from sim.instance.former_io import BatchEvents
from sim.instance.batching import BatchFormer
from sim.instance.blocks import BlockLedger
from sim.instance.endpoint import MigrationEndpoint
from sim.instance.limits import LlumletLimits
from sim.instance.load import LoadReport
from sim.instance.reporting import LoadReporter
from sim.instance.request import Request
from sim.instance.status import InstanceStatus
from sim.instance.virtual_usage import headroom_usage
from sim.instance.waiting import WaitingQueue
from tests.doubles import LinearTimer
from tests.instance_support import make_parts, run_prefill


def test_a_report_is_handed_out_again_exactly_while_nothing_it_reports_changed():
    """Reuse is decided on what can change between reports: any change — the status the
    engine sets, a migration taking the instance, a request queued (the queue's totals are
    compared by its change count) — builds a new one."""
    status, waiting, batches, endpoint, reporter = make_parts(tiers=2, headroom=(10.0, 0.0))
    run_prefill(batches, waiting, Request(0, 0.0, 20, 40, tier=0))
    first = reporter.report()
    assert first.headroom_blocks == 10.0 and first.top_tier == 0
    batches.complete(batches.next_batch())  # a decode step that changes no field
    assert reporter.report() is first
    for change, field in (
        (lambda: setattr(status, "draining", True), "draining"),
        (lambda: setattr(endpoint, "in_flight", 1), "migrating"),
        (lambda: waiting.push(Request(1, 1.0, 30, 5, tier=1)), "num_waiting"),
    ):
        before = reporter.report()
        change()
        after = reporter.report()
        assert after is not before and getattr(after, field) and type(after) is LoadReport
    assert len(reporter.report()) == len(LoadReport._fields)



def test_a_report_carries_each_count_under_its_own_name():
    """The reporter builds a report positionally (the hot path); every field is read back by
    name against the part that keeps it, on a state where no two counts coincide, so a swapped
    pair in the reporter's tuple fails here."""
    limits = LlumletLimits(capacity_blocks=300, tiers=3, watermark_blocks=6)
    status, ledger = InstanceStatus(), BlockLedger(limits.capacity_blocks)
    waiting = WaitingQueue(3, 3, limits.block_size)
    batches = BatchFormer(9, limits, LinearTimer(), lambda: 0.0, waiting, ledger, BatchEvents())
    endpoint = MigrationEndpoint(9, limits, status, ledger, waiting, batches)
    reporter = LoadReporter(endpoint, (40.0, 11.0, 0.0))
    run_prefill(batches, waiting, Request(0, 0.0, 100, 50, tier=2), Request(1, 0.0, 60, 50, tier=0))
    preempted = Request(2, 1.0, 200, 5, tier=2)
    preempted.requeued = True
    for request in (preempted, Request(3, 2.0, 500, 5, tier=1), Request(4, 3.0, 90, 5, tier=2)):
        waiting.push(request)
    ledger.reserve("incoming", 5)
    status.drain()
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


def test_the_reporters_tuple_names_each_field_in_load_reports_order():
    """The positional tuple is read by name: each entry's comment names its field, and the
    names are LoadReport's fields in order (a field added, dropped or moved in load.py, or a
    comment that lies, fails here)."""
    source = (Path(__file__).resolve().parents[1] / "sim" / "instance" / "reporting.py").read_text().splitlines()
    start = next(i for i, line in enumerate(source) if "_new_report(LoadReport, (" in line)
    end = next(i for i in range(start, len(source)) if source[i].strip() == "))")
    named = [line.split("  # ", 1)[1].split(":")[0] for line in source[start + 1 : end]]
    assert named == list(LoadReport._fields)
