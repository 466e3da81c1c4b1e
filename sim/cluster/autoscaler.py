"""Auto-scaling policy: keep the cluster's average normal freeness inside a band.

F_normal (physical usage only) is the signal, so headroom and queue inflation — which exist
to trigger migrations — do not cause spurious scale-outs. It is blind to queues, though; with
``queue_aware`` the signal also counts queued requests' physical demand (Llumnix's public
code scales on that). The condition must hold for
``sustain`` seconds before acting, and the timer restarts after every action, so a steady
load inside the band never makes the cluster oscillate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from sim.config import AutoscaleConfig
from sim.instance.load import LoadReport
from sim.instance.virtual_usage import queue_aware_freeness

SCALE_OUT = "scale_out"
SCALE_IN = "scale_in"


@dataclass
class AutoScaler:
    config: AutoscaleConfig
    below_since: Optional[float] = None
    above_since: Optional[float] = None

    def freeness(self, report: LoadReport) -> float:
        """The scaling signal of one instance: F_normal, or the queue-aware view."""
        if not self.config.queue_aware:
            return report.freeness_normal
        return queue_aware_freeness(
            report.capacity_blocks,
            report.used_blocks + report.reserved_blocks,
            report.num_running,
            report.num_waiting,
            report.waiting_demand_blocks,
        )

    def decide(
        self, now: float, serving: Mapping[int, LoadReport], starting: int
    ) -> Optional[str]:
        """``scale_out``, ``scale_in`` or None, from the reports of serving (non-draining)
        instances and the number of instances still starting up."""
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
                return SCALE_OUT
        elif average > config.high:
            self.below_since = None
            self.above_since = now if self.above_since is None else self.above_since
            if now - self.above_since >= config.sustain and len(serving) > config.min_instances and not starting:
                self.above_since = None
                return SCALE_IN
        else:
            self.below_since = self.above_since = None
        return None


def drain_candidate(serving: Mapping[int, LoadReport]) -> int:
    """The instance to drain: fewest running requests (then fewest queued, then newest)."""
    return min(serving, key=lambda i: (serving[i].num_running, serving[i].num_waiting, -i))
