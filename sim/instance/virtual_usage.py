"""Virtual usage and freeness: the one load signal every scheduling decision reads.

Rules (Llumnix §4.4, generalised to K tiers):
* a running request uses its blocks, plus its tier's headroom shared by the running
  requests of that tier (so a tier with any running request charges its whole headroom);
* the head-of-line queued request uses its prefill demand; other queued requests use 0;
* a draining instance carries one fake request of infinite usage.

Freeness F = (M - sum V) / B, B the running batch size. With B = 0 we divide by 1, which makes
an idle instance the freest possible (F = M) and an instance with only a queued request
report M minus its demand. Blocks reserved for inbound migrations count as used.

Two views: ``full`` applies every rule (dispatch, migration); ``normal`` is physical usage
only — no headroom, no queue inflation, no fake request (auto-scaling).
"""

from __future__ import annotations

import math
from typing import Optional, Sequence


def tier_headroom_blocks(
    capacity_blocks: int,
    tiers: int,
    h_max: float = 0.20,
    decay: float = 1.0,
    lowest_tier_none: bool = True,
    max_total: float = 1.0,
    explicit: Optional[Sequence[float]] = None,
) -> list[float]:
    """Headroom H_p of each tier p in 0..K-1 (blocks).

    H_p = M * h_max * exp(-decay * p): the most critical tier reserves the most. The lowest
    tier gets none when ``lowest_tier_none`` (with K = 1 that is every request: no headroom,
    as in Llumnix-base). If the tiers together would reserve more than ``max_total * M`` they
    are scaled down proportionally, so a K = 10 mix cannot reserve most of the memory.
    ``explicit`` overrides the formula (e.g. [100, 0]: the paper's binary 1,600-token scheme).
    """
    if explicit is not None:
        values = [float(b) for b in explicit[:tiers]]
        return values + [0.0] * (tiers - len(values))
    values = [capacity_blocks * h_max * math.exp(-decay * p) for p in range(tiers)]
    if lowest_tier_none:
        values[-1] = 0.0
    total = sum(values)
    cap = max_total * capacity_blocks
    if total > cap:
        values = [v * cap / total for v in values]
    return values


def headroom_usage(running_per_tier: Sequence[int], headroom_blocks: Sequence[float]) -> float:
    """Headroom charged on an instance: each tier with a running request charges its H_p."""
    return sum(
        headroom
        for count, headroom in zip(running_per_tier, headroom_blocks)
        if count > 0 and headroom > 0
    )


def total_virtual_usage(
    used_blocks: int,
    running_per_tier: Sequence[int],
    headroom_blocks: Sequence[float],
    head_demand_blocks: int,
    draining: bool,
) -> float:
    """Sum of virtual usages of every request on the instance (F_full's numerator)."""
    if draining:
        return math.inf
    return used_blocks + headroom_usage(running_per_tier, headroom_blocks) + head_demand_blocks


def freeness(capacity_blocks: int, total_usage: float, batch_size: int) -> float:
    """F = (M - sum V) / B, dividing by 1 when nothing runs."""
    return (capacity_blocks - total_usage) / max(batch_size, 1)


def freeness_views(
    capacity_blocks: int,
    used_blocks: int,
    batch_size: int,
    running_per_tier: Sequence[int] = (),
    headroom_blocks: Sequence[float] = (),
    head_demand_blocks: int = 0,
    draining: bool = False,
) -> tuple[float, float]:
    """(F_full, F_normal) for one instance.

    Every instance calls this once per load report, so it is written out rather than built
    from ``freeness``/``total_virtual_usage`` (same rules, same arithmetic).
    """
    divisor = batch_size if batch_size > 0 else 1
    normal = (capacity_blocks - used_blocks) / divisor
    if draining:
        return -math.inf, normal
    usage = used_blocks + head_demand_blocks
    if headroom_blocks:
        usage += headroom_usage(running_per_tier, headroom_blocks)
    return (capacity_blocks - usage) / divisor, normal


def queue_aware_freeness(
    capacity_blocks: int, used_blocks: int, running: int, waiting: int, waiting_demand_blocks: int
) -> float:
    """Freeness that counts every queued request's physical demand and the queued requests
    themselves: (M - used - queued demand) / (running + queued).

    This is the scaling load of Llumnix's public code ("remaining steps"). F_normal ignores
    the queue, so an instance whose long queue waits behind one big request can look free;
    ``autoscale.queue_aware`` scales on this view instead. No headroom, no fake request.
    """
    return (capacity_blocks - used_blocks - waiting_demand_blocks) / max(running + waiting, 1)
