"""Virtual usage that needs request-level knowledge: the headroom of priority tiers.

A running request of tier p uses its blocks plus H_p shared by the running requests of that
tier (Llumnix §4.4, generalised to K tiers), so a tier with any running request charges its
whole headroom. The llumlet charges it into its load report (``LoadReport.headroom_blocks``);
every instance-level signal built on it lives in ``sim.instance.load``.
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
