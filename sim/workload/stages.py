"""Requests sent in stages, each stage after the one before it has ended — the way a load
generator such as inference-perf runs its ``load.stages`` (``sim.workload.inference_perf``).

A stage starts; ``lead`` seconds later its timer starts, and its requests arrive at their
``offset`` from the timer's start. The generator checks every ``poll`` seconds, counted from
the stage's start, whether all of the stage's requests have ended (finished or aborted); the
first check that finds them ended ends the stage, and the next stage starts ``interval``
seconds after that. A stage's arrival times therefore depend on how fast the run served the
stage before it: the engine's kernel plays them out (``sim.engine.kernel``), and
``Workload.arrival`` holds them as they would be if every request ended the moment it
arrived — the earliest the stages could run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Stages:
    """Stage k holds requests ``first[k]`` .. ``first[k + 1] - 1``, in arrival order."""

    first: np.ndarray  # int64, one per stage and one past the last: where each stage's requests begin
    offset: np.ndarray  # float64, per request: seconds after its stage's timer started
    rate: np.ndarray  # float64, per stage: the rate it asked for (requests/s)
    duration: np.ndarray  # float64, per stage: the seconds it asked for
    lead: float  # seconds from a stage's start to its timer's
    poll: float  # seconds between the generator's checks that a stage's requests have ended
    interval: float  # seconds from a stage's end to the next stage's start

    def __post_init__(self) -> None:
        for name, dtype in (("first", np.int64), ("offset", np.float64), ("rate", np.float64), ("duration", np.float64)):
            array = np.array(getattr(self, name), dtype=dtype)
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        if len(self.first) != len(self.rate) + 1 or len(self.duration) != len(self.rate):
            raise ValueError("stages: first, rate and duration describe different numbers of stages")
        if len(self.first) and (self.first[0] != 0 or np.any(np.diff(self.first) < 0) or self.first[-1] != len(self.offset)):
            raise ValueError("stages: first must run from 0 to the number of requests, never decreasing")

    def __len__(self) -> int:
        return len(self.rate)

    def of(self, ids: np.ndarray) -> np.ndarray:
        """The stage of each request id."""
        return np.searchsorted(self.first, np.asarray(ids, dtype=np.int64), side="right") - 1

    def ended(self, started: float, last_end: float, requests: int) -> float:
        """When the generator finds a stage that started at ``started`` over: at the first
        check at or after its last request ended (at its start, for a stage of none)."""
        if requests == 0:
            return started
        checks = max(1, math.ceil((last_end - started) / self.poll))
        return started + checks * self.poll

    def nominal_arrivals(self) -> np.ndarray:
        """Every request's arrival if each ended the moment it arrived: the earliest the stages
        can run (``Workload.arrival``; the kernel plays out the real times)."""
        arrival = np.empty(len(self.offset))
        start = 0.0
        for stage in range(len(self)):
            begin, end = int(self.first[stage]), int(self.first[stage + 1])
            origin = start + self.lead
            arrival[begin:end] = origin + self.offset[begin:end]
            last = float(arrival[end - 1]) if end > begin else start
            start = self.ended(start, last, end - begin) + self.interval
        return arrival
