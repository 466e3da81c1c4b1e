"""Where per-step load reports land (the artifact's cadence: one per executed step, the
hottest call after the step itself, so it is part of the compiled engine, ``sim.native``).

A report is stored in the scheduler's view at once; what it changes for dispatch (pending
demand absorbed, the rule's cached load) is settled at the next dispatch
(``GlobalScheduler._settle``), once however many reports an instance filed since. Reports
are also counted over the whole cluster: every ``pairing_every`` × instances of them, a
pairing round.

A decode stretch (``sim.engine.instances.StepLoop``, only where no pairing cadence counts
reports) forms a quiet batch's steps later, unscheduled: their reports arrive together through
``deliver_unscheduled``, before anything reads the view.

A step loop that finds nothing to run delivers the instance's state then, if the view holds
anything else (``deliver_if_changed``): the artifact's step that drops a request and
schedules nothing still returns the ``instance_info`` its ``schedule()`` computed after the
drop (``vllm/simulator/llm_engine.py``, the early return of ``step``; the benchmark's
``update_from_step`` delivers it). INV-4 idle-view: an idle instance's last report in the scheduler's
view shows it idle (``sim.engine.idle_watch`` checks it).
"""

from __future__ import annotations

from typing import Callable, Optional, Sized

from sim.instance.load import LoadReport


class StepReports:
    """The delivery point of per-step reports (built by ``GlobalScheduler.step_reports``)."""

    def __init__(
        self,
        reports: dict[int, LoadReport],
        unsettled: set[int],
        live: Sized,
        pairing_every: int,
        pairing_round: Optional[Callable[[], None]],
    ) -> None:
        self.reports = reports  # the scheduler view's latest report per instance
        self.unsettled = unsettled  # instances that reported since the last dispatch
        self.live = live  # the running instances (the pairing cadence scales with them)
        self.pairing_every = pairing_every
        self.pairing_round = pairing_round  # None: this scheduler never migrates
        self.delivered = 0
        self.paused = False  # the global scheduler is down: reports reach nobody

    def pause(self, paused: bool) -> None:
        """The global scheduler is down (or back): reports reach nobody meanwhile."""
        self.paused = paused

    def deliver(self, report: LoadReport) -> None:
        if self.paused:
            return
        instance_id: int = report[0]  # the instance id (a tuple index is C-level; the name is not)
        self.reports[instance_id] = report
        self.unsettled.add(instance_id)
        pairing_round = self.pairing_round
        if pairing_round is not None:
            self.delivered += 1
            if self.delivered % (self.pairing_every * len(self.live)) == 0:
                pairing_round()

    def deliver_unscheduled(self, report: LoadReport) -> None:
        """The last report of a stretch's steps formed at once (what each stored, one after
        the other, would leave; no pairing cadence counts them)."""
        if self.paused:
            return
        instance_id: int = report[0]
        self.reports[instance_id] = report
        self.unsettled.add(instance_id)

    def deliver_if_changed(self, report: LoadReport) -> None:
        """Deliver ``report`` if the view holds another state for its instance (a step loop
        going idle: the artifact reports after a drop; INV-4 idle-view for the rest). An
        instance the view has not heard of yet stays unheard: it has executed no step, and
        dispatch goes round-robin until every instance has reported."""
        known = self.reports.get(report[0])
        if known is not None and known != report:
            self.deliver(report)
