"""Spot (preemptible) pools: what a pool's instances cost, when the cloud takes them back, and
what the cluster does in the grace period between the notice and the stop (``sim.engine.spot``).

A pool with a ``spot`` section is a spot pool. Its preemption source is a Poisson rate per
instance-hour (each instance draws its own lifetime from the run's seed) or the replay of an
availability trace (``traces/spot/``). At a notice the instance stops taking requests and
evacuates by ``evacuation``; at ``grace`` seconds after it the instance stops, and whatever
it still holds is lost as an instance failure loses it (``on_failure``). A replacement of
the kind ``replacement`` names serves ``cold_start`` seconds after the notice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, Optional

from sim.config.ranges import DURATION, SECONDS, Range, check_ranges, require

# AWS: "a warning that is issued two minutes before Amazon EC2 stops or terminates your Spot
# Instance" (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html)
AWS_GRACE_SECONDS = 120.0


@dataclass
class PreemptionConfig:
    """Where a spot pool's notices come from: ``rate_per_hour`` (Poisson, per instance-hour)
    or ``trace`` (an availability trace replayed from its second ``start``), one of them."""

    rate_per_hour: Optional[float] = None  # notices per instance-hour (exponential lifetimes)
    trace: Optional[str] = None  # an availability trace: ms,add|remove,node rows (traces/spot/)
    start: float = 0.0  # trace: the trace's second at which the run begins

    RANGES: ClassVar[dict[str, Range]] = {
        "rate_per_hour": Range(0.0, 3600.0, "per instance-hour", open_low=True),
        "start": SECONDS,
    }

    def __post_init__(self) -> None:
        check_ranges(self)
        require(
            (self.rate_per_hour is None) != (self.trace is None),
            "rate_per_hour/trace: a preemption source is one of them ({rate_per_hour: 0.5} or {trace: path})",
        )
        require(self.trace is not None or self.start == 0.0, "start: only a trace is replayed from a second of its own")


@dataclass
class SpotConfig:
    """A spot pool's price, preemption source, grace period and what is done in it."""

    price: float  # per GPU-hour, in the currency of cost (USD with cost.sku_prices); no default: cite yours
    preemption: PreemptionConfig  # the notices' source
    grace: float = AWS_GRACE_SECONDS  # seconds from a notice to the stop (AWS: 2 minutes; GCP: 30 s)
    # at the notice: live-migrate the running requests away (live), abort and dispatch every
    # request again to be computed from scratch (recompute), or keep serving and lose what is
    # left at the stop (none)
    evacuation: Literal["live", "recompute", "none"] = "live"
    # live: which running request moves next, the one holding most KV blocks (largest) or the
    # most critical tier's (tier; its largest first)
    order: Literal["largest", "tier"] = "largest"
    # what replaces a preempted instance: another of this pool (spot), one of the first pool
    # without spot (on-demand), or nothing (none)
    replacement: Literal["spot", "on-demand", "none"] = "spot"
    cold_start: float = 0.0  # seconds from the notice until the replacement serves
    # what happens to a request the stop loses: ended (abort) or dispatched again from scratch
    # as a client retrying would (retry), as faults[*].on_failure says of a failed instance
    on_failure: Literal["abort", "retry"] = "retry"

    RANGES: ClassVar[dict[str, Range]] = {
        "price": Range(0.0, 1e6, "per GPU-hour"),
        "grace": DURATION,
        "cold_start": DURATION,
    }

    def __post_init__(self) -> None:
        check_ranges(self)

