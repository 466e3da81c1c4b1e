"""Dispatch rules: which instance a new request goes to, from load reports only.

A rule sees the ``ClusterView`` and, of the request, only its tier and block demand; the
priority mode (``sim.cluster.priority``) says what an instance's priority reservation is
for that tier. Rules that rank instances by a load cache each instance's load and recompute
it only when a dispatch finds it stale (a report arrived, or a request went there since),
so choosing is one ``min`` — unless the reservation depends on the request's tier, when
loads are computed per dispatch.

The artifact's rules (``load``, ``block``; ``vllm/core/request_scheduler.py``) dispatch
round-robin until every instance has reported once, pick the lowest load, and break ties
towards the highest instance id (its ascending list is a reversed stable descending sort).

Part of the compiled engine (``sim.native``): each rule is registered by a call after its
class (a class decorator would make mypyc build the class as a plain Python one), and every
class admits interpreted subclasses, so a new rule subclasses any of them with either engine.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Collection, Final, Mapping, Optional, Sequence

import numpy as np
from mypy_extensions import mypyc_attr

from sim.cluster.priority import PriorityMode
from sim.cluster.slo_predictor import predict
from sim.cluster.view import ClusterView
from sim.config import SchedulerConfig
from sim.config.registry import Registry
from sim.instance.load import (
    BUSY_REMAINING_STEPS,
    LoadReport,
    artifact_dispatch_load,
    block_load,
    dispatch_freeness,
)

# dispatch_load: a high-priority request keeps the normal choice unless some instance's
# priority load is below this (``minn_load = 10000``)
ARTIFACT_PRIORITY_LOAD_CEILING: Final = 10000.0


@dataclass(frozen=True, slots=True)
class DispatchInfo:
    """What the global scheduler may know about a request it dispatches."""

    tier: int
    demand_blocks: int
    tokens: int = 0  # its prompt (with what it generated before a retry): what it will prefill
    # instance -> its leading blocks cached there (the cache locality Llumnix's dispatch asks
    # a meta service for); given only to a rule that ``reads_cache``
    cached_blocks: Optional[Mapping[int, int]] = None


@mypyc_attr(allow_interpreted_subclasses=True)
class DispatchRule(ABC):
    """Chooses a dispatch target; the hooks let a rule keep per-instance state current."""

    reads_reports: ClassVar[bool] = True  # False: the choice never looks at a load report
    reads_cache: ClassVar[bool] = False  # True: it is given each instance's cached prefix
    reads_slo_targets: ClassVar[bool] = False  # True: it works against per-tier SLO targets (a config naming it sets slo)

    def __init__(self, config: SchedulerConfig, priority: PriorityMode | None = None) -> None:
        self.config = config
        self.priority = priority or PriorityMode(config, tiers=1)

    @abstractmethod
    def choose(self, view: ClusterView, request: DispatchInfo) -> int:
        """The target among ``view.instances`` (there is at least one)."""

    def added(self, view: ClusterView, instance_id: int) -> None:
        """``instance_id`` accepts dispatches now (it may not have reported yet)."""

    def observed(self, view: ClusterView, reports: Mapping[int, LoadReport]) -> None:
        """Reports arrived (``view`` already holds them)."""

    def observed_since(self, view: ClusterView, instance_ids: Collection[int]) -> None:
        """Per-step reports of these dispatchable instances arrived since the last dispatch
        (``view`` holds the latest of each)."""
        self.observed(view, {i: view.reports[i] for i in instance_ids})

    def dispatched(self, view: ClusterView, target: int) -> None:
        """A request was dispatched to ``target`` (its demand is in ``view.pending``)."""

    def removed(self, instance_id: int) -> None:
        """``instance_id`` takes no more dispatches."""


DISPATCH_RULES: Registry[type[DispatchRule]] = Registry("dispatch", "scheduler.dispatch")


@mypyc_attr(allow_interpreted_subclasses=True)
class RoundRobin(DispatchRule):
    """Cycle through the instances regardless of load (the artifact's ``balanced``, DeepSpeed-
    MII style): with every request a new session it is plain round-robin."""

    reads_reports: ClassVar[bool] = False
    reads_tiers: ClassVar[bool] = False

    def __init__(self, config: SchedulerConfig, priority: PriorityMode | None = None) -> None:
        super().__init__(config, priority)
        self._next = 0

    def choose(self, view: ClusterView, request: DispatchInfo) -> int:
        target = view.instances[self._next % len(view.instances)]
        self._next += 1
        return target


DISPATCH_RULES.register("round-robin")(RoundRobin)


@mypyc_attr(allow_interpreted_subclasses=True)
class _Ranked(DispatchRule):
    """Chooses the instance with the lowest ``load``; on ties the lowest id, or the highest
    with ``prefer_highest_id``. A report only marks its instance's load stale; loads are
    recomputed when a dispatch needs them (per-step reports far outnumber dispatches)."""

    prefer_highest_id: ClassVar[bool] = False

    def __init__(self, config: SchedulerConfig, priority: PriorityMode | None = None) -> None:
        super().__init__(config, priority)
        self.loads: dict[int, float] = {}  # tier-independent loads, current but for ``stale``
        self.stale: set[int] = set()

    @property
    def tier_dependent(self) -> bool:
        """Whether the load depends on the request's tier (then it is not cached). With one
        tier every request is of the lowest tier: it does not."""
        return self.priority.tier_dependent and self.priority.tiers > 1

    @abstractmethod
    def load(self, view: ClusterView, instance_id: int, tier: int) -> float:
        """The instance's load for a request of ``tier`` (lower is chosen first)."""

    def observed(self, view: ClusterView, reports: Mapping[int, LoadReport]) -> None:
        pending = view.pending
        self.stale.update(i for i in reports if i in pending)

    def observed_since(self, view: ClusterView, instance_ids: Collection[int]) -> None:
        self.stale.update(instance_ids)

    def dispatched(self, view: ClusterView, target: int) -> None:
        self.stale.add(target)

    def removed(self, instance_id: int) -> None:
        self.loads.pop(instance_id, None)
        self.stale.discard(instance_id)

    def choose(self, view: ClusterView, request: DispatchInfo) -> int:
        instances = reversed(view.instances) if self.prefer_highest_id else view.instances
        if not self.tier_dependent:
            if self.stale:
                for instance_id in self.stale:
                    self.loads[instance_id] = self.load(view, instance_id, 0)
                self.stale.clear()
            return min(instances, key=self.loads.__getitem__)
        return min(instances, key=lambda i: self.tiered_key(view, i, request.tier))

    def tiered_key(self, view: ClusterView, instance_id: int, tier: int) -> tuple:
        return (self.load(view, instance_id, tier),)


