"""The cluster's load over a run: every ``timeseries_interval``, the tick's snapshot of every
live instance's report, kept for the time series that ``sim.metrics`` builds after the run
(the engine holds no metric code)."""

from __future__ import annotations

from typing import Callable, Optional

from sim.engine.result import LoadSample
from sim.instance.load import LoadReport


class Sampler:
    """``starting``: scale-outs in their cold start now; ``headroom``: each tier's adaptive
    headroom now (empty without it)."""

    def __init__(
        self, interval: float, starting: Callable[[], int], headroom: Callable[[], tuple[float, ...]]
    ) -> None:
        self.interval = interval
        self.starting = starting
        self.headroom = headroom
        self.samples: list[LoadSample] = []
        self.next_sample = 0.0  # when the tick next samples the cluster

    def due(self, now: float) -> bool:
        return now >= self.next_sample

    def sample(
        self, progress: Optional[Callable[[float], None]], now: float, reports: Optional[dict[int, LoadReport]]
    ) -> None:
        """The tick's job: keep the reports when a sample is due, and tell ``progress``."""
        if now >= self.next_sample:
            self.samples.append(LoadSample(now, self.starting(), tuple(reports.values()), self.headroom()))
            self.next_sample = now + self.interval
            if progress is not None:
                progress(now)
