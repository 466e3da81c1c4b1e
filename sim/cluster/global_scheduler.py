"""The global scheduler: a dispatch rule, a pairing rule and an arrival ordering, composed.

As in Llumnix's own global scheduler (dispatch, migration and scaling schedulers, each a
named policy), every part is chosen by config: ``scheduler.name`` picks a preset bundle and
``scheduler.dispatch`` / ``pairing`` / ``ordering`` override its parts. It sees load reports
only; its answers are dispatch targets and (source, destination) pairs.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Optional, Sequence

from sim.cluster.dispatch import DISPATCH_RULES, DispatchInfo, DispatchRule
from sim.cluster.ordering import ARRIVAL_ORDERINGS
from sim.cluster.pairing import PAIRING_RULES, PairingRule
from sim.cluster.view import ClusterView
from sim.config import ConfigError, SchedulerConfig
from sim.instance.load import LoadReport
from sim.instance.request import Request

NO_PAIRING = "none"


class Preset(NamedTuple):
    dispatch: str
    pairing: str  # NO_PAIRING: the scheduler never migrates
    ordering: str
    uses_tiers: bool  # instances honour tiers (headroom, queue priority, preemption order)


PRESETS: dict[str, Preset] = {
    "round-robin": Preset("round-robin", NO_PAIRING, "tier-first", uses_tiers=False),
    "infaas++": Preset("memory-load", NO_PAIRING, "tier-first", uses_tiers=False),
    "llumnix-base": Preset("freeness", "freeness-threshold", "tier-first", uses_tiers=False),
    "llumnix": Preset("freeness", "freeness-threshold", "tier-first", uses_tiers=True),
}


class GlobalScheduler:
    """Instance-level load in, decisions out."""

    def __init__(self, config: SchedulerConfig, dispatch_rule: Optional[DispatchRule] = None) -> None:
        preset = PRESETS.get(config.name)
        if preset is None:
            known = ", ".join(sorted(PRESETS))
            raise ConfigError(f"scheduler.name: unknown scheduler {config.name!r} (known: {known})")
        self.config = config
        self.name = config.name
        self.uses_tiers = preset.uses_tiers
        self.view = ClusterView()
        self.dispatch_rule = dispatch_rule or DISPATCH_RULES.get(config.dispatch or preset.dispatch)(config)
        pairing = config.pairing or preset.pairing
        self.pairing_rule: Optional[PairingRule] = (
            None if pairing == NO_PAIRING else PAIRING_RULES.get(pairing)(config)
        )
        self._ordering = ARRIVAL_ORDERINGS.get(config.ordering or preset.ordering)

    @property
    def migrates(self) -> bool:
        return self.pairing_rule is not None

    @property
    def instances(self) -> Sequence[int]:
        """Instances that accept dispatches, in id order."""
        return self.view.instances

    # ------------------------------------------------------------------ instance set
    def add_instance(self, instance_id: int, report: LoadReport) -> None:
        self.view.add(instance_id)
        self.observe({instance_id: report})

    def remove_instance(self, instance_id: int) -> None:
        """No more dispatches to it (draining, failed or removed). Its pairs end at the next
        pairing round; a draining instance keeps reporting and stays a migration source."""
        self.view.remove(instance_id)
        self.dispatch_rule.removed(instance_id)

    # ------------------------------------------------------------------ decisions
    def observe(self, reports: Mapping[int, LoadReport]) -> None:
        """A round of load reports arrived."""
        self.view.observe(reports)
        self.dispatch_rule.observed(self.view, reports)

    def dispatch(self, request: DispatchInfo) -> int:
        """The instance for a new request (there is at least one dispatchable instance)."""
        target = self.dispatch_rule.choose(self.view, request)
        if self.config.count_dispatched_load:
            self.view.note_dispatch(target, request.demand_blocks)
        self.dispatch_rule.dispatched(self.view, target)
        return target

    def migration_pairs(self) -> Mapping[int, int]:
        """A pairing round: source -> destination (empty if this scheduler never migrates)."""
        return {} if self.pairing_rule is None else dict(self.pairing_rule.pair(self.view))

    def destination_for(self, source: int) -> Optional[int]:
        return None if self.pairing_rule is None else self.pairing_rule.pairs.get(source)

    def should_migrate(self, source: LoadReport, destination: LoadReport) -> bool:
        return self.pairing_rule is not None and self.pairing_rule.should_start(source, destination)

    # ------------------------------------------------------------------ outages
    def suspend(self) -> None:
        """The scheduler goes away: pairs end (in-flight migrations finish by themselves)."""
        if self.pairing_rule is not None:
            self.pairing_rule.pairs.clear()

    def resume(self, reports: Mapping[int, LoadReport]) -> None:
        """Back: schedule from fresh load reports, not the ones from before the outage."""
        self.view.reports.clear()
        self.observe(reports)

    def order(self, group: Sequence[Request]) -> Sequence[Request]:
        """The dispatch order of requests arriving at the same instant."""
        return self._ordering(group)
