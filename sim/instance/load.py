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
from typing import Final, NamedTuple


# A NamedTuple rather than a frozen dataclass: just as immutable and built by keyword, but
# every instance files one per executed step (the artifact presets), and a frozen dataclass's
# __init__ (one object.__setattr__ per field) cost ~3x as much (benchmarks/README.md).
class LoadReport(NamedTuple):
    instance_id: int
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
    watermark_blocks: int = 0  # free blocks admission (and an inbound migration) must leave
    block_size: int = 16
    # prompt + generated tokens of every queued request (a float in the cluster summed as
    # one instance: its queued blocks, summed as the artifact does, over a block size of 1)
    waiting_tokens: float = 0
    num_preempted: int = 0  # queued again after a preemption, not yet re-admitted
    top_tier: int = 0  # most critical tier among queued and running requests (K − 1 if none)

    @property
    def free_blocks(self) -> int:
        return self.capacity_blocks - self.used_blocks - self.reserved_blocks


def reports_idle(report: LoadReport) -> bool:
    """The report shows an instance that holds nothing: no request running or queued, no
    block allocated or reserved (INV-4 idle-view asks this of an idle instance's last report)."""
    return not (report.num_running or report.num_waiting or report.used_blocks or report.reserved_blocks)


def freeness_full(report: LoadReport, reservation: float | None = None) -> float:
    """F over every virtual usage (dispatch and migration): physical and reserved blocks,
    priority reservation (by default the tier headroom the instance charges), the
    head-of-line demand; −inf while draining."""
    if report.draining:
        return -math.inf
    usage = float(report.used_blocks + report.reserved_blocks + report.head_demand_blocks)
    if reservation is None:
        reservation = report.headroom_blocks
    if reservation:
        usage += reservation
    return (report.capacity_blocks - usage) / (report.num_running or 1)


def freeness_normal(report: LoadReport) -> float:
    """F over physical usage only — no headroom, no queue, no fake request — so the
    mechanisms that exist to trigger migration do not look like load (auto-scaling)."""
    used = report.used_blocks + report.reserved_blocks
    return (report.capacity_blocks - used) / (report.num_running or 1)


def dispatch_freeness(
    report: LoadReport, pending_blocks: int, reservation: float | None = None
) -> float:
    """F_full less the demand dispatched to the instance since this report, spread over
    its batch as F's numerator would be."""
    return freeness_full(report, reservation) - pending_blocks / (report.num_running or 1)


# ---------------------------------------------------------------------------------------
# The Llumnix artifact's loads (branch osdi24ae, vllm/instance_info.py). Each is a negative
# freeness — larger is more loaded — computed exactly as the artifact's InstanceLoadInfo
# does: available blocks are free minus the watermark, queued blocks are a float sum of
# tokens / block size, and a draining instance reports one running request and −1000
# available blocks (a large finite load). −inf: nothing running or queued.

DRAINING_AVAILABLE_BLOCKS: Final = -1000  # llm_engine.py step_async: the drain's report override


def waiting_blocks(report: LoadReport) -> float:
    """The artifact's ``num_block_all_waiting_request``: Σ tokens / block size (not ceil)."""
    return report.waiting_tokens / report.block_size


def _available_and_running(report: LoadReport) -> tuple[float, int]:
    if report.draining:
        return DRAINING_AVAILABLE_BLOCKS, 1
    return report.free_blocks - report.watermark_blocks, report.num_running


def artifact_migration_load(
    report: LoadReport, load_control: bool = True, reservation: float = 0.0
) -> float:
    """``InstanceLoadInfo.compute_instance_load`` (key 'migrate', consumed_speed). With load
    control (``--enable-load-control-prefill``) every queued request's blocks and the
    priority reservation count, and a non-empty queue adds one to the divisor."""
    available, running = _available_and_running(report)
    if not load_control:
        return -math.inf if running == 0 else -(available / running)
    divisor = running + (1 if report.num_waiting else 0)
    available = available - waiting_blocks(report)
    if reservation:
        available -= reservation
    return -math.inf if divisor == 0 else -(available / divisor)


def artifact_dispatch_load(report: LoadReport, reservation: float = 0.0, pending_blocks: int = 0) -> float:
    """``InstanceLoadInfo.compute_instance_load_dispatch`` ('load' strategy): every queued
    request counts, by its blocks and in the divisor. ``pending_blocks`` (demand dispatched
    since the report; the artifact counts none) is treated as more queued blocks."""
    available, running = _available_and_running(report)
    divisor = running + report.num_waiting
    available = available - waiting_blocks(report)
    if reservation:
        available -= reservation
    if pending_blocks:
        available -= pending_blocks
    return -math.inf if divisor == 0 else -(available / divisor)


def block_load(report: LoadReport, pending_blocks: int = 0) -> float:
    """The artifact's ``block`` dispatch load: used (and inbound-reserved) blocks plus every
    queued request's blocks, over capacity (can exceed 1)."""
    used = report.capacity_blocks - report.free_blocks
    load = (used + waiting_blocks(report)) / report.capacity_blocks
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


# Llumnix's busy thresholds (AlibabaPAI/llumnix main 24220fb, ``llumnix/constants.py``
# 107-109): an instance with fewer remaining steps than this is busy (cache-aware dispatch
# passes it over, PD takes no hand-off to it), a prefill instance is busy at a KV load of 1.0,
# and a prefill instance decoding more than 128 requests is compute-bound
BUSY_REMAINING_STEPS: Final = 10.0
BUSY_KV_LOAD: Final = 1.0
DECODE_COMPUTE_BOUND_BATCH: Final = 128


def remaining_steps(report: LoadReport) -> float:
    """Llumnix's ``remaining_steps``: decode steps the free blocks above the watermark last
    each running request (infinite on an instance running nothing)."""
    return -artifact_migration_load(report, load_control=False)
