"""Adaptive headroom: each tier's headroom set online from its recent SLO attainment.

The ``headroom`` priority mode reserves a fixed H_p = M·h_max·e^(−λp) per tier. Whether
that is enough for a tier's SLO depends on the load, so this controller starts from that
allocation and, every ``interval`` seconds, looks at the requests that ended in the window
(their TTFT and TPOT, as the frontends that returned their tokens know them): a tier whose
attainment fell below the SLO quantile gets ``step``·M more headroom; a tier with slack —
missing at most half the share it may miss — gives ``step``·M back; in between it holds.
The tiers together keep within ``max_total``·M (scaled down proportionally when over), and
a tier without headroom by design (the background tier with ``lowest_tier_none``) stays at
none. Headroom is kept as fractions of an instance's capacity, so pools of different sizes
share one controller.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from sim.config import SloTargetConfig


def meets_slo(target: SloTargetConfig, ttft: Optional[float], tpot: Optional[float]) -> bool:
    """A request met its tier's SLO: a first token within the TTFT target and, finished, a
    time per token after it within the TPOT target (None: no first token, or not finished;
    a one-token request's TPOT is 0)."""
    return ttft is not None and tpot is not None and ttft <= target.ttft and tpot <= target.tpot


class HeadroomController:
    """Per-tier headroom (fractions of M), nudged towards each tier's SLO attainment."""

    def __init__(
        self,
        start: Sequence[float],
        targets: Sequence[SloTargetConfig],
        quantile: float,
        step: float,
        max_total: float,
        fixed: Sequence[int] = (),
    ) -> None:
        self.fractions = list(start)
        self.targets = tuple(targets)
        self.quantile = quantile
        self.step = step
        self.max_total = max_total
        self.fixed = frozenset(fixed)  # tiers that never get headroom
        self._seen = [0] * len(self.fractions)
        self._met = [0] * len(self.fractions)

    def observe(self, tier: int, ttft: Optional[float], tpot: Optional[float]) -> None:
        """A request of ``tier`` ended (see ``meets_slo`` for the arguments)."""
        self._seen[tier] += 1
        self._met[tier] += meets_slo(self.targets[tier], ttft, tpot)

    def attainment(self) -> list[float]:
        """Each tier's attainment in the current window (NaN: no request ended)."""
        return [met / seen if seen else math.nan for met, seen in zip(self._met, self._seen)]

    def adjust(self) -> bool:
        """End the window: raise missing tiers, release tiers with slack; True if anything
        changed."""
        slack = 1 - (1 - self.quantile) / 2
        before = list(self.fractions)
        for tier, share in enumerate(self.attainment()):
            if tier in self.fixed or math.isnan(share):
                continue
            if share < self.quantile:
                self.fractions[tier] += self.step
            elif share >= slack:
                self.fractions[tier] = max(self.fractions[tier] - self.step, 0.0)
        total = sum(self.fractions)
        if total > self.max_total:
            self.fractions = [f * self.max_total / total for f in self.fractions]
        self._seen = [0] * len(self.fractions)
        self._met = [0] * len(self.fractions)
        return self.fractions != before