@mypyc_attr(allow_interpreted_subclasses=True)
class _RoundRobinUntilReported(_Ranked):
    """The artifact's rules: round-robin until every instance has reported once."""

    prefer_highest_id: ClassVar[bool] = True

    def __init__(self, config: SchedulerConfig, priority: PriorityMode | None = None) -> None:
        super().__init__(config, priority)
        self._pointer = 0
        self._unreported: set[int] = set()

    def added(self, view: ClusterView, instance_id: int) -> None:
        if instance_id not in view.reports:
            self._unreported.add(instance_id)

    def observed(self, view: ClusterView, reports: Mapping[int, LoadReport]) -> None:
        self._unreported.difference_update(reports)
        super().observed(view, reports)

    def observed_since(self, view: ClusterView, instance_ids: Collection[int]) -> None:
        if self._unreported:
            self._unreported.difference_update(instance_ids)
        self.stale.update(instance_ids)

    def removed(self, instance_id: int) -> None:
        self._unreported.discard(instance_id)
        super().removed(instance_id)

    def choose(self, view: ClusterView, request: DispatchInfo) -> int:
        if self._unreported:
            target = view.instances[self._pointer % len(view.instances)]
            self._pointer += 1
            return target
        return super().choose(view, request)


@mypyc_attr(allow_interpreted_subclasses=True)
class ArtifactLoad(_RoundRobinUntilReported):
    """The artifact's ``load`` dispatch (``request_scheduler.py::dispatch_load``): the lowest
    dispatch load, −(free − watermark − queued blocks − reservation) / (running + queued).
    A request of a prioritised tier takes, in the order of the normal load, the instance
    with the lowest load for its tier (the ``priority`` strategy for K = 2)."""

    reads_tiers: ClassVar[bool] = False  # only through its priority mode

    def load(self, view: ClusterView, instance_id: int, tier: int) -> float:
        report = view.reports.get(instance_id)
        if report is None:
            return -math.inf  # a never-reported instance: the artifact's dummy info
        reservation = self.priority.dispatch_reservation(report, tier)
        return artifact_dispatch_load(report, reservation, view.pending.get(instance_id, 0))

    def tiered_key(self, view: ClusterView, instance_id: int, tier: int) -> tuple:
        normal = self.load(view, instance_id, self.priority.tiers - 1)
        if tier == self.priority.tiers - 1:
            return (normal,)
        own = min(self.load(view, instance_id, tier), ARTIFACT_PRIORITY_LOAD_CEILING)
        return (own, normal)


DISPATCH_RULES.register("load")(ArtifactLoad)


