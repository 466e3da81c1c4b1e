"""The global scheduler: a dispatch rule, a pairing rule, an arrival ordering and a priority
mode, composed.

As in Llumnix's own global scheduler (dispatch, migration and scaling schedulers, each a
named policy), every part is chosen by config: ``scheduler.name`` picks a preset and the
other ``scheduler.*`` keys override its parts. It sees load reports only; its answers are
dispatch targets and (source, destination) pairs.

Presets. The first four are the Llumnix artifact's baselines as its code ran them
(``vllm/core/request_scheduler.py``, ``vllm/instance_info.py``; docs/schedulers.md):
per-step load reports, no dispatched-load accounting, the ``load`` dispatch, pairing by
``need_migrate_prefill_v2``, LCFS candidates, priorities as a load target. The ``-prose``
presets are the paper's text (Algorithm 1, §4.4): F_full dispatch, persistent threshold
pairs, the shortest lowest-priority candidate, K-tier headroom, 50 ms reports.
"""

from __future__ import annotations

from typing import Callable, Mapping, NamedTuple, Optional, Sequence, Sized

from sim.cluster.dispatch import DISPATCH_RULES, DispatchInfo, DispatchRule
from sim.cluster.ordering import ARRIVAL_ORDERINGS, TIER_BLIND_ORDERINGS
from sim.cluster.pairing import PAIRING_RULES, PairingRule
from sim.cluster.priority import PRIORITY_MODES, PriorityMode
from sim.cluster.slo_predictor import InstanceModel
from sim.cluster.step_reports import StepReports
from sim.cluster.view import ClusterView
from sim.config import ConfigError, SchedulerConfig, SloTargetConfig
from sim.instance.load import LoadReport
from sim.instance.request import Request

NO_PAIRING = "none"


class Preset(NamedTuple):
    dispatch: str
    pairing: str  # NO_PAIRING: the scheduler never migrates
    ordering: str
    priority: str  # priority mode
    reports: str  # per-step or periodic
    count_dispatched_load: bool
    load_control: bool
    candidate: str  # migration candidate rule (sim.instance.candidates)


_ARTIFACT = dict(ordering="arrival", reports="per-step", count_dispatched_load=False, candidate="lcfs")
_PROSE = dict(
    ordering="tier-first",
    reports="periodic",
    count_dispatched_load=True,
    load_control=True,
    candidate="lowest-tier-shortest",
)

PRESETS: dict[str, Preset] = {
    "round-robin": Preset("round-robin", NO_PAIRING, priority="none", load_control=False, **_ARTIFACT),
    "infaas++": Preset("load", NO_PAIRING, priority="none", load_control=True, **_ARTIFACT),
    "llumnix": Preset("load", "artifact", priority="load-target", load_control=True, **_ARTIFACT),
    "llumnix-base": Preset("load", "artifact", priority="none", load_control=True, **_ARTIFACT),
    "llumnix-prose": Preset("freeness", "freeness-threshold", priority="headroom", **_PROSE),
    "llumnix-prose-base": Preset("freeness", "freeness-threshold", priority="none", **_PROSE),
}


def resolve(config: SchedulerConfig) -> Preset:
    """The preset named by ``scheduler.name`` with every explicitly set part in its place."""
    preset = PRESETS.get(config.name)
    if preset is None:
        known = ", ".join(sorted(PRESETS))
        raise ConfigError(f"scheduler.name: unknown scheduler {config.name!r} (known: {known})")
    chosen = {
        "dispatch": config.dispatch,
        "pairing": config.pairing,
        "ordering": config.ordering,
        "priority": config.priority.mode,
        "reports": config.reports,
        "count_dispatched_load": config.count_dispatched_load,
        "load_control": config.load_control,
    }
    return preset._replace(**{key: value for key, value in chosen.items() if value is not None})


def reads_tiers(config: SchedulerConfig) -> bool:
    """Whether any part of this scheduler reads a request's tier or K, as each part declares
    in its own class body (``reads_tiers``: one inherited does not count, so a new rule reads
    tiers until it says otherwise; orderings: ``TIER_BLIND_ORDERINGS``). False: tiers only
    label the requests (``sim.sweep.sharing``)."""
    settings = resolve(config)
    priority = PRIORITY_MODES.get(settings.priority)
    local_order = config.priority.local or priority.local_order
    parts = [priority, DISPATCH_RULES.get(settings.dispatch)]
    if settings.pairing != NO_PAIRING:
        parts.append(PAIRING_RULES.get(settings.pairing))
    return (
        any(vars(part).get("reads_tiers", True) for part in parts)
        or local_order == "tier"
        or settings.ordering not in TIER_BLIND_ORDERINGS
    )


