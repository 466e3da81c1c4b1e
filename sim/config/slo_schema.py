"""Per-tier service-level objectives: the first-token and per-token targets each tier's
requests are judged by (``sim.metrics.attainment``) and SLO-aware rules dispatch against.

Two ways to write them: ``tiers``, one ``{ttft, tpot}`` per tier (K entries, tier 0 the most
critical), or ``ladder``, tier 0's targets multiplied by ``growth`` per tier —
``ttft_p = ttft · growth^p`` — the exponential shape of the K-tier project's headroom
ladder, so K tiers take three numbers. ``quantile`` is the share of a tier's requests that
must meet its targets for the tier to count as attained.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Optional

from sim.config.ranges import Range, check_ranges, require

SLO_SECONDS = Range(0.0, 86_400.0, "s", open_low=True)  # a target of 0 s no request can meet


@dataclass
class SloTargetConfig:
    """One tier's targets: time to first token and mean time per output token after it."""

    ttft: float  # seconds from arrival to the first token
    tpot: float  # mean seconds per output token after the first

    RANGES: ClassVar[dict[str, Range]] = {"ttft": SLO_SECONDS, "tpot": SLO_SECONDS}

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class SloLadderConfig(SloTargetConfig):
    """Tier 0's targets and how much looser each next tier's are (``growth`` >= 1: a less
    critical tier never has a tighter target than a more critical one)."""

    growth: float = 2.0  # each next tier's targets are this many times looser

    RANGES: ClassVar[dict[str, Range]] = {
        **SloTargetConfig.RANGES,
        "growth": Range(1.0, 1000.0),
    }


@dataclass
class SloConfig:
    """The per-tier SLOs of a run: explicit ``tiers`` or a ``ladder`` (exactly one)."""

    tiers: list[SloTargetConfig] = field(default_factory=list)
    ladder: Optional[SloLadderConfig] = None
    quantile: float = 0.99  # a tier is attained when this share of its requests meets both

    # a quantile of 0 counts a tier attained with no request meeting its targets
    RANGES: ClassVar[dict[str, Range]] = {"quantile": Range(0.0, 1.0, open_low=True)}

    def __post_init__(self) -> None:
        check_ranges(self)
        require(bool(self.tiers) != (self.ladder is not None), "tiers: give either tiers or ladder (one of them)")

    def targets(self, tiers: int) -> list[SloTargetConfig]:
        """One target per tier 0..``tiers``−1 (the ladder expanded). A tier's target beyond
        what one written out may be names the ladder key and the product: the number in
        range's own message is one the user never wrote."""
        if self.ladder is None:
            return list(self.tiers)
        ladder = self.ladder
        for name in ("ttft", "tpot"):
            base = getattr(ladder, name)
            last = tiers - 1
            require(
                base * ladder.growth**last <= SLO_SECONDS.high,
                f"slo.ladder.{name}: tier {last}'s target is {base:g} x growth {ladder.growth:g}^{last} = "
                f"{base * ladder.growth**last:g} s, above the {SLO_SECONDS.high:g} s a target may be; "
                f"lower slo.ladder.{name} or slo.ladder.growth",
            )
        return [
            SloTargetConfig(ttft=ladder.ttft * ladder.growth**p, tpot=ladder.tpot * ladder.growth**p)
            for p in range(tiers)
        ]
