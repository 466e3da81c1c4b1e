"""Llumnix's global scheduler: dispatch by freeness, pair migrations by freeness thresholds.

Everything here reads load reports only. Dispatch sends a request to the instance with the
highest F_full (counting demand dispatched since that instance's last report). Every
``pairing_every`` reports, instances whose F_full is below ``source_below`` are paired with
instances above ``destination_above`` — lowest with highest, repeatedly — and a pairing lasts
until either side is back within the thresholds. An instance takes part in at most one pair.
"""

from __future__ import annotations

from sim.cluster.base import DispatchInfo, GlobalScheduler


class LlumnixScheduler(GlobalScheduler):
    """Llumnix with K priority tiers (headroom and scheduling priority by tier)."""

    name = "llumnix"
    migrates = True
    uses_tiers = True

    def freeness(self, instance_id: int) -> float:
        """F_full as last reported, less the demand dispatched here since."""
        report = self.reports.get(instance_id)
        pending = self.pending_demand.get(instance_id, 0)
        if report is None:
            return float("inf")
        return report.freeness_full - pending / max(report.num_running, 1)

    def choose(self, request: DispatchInfo) -> int:
        return max(self.instances, key=self.freeness)

    def migration_pairs(self) -> dict[int, int]:
        low, high = self.config.source_below, self.config.destination_above
        reported = sorted(self.reports)
        freeness = {i: self.reports[i].freeness_full for i in reported}
        dispatchable = set(self.instances)
        for source, destination in list(self.pairs.items()):
            if (
                source not in freeness
                or destination not in dispatchable
                or freeness[source] >= low
                or freeness[destination] <= high
            ):
                del self.pairs[source]
        paired = set(self.pairs) | set(self.pairs.values())
        sources = sorted(
            (i for i in reported if freeness[i] < low and i not in paired),
            key=lambda i: (freeness[i], i),
        )
        destinations = sorted(
            (i for i in reported if freeness[i] > high and i in dispatchable and i not in paired),
            key=lambda i: (-freeness[i], i),
        )
        for source, destination in zip(sources, destinations):
            self.pairs[source] = destination
        return dict(self.pairs)


class LlumnixBaseScheduler(LlumnixScheduler):
    """Llumnix-base: migration on, every request treated as one tier (no headroom, FCFS)."""

    name = "llumnix-base"
    uses_tiers = False
