"""Migration pairing rules: which overloaded instance sends to which free one.

A rule only pairs instances (from load reports); which request moves is the source
llumlet's choice (``sim.instance.candidates``). Two rules:

* ``artifact`` (``vllm/core/request_scheduler.py::need_migrate_prefill_v2``, the only one
  the paper's runs executed): at every pairing round, sources are instances with a
  preempted request waiting or a migration load above −X (freeness below X), most loaded
  first; destinations have no preempted request and a load below −X, least loaded first;
  the i-th source is paired with the i-th destination for one migration. Nothing persists
  between rounds.
* ``freeness-threshold`` (the paper's prose, §4.4.3): F_full below ``source_below`` pairs
  with F_full above ``destination_above``, lowest with highest; a pair lasts until either
  side is back within the thresholds, and a source keeps migrating one request at a time.
* ``slo`` (needs ``slo``): a source is an instance whose running batch is predicted
  (``sim.cluster.slo_predictor.batch_tpot``) to decode slower than the TPOT target of its
  most critical tier, most over first; its destination is the instance predicted to stay
  within the TPOT targets of its own and the source's most critical tiers with a request of
  the source's mean context added, and with the blocks for it, the fastest first; one
  migration per pair and round, as ``artifact``.

Compiled with the dispatch rules (``sim.native``), and for the same reasons registered by a
call after each class, open to interpreted subclasses, with ClassVar switches.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Mapping

from mypy_extensions import mypyc_attr

from sim.cluster.priority import PriorityMode
from sim.cluster.slo_predictor import batch_tpot
from sim.cluster.view import ClusterView
from sim.config import SchedulerConfig
from sim.config.registry import Registry
from sim.instance.load import LoadReport, artifact_migration_load, freeness_full


@mypyc_attr(allow_interpreted_subclasses=True)
class PairingRule(ABC):
    """Keeps the current pairs (source -> destination); an instance is in at most one."""

    continues_after_commit: ClassVar[bool] = False  # a source starts its next migration when one commits
    reads_slo_targets: ClassVar[bool] = False  # True: it works against per-tier SLO targets (a config naming it sets slo)

    def __init__(self, config: SchedulerConfig, priority: PriorityMode, load_control: bool) -> None:
        self.config = config
        self.priority = priority
        self.load_control = load_control
        self.pairs: dict[int, int] = {}

    @abstractmethod
    def pair(self, view: ClusterView) -> Mapping[int, int]:
        """A pairing round: update and return the pairs."""

    def should_start(self, source: LoadReport, destination: LoadReport) -> bool:
        """Whether a paired source starts a migration now: neither side may be migrating
        (the manager's ``is_engine_migrating`` check)."""
        return not source.migrating and not destination.migrating

    def drop_destination(self, instance_id: int) -> None:
        """``instance_id`` takes nothing any more (draining, failed, removed): no source is
        sent to it, even before the next pairing round."""
        self.pairs = {s: d for s, d in self.pairs.items() if d != instance_id}


PAIRING_RULES: Registry[type[PairingRule]] = Registry("pairing", "scheduler.pairing")


@mypyc_attr(allow_interpreted_subclasses=True)
class ArtifactPairing(PairingRule):
    reads_tiers: ClassVar[bool] = True

    def migration_load(self, report: LoadReport) -> float:
        reservation = self.priority.migration_reservation(report)
        return artifact_migration_load(report, self.load_control, reservation)

    def pair(self, view: ClusterView) -> Mapping[int, int]:
        out_threshold = -self.config.source_below
        in_threshold = -self.config.destination_above
        loads = {i: self.migration_load(view.reports[i]) for i in sorted(view.reports)}
        # the artifact's stable descending sort: ties keep ascending ids
        descending = sorted(loads, key=lambda i: -loads[i])
        preempted = {i: view.reports[i].num_preempted for i in loads}
        sources = [i for i in descending if preempted[i] > 0 or loads[i] > out_threshold]
        accepting = set(view.instances)
        destinations = [
            i
            for i in reversed(descending)
            if preempted[i] == 0 and loads[i] < in_threshold and i in accepting
        ]
        self.pairs = dict(zip(sources, destinations))
        return self.pairs


PAIRING_RULES.register("artifact")(ArtifactPairing)


@mypyc_attr(allow_interpreted_subclasses=True)
class FreenessThresholds(PairingRule):
    continues_after_commit: ClassVar[bool] = True
    reads_tiers: ClassVar[bool] = True

    def freeness(self, report: LoadReport) -> float:
        return freeness_full(report, self.priority.migration_reservation(report))

    def pair(self, view: ClusterView) -> Mapping[int, int]:
        low, high = self.config.source_below, self.config.destination_above
        reported = sorted(view.reports)
        freeness = {i: self.freeness(view.reports[i]) for i in reported}
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
        return super().should_start(source, destination) and self.freeness(source) < self.config.source_below


PAIRING_RULES.register("freeness-threshold")(FreenessThresholds)


@mypyc_attr(allow_interpreted_subclasses=True)
class SloPairing(PairingRule):
    reads_tiers: ClassVar[bool] = True  # each instance's most critical tier sets its target
    reads_slo_targets: ClassVar[bool] = True

    def pair(self, view: ClusterView) -> Mapping[int, int]:
        targets, reports, models = view.slo_targets, view.reports, view.models
        excess: dict[int, float] = {}
        for instance_id in sorted(reports):
            report = reports[instance_id]
            if report.num_running and instance_id in models and not report.migrating:
                tpot = batch_tpot(report, models[instance_id])
                if tpot > targets[report.top_tier].tpot:
                    excess[instance_id] = tpot / targets[report.top_tier].tpot
        open_destinations = [
            i for i in view.instances if i in reports and i in models and i not in excess and not reports[i].migrating
        ]
        self.pairs = {}
        for source in sorted(excess, key=lambda i: (-excess[i], i)):
            moving = reports[source]
            block_size = models[source].limits.block_size
            tokens = moving.used_blocks * block_size // moving.num_running  # the mean context
            best: int | None = None
            best_tpot: float | None = None
            for destination in open_destinations:
                report, model = reports[destination], models[destination]
                limit = min(targets[report.top_tier].tpot, targets[moving.top_tier].tpot)
                room = report.free_blocks - model.limits.watermark_blocks
                tpot = batch_tpot(report, model, 1, tokens)
                fits = -(-tokens // model.limits.block_size) <= room and report.num_running < model.limits.max_batch_size
                if fits and tpot <= limit and (best_tpot is None or tpot < best_tpot):
                    best, best_tpot = destination, tpot
            if best is not None:
                self.pairs[source] = best
                open_destinations.remove(best)
        return self.pairs


PAIRING_RULES.register("slo")(SloPairing)