class GlobalScheduler:
    """Instance-level load in, decisions out."""

    def __init__(
        self,
        config: SchedulerConfig,
        tiers: int = 1,
        dispatch_rule: Optional[DispatchRule] = None,
        slo_targets: Sequence[SloTargetConfig] = (),
    ) -> None:
        self.settings = settings = resolve(config)
        self.priority: PriorityMode = PRIORITY_MODES.get(settings.priority)(config, tiers)
        self.local_tiers = (config.priority.local or self.priority.local_order) == "tier"
        self.view = ClusterView(slo_targets)
        # per-step reports stored but not yet settled into the view's pending demand and the
        # dispatch rule's cached loads (see step_reports)
        self._unsettled: set[int] = set()
        self.dispatch_rule = dispatch_rule or DISPATCH_RULES.get(settings.dispatch)(config, self.priority)
        self.pairing_rule: Optional[PairingRule] = (
            None
            if settings.pairing == NO_PAIRING
            else PAIRING_RULES.get(settings.pairing)(config, self.priority, settings.load_control)
        )
        self._ordering = ARRIVAL_ORDERINGS.get(settings.ordering)

    @property
    def migrates(self) -> bool:
        return self.pairing_rule is not None

    @property
    def reports_per_step(self) -> bool:
        return self.settings.reports == "per-step"

    def wants_step_reports(self, other_reader: bool) -> bool:
        """Whether per-step reports are delivered: they are this scheduler's cadence and
        something reads them — its dispatch rule, its pairing, or another reader (an
        auto-scaler, the hand-offs of prefill/decode disaggregation; round-robin alone reads
        none, and building them was a quarter of its event loop)."""
        readers = self.dispatch_rule.reads_reports or self.migrates or other_reader
        return self.reports_per_step and readers

    @property
    def instances(self) -> Sequence[int]:
        """Instances that accept dispatches, in id order."""
        return self.view.instances

    # ------------------------------------------------------------------ instance set
    def add_instance(
        self,
        instance_id: int,
        report: Optional[LoadReport],
        model: Optional[InstanceModel] = None,
        pool: str = "cluster",
        role: str = "mixed",
    ) -> None:
        """The instance accepts dispatches; ``report`` is its first load report, if any,
        ``model`` its pool's replica model and limits (what SLO prediction times), ``pool``
        that pool's name and ``role`` its role."""
        self.view.add(instance_id, model, pool, role)
        self.dispatch_rule.added(self.view, instance_id)
        if report is not None:
            self.observe({instance_id: report})

    def remove_instance(self, instance_id: int) -> None:
        """No more dispatches or migrations to it (draining, failed or removed); a draining
        instance keeps reporting and stays a migration source."""
        self.view.remove(instance_id)
        self.dispatch_rule.removed(instance_id)
        if self.pairing_rule is not None:
            self.pairing_rule.drop_destination(instance_id)

    # ------------------------------------------------------------------ decisions
    def observe(self, reports: Mapping[int, LoadReport]) -> None:
        """Load reports arrived."""
        self.view.observe(reports)
        self.dispatch_rule.observed(self.view, reports)

    def step_reports(
        self, live: Sized, pairing_every: int, pairing_round: Callable[[], None]
    ) -> StepReports:
        """The delivery point of per-step reports (one per executed step): each is stored
        at once; what it changes for dispatch — the pending demand it absorbs, the rule's
        cached load — is settled at the next dispatch, once however many reports an
        instance filed since (both are idempotent, and only a dispatch reads them)."""
        return StepReports(
            self.view.reports,
            self._unsettled,
            live,
            pairing_every,
            pairing_round if self.migrates else None,
        )

    def _settle(self) -> None:
        """Apply the per-step reports stored since the last dispatch as ``observe`` would."""
        pending = self.view.pending
        reported = [i for i in self._unsettled if i in pending]  # those taking dispatches
        for instance_id in reported:
            pending[instance_id] = 0
        self.dispatch_rule.observed_since(self.view, reported)
        self._unsettled.clear()

    def dispatch(self, request: DispatchInfo, among: Optional[list[int]] = None) -> int:
        """The instance for a new request (there is at least one dispatchable instance);
        ``among``, the dispatchable instances able to serve it when only some are (pools of
        other limits): the rule chooses as if they were the only ones."""
        if self._unsettled:
            self._settle()
        target = self.dispatch_rule.choose(self.view if among is None else self.view.among(among), request)
        if self.settings.count_dispatched_load:
            self.view.note_dispatch(target, request.demand_blocks)
        self.dispatch_rule.dispatched(self.view, target)
        return target

    def migration_pairs(self, among: Optional[list[int]] = None) -> Mapping[int, int]:
        """A pairing round: source -> destination (empty if this scheduler never migrates);
        ``among``: the only instances that may be destinations (decode and mixed ones, with
        prefill/decode disaggregation)."""
        if self.pairing_rule is None:
            return {}
        return dict(self.pairing_rule.pair(self.view if among is None else self.view.among(among)))

    def destination_for(self, source: int) -> Optional[int]:
        return None if self.pairing_rule is None else self.pairing_rule.pairs.get(source)

    def should_migrate(self, source: LoadReport, destination: LoadReport) -> bool:
        return self.pairing_rule is not None and self.pairing_rule.should_start(source, destination)

    @property
    def continues_after_commit(self) -> bool:
        return self.pairing_rule is not None and self.pairing_rule.continues_after_commit

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
