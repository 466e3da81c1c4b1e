"""The load record a llumlet reports upward, and every load signal computed from it.

The global scheduler never sees a request list: dispatch, migration pairing and scaling all
read instance-level numbers. A report carries raw counts (blocks, queue, batch, the headroom
its running tiers charge); each signal below is a small named function of one report, so a
new policy reads a new function here rather than re-deriving arithmetic elsewhere.

Freeness (Llumnix §4.4): F = (M − ΣV) / B, with B the running batch size (1 when nothing
runs, so an idle instance is the freest possible, F = M). Virtual usage V: a running request
uses its blocks plus its tier's headroom share; the head-of-line queued request uses its
prefill demand; a draining instance carries a fake request of infinite usage. Blocks
reserved for inbound migrations count as used.
"""

from __future__ import annotations

import math
from typing import NamedTuple


# A NamedTuple rather than a frozen dataclass: just as immutable and built by keyword, but
# every instance files one per load-report interval (50 ms), and a frozen dataclass's
# __init__ (one object.__setattr__ per field) cost ~3x as much (benchmarks/README.md).
class LoadReport(NamedTuple):
    instance_id: int
    time: float
    capacity_blocks: int
    used_blocks: int  # allocated to resident requests
    reserved_blocks: int  # pre-allocated for inbound migrations
    num_running: int
    num_waiting: int
    waiting_demand_blocks: int  # blocks all queued requests need
    head_demand_blocks: int  # blocks the head-of-line queued request needs
    headroom_blocks: float = 0.0  # headroom charged by the tiers that have a running request
    head_blocked: bool = False  # the head-of-line request waits for free blocks here
    draining: bool = False
    migrating: bool = False  # a migration touching this instance is in flight

    @property
    def free_blocks(self) -> int:
        return self.capacity_blocks - self.used_blocks - self.reserved_blocks


def freeness_full(report: LoadReport) -> float:
    """F over every virtual usage (dispatch and migration): physical and reserved blocks,
    tier headroom, the head-of-line demand; −inf while draining."""
    if report.draining:
        return -math.inf
    usage = report.used_blocks + report.reserved_blocks + report.head_demand_blocks
    if report.headroom_blocks:
        usage += report.headroom_blocks
    return (report.capacity_blocks - usage) / (report.num_running or 1)


def freeness_normal(report: LoadReport) -> float:
    """F over physical usage only — no headroom, no queue, no fake request — so the
    mechanisms that exist to trigger migration do not look like load (auto-scaling)."""
    used = report.used_blocks + report.reserved_blocks
    return (report.capacity_blocks - used) / (report.num_running or 1)


def dispatch_freeness(report: LoadReport, pending_blocks: int) -> float:
    """F_full less the demand dispatched to the instance since this report, spread over
    its batch as F's numerator would be."""
    return freeness_full(report) - pending_blocks / (report.num_running or 1)


def memory_load(report: LoadReport, pending_blocks: int = 0) -> float:
    """Used blocks plus the demand of every queued request (and of requests dispatched
    since the report), over capacity: the artifact's ``block`` dispatch load."""
    load = (report.used_blocks + report.waiting_demand_blocks) / report.capacity_blocks
    if pending_blocks:
        load += pending_blocks / report.capacity_blocks
    return load


def queue_aware_freeness(report: LoadReport) -> float:
    """(M − used − queued demand) / (running + queued): every queued request counts, by
    demand and by number. F_normal is blind to a queue waiting behind one big prompt; this
    is the scaling load of Llumnix's public code. No headroom, no fake request."""
    used = report.used_blocks + report.reserved_blocks
    return (report.capacity_blocks - used - report.waiting_demand_blocks) / max(
        report.num_running + report.num_waiting, 1
    )
