"""A llumlet's parts wired by hand, for the tests of one part at a time."""

from __future__ import annotations

from sim.instance.former_io import BatchEvents
from sim.instance.batching import BatchFormer
from sim.instance.blocks import BlockLedger
from sim.instance.endpoint import MigrationEndpoint
from sim.instance.limits import LlumletLimits
from sim.instance.reporting import LoadReporter
from sim.instance.request import Request
from sim.instance.status import InstanceStatus
from sim.instance.waiting import WaitingQueue
from tests.doubles import LinearTimer


def make_parts(capacity=100, tiers=1, headroom=(), watermark=0):
    limits = LlumletLimits(capacity_blocks=capacity, tiers=tiers, watermark_blocks=watermark)
    status, ledger = InstanceStatus(), BlockLedger(capacity)
    waiting = WaitingQueue(1, tiers, limits.block_size)
    done: list[Request] = []
    batches = BatchFormer(0, limits, LinearTimer(), lambda: 0.0, waiting, ledger, BatchEvents(done.append))
    endpoint = MigrationEndpoint(0, limits, status, ledger, waiting, batches)
    reporter = LoadReporter(endpoint, headroom)
    return status, waiting, batches, endpoint, reporter


def run_prefill(batches, waiting, *requests):
    for request in requests:
        waiting.push(request)
    batches.complete(batches.next_batch())
