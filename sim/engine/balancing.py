"""Balance migrations, the engine's side: hearing periodic reports and running pairing rounds
on their cadence, then starting a migration from each paired source the scheduler still
wants to move (the source llumlet's candidate rule picks the request). Which instances pair
is the global scheduler's rule (``sim.cluster.pairing``); with pool roles, prefill instances
neither send nor take balance migrations (their requests are handed off instead)."""

from __future__ import annotations

from typing import Callable, Mapping, Optional

from sim.cluster import GlobalScheduler
from sim.engine.handoffs import Handoffs
from sim.engine.instances import InstanceRuntime
from sim.engine.migrations import MigrationLauncher
from sim.instance.llumlet import Llumlet
from sim.instance.load import LoadReport
from sim.instance.request import Request


class Balancer:
    """``scheduler_up``: whether the global scheduler is there to hear and pair."""

    def __init__(
        self,
        scheduler: GlobalScheduler,
        live: Mapping[int, InstanceRuntime],
        launcher: MigrationLauncher,
        handoffs: Optional[Handoffs],
        candidate: Callable[[Llumlet], Optional[Request]],
        pairing_every: int,
        scheduler_up: Callable[[], bool],
        evacuating: Callable[[int], bool] = lambda instance_id: False,
    ) -> None:
        """``evacuating``: whether an instance's requests are another part's to move (a spot
        instance under notice, ``sim.engine.spot``): its drain pairs it as no source."""
        self.scheduler = scheduler
        self.live = live
        self.launcher = launcher
        self.handoffs = handoffs
        self.candidate = candidate
        self.pairing_every = pairing_every
        self.scheduler_up = scheduler_up
        self.evacuating = evacuating
        self.report_rounds = 0  # periodic report rounds delivered (the pairing cadence)

    def deliver_interval_reports(self, now: float, reports: Optional[dict[int, LoadReport]]) -> None:
        """The tick's job with periodic reports: the scheduler hears every live instance
        (unless it is down)."""
        if self.scheduler_up():
            self.scheduler.observe(reports)
            self.report_rounds += 1

    def slept(self, rounds: int) -> None:
        """The tick slept through ``rounds`` report rounds of an idle cluster (each would have
        delivered the same idle reports): they count toward the pairing cadence all the same,
        so pairing keeps its phase. The scheduler stayed up or down throughout: either
        change wakes the tick."""
        if self.scheduler_up():
            self.report_rounds += rounds

    def pair_on_cadence(self, now: float, reports: Optional[dict[int, LoadReport]]) -> None:
        """The tick's job: a pairing round every ``pairing_every`` report rounds (per-step
        reports count their own, ``sim.cluster.step_reports``)."""
        if self.scheduler_up() and self.report_rounds % self.pairing_every == 0:
            self.pairing_round()

    def pairing_round(self) -> None:
        handoffs = self.handoffs
        among = None if handoffs is None else handoffs.balancing()
        for source in self.scheduler.migration_pairs(among):
            if self.evacuating(source):
                continue
            if handoffs is None or not handoffs.is_prefill(source):  # its requests are handed off
                self.try_migration(source)

    def after_commit(self, source_id: int) -> None:
        if self.scheduler.continues_after_commit:
            self.try_migration(source_id)  # keep going while it is still a source

    def try_migration(self, source_id: int) -> None:
        """A paired source starts its next migration if the scheduler still wants it to."""
        destination_id = self.scheduler.destination_for(source_id)
        if destination_id is None:
            return
        source, destination = self.live[source_id], self.live[destination_id]
        if not self.scheduler.should_migrate(source.llumlet.reporter.report(), destination.llumlet.reporter.report()):
            return
        request = self.candidate(source.llumlet)
        if request is not None:
            self.launcher.start(request, source.llumlet, destination.llumlet)
