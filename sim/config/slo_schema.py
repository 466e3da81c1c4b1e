"""Per-tier service-level objectives: the first-token and per-token targets each tier's
requests are judged by (``sim.metrics.attainment``) and SLO-aware rules dispatch against.

Three ways to write them: ``tiers``, one ``{ttft, tpot}`` per tier (K entries, tier 0 the most
critical); ``ladder``, tier 0's targets multiplied by ``growth`` per tier —
``ttft_p = ttft · growth^p`` — the exponential shape of the K-tier project's headroom
ladder, so K tiers take three numbers; or ``contract``, targets that hold still while K
changes: each request draws its own urgency u in [0, 1] (``sim.workload.urgency``) and its
targets lie at u along a geometric span, tightest to loosest, whatever K is. K tiers are
then how finely the scheduler sees those targets (tier = the K-th of the span u falls in):
the same requests, with the same targets, at every K. Under a ladder the contract itself
loosens as K grows (tier K−1 is growth^(K−1) times looser than tier 0), so two K's are not
judged by one contract. ``quantile`` is the share of a tier's requests that
must meet its targets for the tier to count as attained.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Optional

from sim.config.loader import OMIT_WHEN_EMPTY
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
class SloContractConfig:
    """A contract that holds still: the span of first-token and per-token targets (tightest,
    loosest; a request at urgency u gets ``tightest · (loosest / tightest)^u``) and the
    contract's own classes (``classes`` equal parts of the span, fixed whatever K is), which
    the summary's ``contract`` section judges each request's lateness over."""

    ttft: list[float] = field(default_factory=lambda: [1.0, 32.0])  # [tightest, loosest] s
    tpot: list[float] = field(default_factory=lambda: [0.1, 0.8])  # [tightest, loosest] s per token
    classes: int = 3  # parts of the span the contract is judged over (0 = the most urgent)

    RANGES: ClassVar[dict[str, Range]] = {"ttft": SLO_SECONDS, "tpot": SLO_SECONDS, "classes": Range(1, 64)}

    def __post_init__(self) -> None:
        check_ranges(self)
        for name in ("ttft", "tpot"):
            span = getattr(self, name)
            require(
                len(span) == 2 and span[0] <= span[1],
                f"{name}: a span is [tightest, loosest] with tightest <= loosest, got {span}",
            )

    def targets_at(self, urgency) -> tuple:
        """The (ttft, tpot) targets of requests at ``urgency`` (a number or an array in [0, 1])."""
        return tuple(span[0] * (span[1] / span[0]) ** urgency for span in (self.ttft, self.tpot))


@dataclass
class SloConfig:
    """The SLOs of a run: explicit ``tiers``, a ``ladder`` or a ``contract`` (exactly one)."""

    tiers: list[SloTargetConfig] = field(default_factory=list)
    ladder: Optional[SloLadderConfig] = None
    # omitted from the config's hash when unset, so runs made before contracts keep their keys
    contract: Optional[SloContractConfig] = field(default=None, metadata={OMIT_WHEN_EMPTY: True})
    quantile: float = 0.99  # a tier is attained when this share of its requests meets both

    # a quantile of 0 counts a tier attained with no request meeting its targets
    RANGES: ClassVar[dict[str, Range]] = {"quantile": Range(0.0, 1.0, open_low=True)}

    def __post_init__(self) -> None:
        check_ranges(self)
        given = bool(self.tiers) + (self.ladder is not None) + (self.contract is not None)
        require(given == 1, "tiers: give one of tiers, ladder or contract")

    def targets(self, tiers: int) -> list[SloTargetConfig]:
        """One target per tier 0..``tiers``−1 (the ladder expanded). A tier's target beyond
        what one written out may be names the ladder key and the product: the number in
        range's own message is one the user never wrote."""
        if self.contract is not None:  # a tier's targets: those at the urgent edge of its band
            return [SloTargetConfig(*self.contract.targets_at(p / tiers)) for p in range(tiers)]
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
