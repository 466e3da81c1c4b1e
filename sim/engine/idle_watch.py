"""INV-4 idle-view: an idle instance's last report in the scheduler's view shows it idle.

An instance that serves nothing while the scheduler's view says it is busy is a GPU paid for
and unused: freeness dispatch never picks it, and with per-step reports an idle instance
files no report of its own, so nothing corrects the view. The watch follows every idle
stretch — from a step loop finding nothing to run on an instance that holds nothing (no
request queued, running, suspended or joining, no block allocated or reserved, no migration
to or from it in flight: a destination reserves later) until the loop is woken (work
arrived), a migration to it starts (it will reserve blocks without waking the loop), the
instance stops, or the run ends — and at its end reads the view. A view
that still shows the instance holding something counts the stretch's seconds after the
instance's first report was due (per-step reports: at once, the step that emptied it files
one; periodic reports: the next tick), as ``stale_idle_seconds``: the summary's
"instance-seconds idle while the view said busy". Strict (tests), such a stretch raises.
"""

from __future__ import annotations

from typing import Callable, Mapping

from sim.instance.load import LoadReport, reports_idle


class StaleViewError(AssertionError):
    """INV-4 idle-view broke: an idle instance stayed busy in the scheduler's view past its next report."""


class IdleWatch:
    """Idle stretches of every instance, and the seconds of them the view got wrong."""

    def __init__(
        self,
        view_reports: Mapping[int, LoadReport],
        report_due: Callable[[float], float],
        view_in_use: Callable[[], bool],
        strict: bool = False,
    ) -> None:
        self.view_reports = view_reports  # the scheduler's latest report per instance
        self.report_due = report_due  # when an instance idle from t is next heard of
        self.view_in_use = view_in_use  # False while the global scheduler is down
        self.strict = strict
        self._open: dict[int, tuple[float, float]] = {}  # instance -> (idle since, report due)
        self.stretches = 0  # idle stretches ended and checked
        self.stale_idle_seconds = 0.0

    def idle(self, instance_id: int, now: float) -> None:
        """The instance's step loop found nothing to run, and it holds nothing."""
        if instance_id not in self._open:
            self._open[instance_id] = (now, self.report_due(now))

    def ended(self, instance_id: int, now: float) -> None:
        """The stretch ends (work arrived or is on its way, or the run ended): check the
        view's report."""
        stretch = self._open.pop(instance_id, None)
        if stretch is None:
            return
        self.stretches += 1
        report = self.view_reports.get(instance_id)
        if report is None or reports_idle(report) or not self.view_in_use():
            return  # not in the view (removed, draining), right, or nobody reads it now
        since, due = stretch
        stale = now - due
        if stale <= 0:
            return
        if self.strict:
            raise StaleViewError(
                f"instance {instance_id} idle from {since:.3f} s to {now:.3f} s while the scheduler's "
                f"view showed {report.num_running} running, {report.num_waiting} queued, "
                f"{report.used_blocks} blocks used, {report.reserved_blocks} reserved"
            )
        self.stale_idle_seconds += stale

    def forget(self, instance_id: int) -> None:
        """The instance stopped (drained or failed): it is no longer the scheduler's to use."""
        self._open.pop(instance_id, None)

    def close(self, now: float) -> None:
        """The run ended: every stretch still open ends now."""
        for instance_id in list(self._open):
            self.ended(instance_id, now)
