"""Migration pairing rules: which overloaded instance sends to which free one.

A rule only pairs instances (from load reports); which request moves is the source
llumlet's choice (``sim.instance.candidates``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Mapping

from sim.config.registry import Registry
from sim.cluster.view import ClusterView
from sim.config import SchedulerConfig
from sim.instance.load import LoadReport, freeness_full


class PairingRule(ABC):
    """Keeps the current pairs (source -> destination); an instance is in at most one."""

    def __init__(self, config: SchedulerConfig) -> None:
        self.config = config
        self.pairs: dict[int, int] = {}

    @abstractmethod
    def pair(self, view: ClusterView) -> Mapping[int, int]:
        """A pairing round: update and return the pairs."""

    @abstractmethod
    def should_start(self, source: LoadReport, destination: LoadReport) -> bool:
        """Whether a paired source starts a migration now (at a pairing round, and again
        after each commit while the pair lasts)."""


PAIRING_RULES: Registry[type[PairingRule]] = Registry("pairing", "scheduler.pairing")


@PAIRING_RULES.register("freeness-threshold")
class FreenessThresholds(PairingRule):
    """Llumnix §4.4.3: instances whose F_full is below ``source_below`` are paired with
    instances above ``destination_above`` — lowest with highest, repeatedly. A pair lasts
    until either side is back within the thresholds; a source keeps migrating, one request
    at a time, while it is still below the threshold and neither side is migrating."""

    def pair(self, view: ClusterView) -> Mapping[int, int]:
        low, high = self.config.source_below, self.config.destination_above
        reported = sorted(view.reports)
        freeness = {i: freeness_full(view.reports[i]) for i in reported}
        dispatchable = set(view.instances)
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
        return self.pairs

    def should_start(self, source: LoadReport, destination: LoadReport) -> bool:
        return (
            not source.migrating
            and not destination.migrating
            and freeness_full(source) < self.config.source_below
        )
