"""The global scheduler interface: instance-level load in, decisions out.

A global scheduler sees load reports (``sim.instance.load.LoadReport``) and, for the request
being dispatched, only its tier and block demand. It answers with a dispatch target and, if it
migrates, (source, destination) pairs; which request moves is the source llumlet's choice.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Mapping

from sim.config import SchedulerConfig
from sim.instance.load import LoadReport


@dataclass(frozen=True, slots=True)
class DispatchInfo:
    """What the global scheduler may know about a request it dispatches."""

    tier: int
    demand_blocks: int


class GlobalScheduler(ABC):
    """Base class: keeps the live instance set and the latest report of each instance."""

    name: ClassVar[str]
    migrates: ClassVar[bool] = False  # pairs instances for migration
    uses_tiers: ClassVar[bool] = False  # instances honour tiers (headroom, queue priority)

    def __init__(self, config: SchedulerConfig) -> None:
        self.config = config
        self.instances: list[int] = []  # live instances that accept dispatches, in id order
        self.reports: dict[int, LoadReport] = {}
        # demand dispatched to an instance since its last report (so a burst between two
        # reports does not all land on the instance that looked freest)
        self.pending_demand: dict[int, int] = {}
        self.pairs: dict[int, int] = {}  # migration source -> destination (migrating schedulers)

    def add_instance(self, instance_id: int) -> None:
        if instance_id not in self.instances:
            self.instances.append(instance_id)
            self.instances.sort()
            self.pending_demand[instance_id] = 0

    def remove_instance(self, instance_id: int) -> None:
        """Stop dispatching to an instance (draining, failed or removed)."""
        if instance_id in self.instances:
            self.instances.remove(instance_id)
        self.pending_demand.pop(instance_id, None)
        self.reports.pop(instance_id, None)

    def observe(self, reports: Mapping[int, LoadReport]) -> None:
        """A round of load reports arrived."""
        for instance_id, report in reports.items():
            self.reports[instance_id] = report
            if instance_id in self.pending_demand:
                self.pending_demand[instance_id] = 0

    def dispatch(self, request: DispatchInfo) -> int:
        """Choose the instance for a new request (there is at least one live instance)."""
        target = self.choose(request)
        if self.config.count_dispatched_load:
            self.pending_demand[target] = self.pending_demand.get(target, 0) + request.demand_blocks
        return target

    @abstractmethod
    def choose(self, request: DispatchInfo) -> int:
        """Policy: the dispatch target."""

    def migration_pairs(self) -> dict[int, int]:
        """Current pairing, source -> destination; none for schedulers that do not migrate."""
        return {}


class RoundRobinScheduler(GlobalScheduler):
    """Cycle through live instances regardless of load (DeepSpeed-MII style baseline)."""

    name = "round-robin"

    def __init__(self, config: SchedulerConfig) -> None:
        super().__init__(config)
        self._next = 0

    def choose(self, request: DispatchInfo) -> int:
        target = self.instances[self._next % len(self.instances)]
        self._next += 1
        return target


class FixedPlacementScheduler(GlobalScheduler):
    """Dispatch the i-th request to ``targets[i]``: for experiments that decide where load sits."""

    name = "fixed-placement"

    def __init__(self, targets: list[int], config: SchedulerConfig | None = None) -> None:
        super().__init__(config or SchedulerConfig(name=self.name, count_dispatched_load=False))
        self._targets = iter(targets)

    def choose(self, request: DispatchInfo) -> int:
        return next(self._targets)


class InfaasScheduler(GlobalScheduler):
    """INFaaS++: the instance with the lowest memory load, counting queued demand; no migration."""

    name = "infaas++"

    def __init__(self, config: SchedulerConfig) -> None:
        super().__init__(config)
        self.loads: dict[int, float] = {}  # kept current so a dispatch is one min() over ids

    def load(self, instance_id: int) -> float:
        report = self.reports.get(instance_id)
        pending = self.pending_demand.get(instance_id, 0)
        if report is None:
            return float(pending)
        return report.memory_load + pending / report.capacity_blocks

    def observe(self, reports: Mapping[int, LoadReport]) -> None:
        super().observe(reports)
        for instance_id in reports:
            if instance_id in self.pending_demand:
                self.loads[instance_id] = self.load(instance_id)

    def remove_instance(self, instance_id: int) -> None:
        super().remove_instance(instance_id)
        self.loads.pop(instance_id, None)

    def dispatch(self, request: DispatchInfo) -> int:
        target = super().dispatch(request)
        self.loads[target] = self.load(target)
        return target

    def choose(self, request: DispatchInfo) -> int:
        return min(self.instances, key=self.loads.__getitem__)

