"""Dispatch rules: which instance a new request goes to, from load reports only.

A rule sees the ``ClusterView`` and, of the request, only its tier and block demand. Rules
that rank instances by a load signal keep the signal of each instance current (recomputed
when reports arrive and after each dispatch to it), so choosing is one ``min``/``max``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from sim.config.registry import Registry
from sim.cluster.view import ClusterView
from sim.config import SchedulerConfig
from sim.instance.load import LoadReport, dispatch_freeness, memory_load


@dataclass(frozen=True, slots=True)
class DispatchInfo:
    """What the global scheduler may know about a request it dispatches."""

    tier: int
    demand_blocks: int


class DispatchRule(ABC):
    """Chooses a dispatch target; the hooks let a rule keep per-instance state current."""

    def __init__(self, config: SchedulerConfig) -> None:
        self.config = config

    @abstractmethod
    def choose(self, view: ClusterView, request: DispatchInfo) -> int:
        """The target among ``view.instances`` (there is at least one)."""

    def observed(self, view: ClusterView, reports: Mapping[int, LoadReport]) -> None:
        """Reports arrived (``view`` already holds them)."""

    def dispatched(self, view: ClusterView, target: int) -> None:
        """A request was dispatched to ``target`` (its demand is in ``view.pending``)."""

    def removed(self, instance_id: int) -> None:
        """``instance_id`` takes no more dispatches."""


DISPATCH_RULES: Registry[type[DispatchRule]] = Registry("dispatch", "scheduler.dispatch")


@DISPATCH_RULES.register("round-robin")
class RoundRobin(DispatchRule):
    """Cycle through the instances regardless of load (DeepSpeed-MII style baseline)."""

    def __init__(self, config: SchedulerConfig) -> None:
        super().__init__(config)
        self._next = 0

    def choose(self, view: ClusterView, request: DispatchInfo) -> int:
        target = view.instances[self._next % len(view.instances)]
        self._next += 1
        return target


class _RankedByLoad(DispatchRule):
    """Keeps ``load(view, i)`` of every dispatchable instance; lowest load wins."""

    def __init__(self, config: SchedulerConfig) -> None:
        super().__init__(config)
        self.loads: dict[int, float] = {}

    @abstractmethod
    def load(self, view: ClusterView, instance_id: int) -> float:
        """The instance's load as this rule ranks it (lower is chosen first)."""

    def observed(self, view: ClusterView, reports: Mapping[int, LoadReport]) -> None:
        pending = view.pending
        for instance_id in reports:
            if instance_id in pending:
                self.loads[instance_id] = self.load(view, instance_id)

    def dispatched(self, view: ClusterView, target: int) -> None:
        self.loads[target] = self.load(view, target)

    def removed(self, instance_id: int) -> None:
        self.loads.pop(instance_id, None)

    def choose(self, view: ClusterView, request: DispatchInfo) -> int:
        return min(view.instances, key=self.loads.__getitem__)


@DISPATCH_RULES.register("memory-load")
class LowestMemoryLoad(_RankedByLoad):
    """The lowest memory load — used blocks plus queued demand over capacity (the artifact's
    ``block`` strategy); llumsim's INFaaS++ before the paper-fidelity work."""

    def load(self, view: ClusterView, instance_id: int) -> float:
        report = view.reports.get(instance_id)
        pending = view.pending.get(instance_id, 0)
        if report is None:
            return float(pending)
        return memory_load(report, pending)


@DISPATCH_RULES.register("freeness")
class HighestFreeness(_RankedByLoad):
    """The highest F_full (Llumnix §4.4.1), less the demand dispatched since the report."""

    def load(self, view: ClusterView, instance_id: int) -> float:
        report = view.reports.get(instance_id)
        if report is None:
            return -math.inf  # not reported yet: the freest possible
        # ranked by −F: the lowest is the freest, the first instance on ties as ``max`` gives
        return -dispatch_freeness(report, view.pending.get(instance_id, 0))


class FixedPlacement(DispatchRule):
    """The i-th request goes to ``targets[i]``: for experiments that decide where load sits."""

    def __init__(self, targets: Sequence[int], config: SchedulerConfig | None = None) -> None:
        super().__init__(config or SchedulerConfig())
        self._targets = iter(targets)

    def choose(self, view: ClusterView, request: DispatchInfo) -> int:
        return next(self._targets)


class FrontendFallback:
    """While the global scheduler is away, frontends dispatch on their own: round-robin or
    at random over the live instances (Llumnix §4.5)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self._next = 0

    def choose(self, instances: Sequence[int], kind: str) -> int:
        if kind == "random":
            return instances[int(self.rng.integers(len(instances)))]
        self._next += 1
        return instances[self._next % len(instances)]