@mypyc_attr(allow_interpreted_subclasses=True)
class SloAware(ArtifactLoad):
    """Among the instances predicted to meet the request's tier SLO (``sim.cluster.
    slo_predictor``: TTFT and TPOT from the last report and the replica model), the one with
    the lowest ``load`` dispatch load; if none, the one with the smallest predicted violation
    — the larger of predicted TTFT and TPOT over their targets, an instance whose prefill
    must wait for memory after every other. No round-robin start: an unreported instance is
    predicted as empty."""

    reads_tiers: ClassVar[bool] = True  # the request's tier picks its SLO targets
    reads_slo_targets: ClassVar[bool] = True

    def choose(self, view: ClusterView, request: DispatchInfo) -> int:
        target = view.slo_targets[request.tier]
        feasible: list[int] = []
        violation: dict[int, tuple[bool, float]] = {}
        for instance_id in view.instances:
            predicted = predict(
                view.reports.get(instance_id),
                view.pending.get(instance_id, 0),
                request.tokens,
                view.models[instance_id],
            )
            excess = max(predicted.ttft / target.ttft, predicted.tpot / target.tpot)
            if not predicted.waits_for_memory and excess <= 1.0:
                feasible.append(instance_id)
            else:
                violation[instance_id] = (predicted.waits_for_memory, excess)
        if feasible:
            # the lowest load, ties to the highest id as the ``load`` rule breaks them
            return min(reversed(feasible), key=lambda i: self.tiered_key(view, i, request.tier))
        return min(view.instances, key=violation.__getitem__)


DISPATCH_RULES.register("slo-aware")(SloAware)


@mypyc_attr(allow_interpreted_subclasses=True)
class CacheAware(ArtifactLoad):
    """Llumnix's ``CacheAware`` dispatch (main 24220fb, ``llumnix/global_scheduler/
    dispatch_policy.py`` 286-350; added in 0b491814): among the instances that are not busy
    (``dispatch_filter.py`` ``MetricBasedFilter``: remaining steps below
    ``BUSY_REMAINING_STEPS``), the one holding the longest cached prefix of the request; with
    none, the ``load`` rule. Llumnix hashes 256-token chunks and asks a meta service; here
    the instances' own blocks are looked up (``DispatchInfo.cached_blocks``), so the locality
    is exact and current. Ties in the prefix go to the lower load, the ``load`` rule's
    dispatch load (Llumnix's remaining steps, negated)."""

    reads_cache: ClassVar[bool] = True
    reads_tiers: ClassVar[bool] = False  # only through its priority mode, in the load

    def choose(self, view: ClusterView, request: DispatchInfo) -> int:
        cached = request.cached_blocks
        if cached:
            holding = [i for i in view.instances if cached.get(i, 0) > 0]
            if holding:
                loads = {i: self.load(view, i, request.tier) for i in holding}
                available = [i for i in holding if -loads[i] >= BUSY_REMAINING_STEPS]
                if available:
                    return min(reversed(available), key=lambda i: (-cached[i], loads[i]))
        return super().choose(view, request)


DISPATCH_RULES.register("cache-aware")(CacheAware)


@mypyc_attr(allow_interpreted_subclasses=True)
class ArtifactBlock(_RoundRobinUntilReported):
    """The artifact's ``block`` dispatch: the lowest memory load, (used + queued blocks) /
    capacity; it knows no priorities."""

    reads_tiers: ClassVar[bool] = False

    @property
    def tier_dependent(self) -> bool:
        return False

    def load(self, view: ClusterView, instance_id: int, tier: int) -> float:
        report = view.reports.get(instance_id)
        pending = view.pending.get(instance_id, 0)
        if report is None:
            return float(pending)
        return block_load(report, pending)


DISPATCH_RULES.register("block")(ArtifactBlock)


@mypyc_attr(allow_interpreted_subclasses=True)
class HighestFreeness(_Ranked):
    """The paper's prose (§4.4.1): the highest F_full — virtual usage with the head-of-line
    demand and the priority reservation — less the demand dispatched since the report."""

    reads_tiers: ClassVar[bool] = False  # only through its priority mode

    def load(self, view: ClusterView, instance_id: int, tier: int) -> float:
        report = view.reports.get(instance_id)
        if report is None:
            return -math.inf  # not reported yet: the freest possible
        reservation = self.priority.dispatch_reservation(report, tier)
        # ranked by −F: the lowest is the freest, the first instance on ties as ``max`` gives
        return -dispatch_freeness(report, view.pending.get(instance_id, 0), reservation)


DISPATCH_RULES.register("freeness")(HighestFreeness)


@mypyc_attr(allow_interpreted_subclasses=True)
class FixedPlacement(DispatchRule):
    """The i-th request goes to ``targets[i]``: for experiments that decide where load sits."""

    reads_reports: ClassVar[bool] = False

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
