"""Auto-scaling rules: from load reports of the serving instances to scale-out/in decisions.

The engine carries decisions out (``sim.engine.scaling``): scale-out after a cold start,
scale-in by draining (the fake request of infinite usage makes the instance a migration
source until it is empty).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Mapping, NamedTuple, Optional

from sim.config.registry import Registry
from sim.config import AutoscaleConfig
from sim.instance.load import LoadReport, freeness_normal, queue_aware_freeness

SCALE_OUT = "scale_out"
SCALE_IN = "scale_in"


class ScalingDecision(NamedTuple):
    action: str  # SCALE_OUT or SCALE_IN
    count: int = 1  # instances to add (scale-out)
    instance: Optional[int] = None  # the instance to drain (scale-in)


class ScalingRule(ABC):
    def __init__(self, config: AutoscaleConfig) -> None:
        self.config = config

    def freeness(self, report: LoadReport) -> float:
        """The scaling signal of one instance: F_normal, or the queue-aware view."""
        if self.config.queue_aware:
            return queue_aware_freeness(report)
        return freeness_normal(report)

    @abstractmethod
    def decide(
        self, now: float, serving: Mapping[int, LoadReport], starting: int
    ) -> Optional[ScalingDecision]:
        """From the reports of serving (non-draining) instances and the number of instances
        still starting up, the action to take now, if any."""


SCALING_RULES: Registry[type[ScalingRule]] = Registry("scaling", "autoscale.rule")


@SCALING_RULES.register("sustained-band")
class SustainedBand(ScalingRule):
    """Keep the average freeness within [low, high] (the paper's prose, §4.4.4): act when the
    condition has held for ``sustain`` seconds, one instance per action, and restart the timer
    after each action, so a steady load inside the band never makes the cluster oscillate.
    Scale-in drains the instance with the fewest running requests."""

    def __init__(self, config: AutoscaleConfig) -> None:
        super().__init__(config)
        self.below_since: Optional[float] = None
        self.above_since: Optional[float] = None

    def decide(
        self, now: float, serving: Mapping[int, LoadReport], starting: int
    ) -> Optional[ScalingDecision]:
        if not serving:
            return None
        average = sum(map(self.freeness, serving.values())) / len(serving)
        config = self.config
        if average < config.low:
            self.above_since = None
            self.below_since = now if self.below_since is None else self.below_since
            if (
                now - self.below_since >= config.sustain
                and len(serving) + starting < config.max_instances
            ):
                self.below_since = None
                return ScalingDecision(SCALE_OUT)
        elif average > config.high:
            self.below_since = None
            self.above_since = now if self.above_since is None else self.above_since
            if (
                now - self.above_since >= config.sustain
                and len(serving) > config.min_instances
                and not starting
            ):
                self.above_since = None
                return ScalingDecision(SCALE_IN, instance=fewest_running(serving))
        else:
            self.below_since = self.above_since = None
        return None


def fewest_running(serving: Mapping[int, LoadReport]) -> int:
    """The instance to drain: fewest running requests (then fewest queued, then newest)."""
    return min(serving, key=lambda i: (serving[i].num_running, serving[i].num_waiting, -i))
