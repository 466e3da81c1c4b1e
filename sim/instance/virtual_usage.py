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
from typing import Sequence


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
    """(F_full, F_normal) for one instance."""
    full = freeness(
        capacity_blocks,
        total_virtual_usage(
            used_blocks, running_per_tier, headroom_blocks, head_demand_blocks, draining
        ),
        batch_size,
    )
    normal = freeness(capacity_blocks, used_blocks, batch_size)
    return full, normal
