"""What a llumlet tells the global scheduler: its instance-level load report.

Only raw counts travel; the load signals computed from them (virtual usage, freeness, the
artifact's load formulas) are in ``sim.instance.load``.
"""

from __future__ import annotations

from typing import Final

from mypy_extensions import trait

from sim.instance.load import LoadReport
from sim.instance.state import LlumletState
from sim.instance.virtual_usage import headroom_usage

# LoadReport's own __new__ is a generated Python function; building the tuple directly skips
# that frame on the hottest path (one report per executed step). Fields in declaration order.
_new_report: Final = tuple.__new__


@trait
class LoadReportingMixin(LlumletState):
    """Mixed into ``Llumlet``; reads the counters it keeps (ledger, queue, per-tier counts)."""

    def report(self) -> LoadReport:
        """The instance-level load record sent to the global scheduler (raw counts; the
        signals computed from them are in ``sim.instance.load``). Built at every executed
        step with per-step reports (and at ticks, samples and migration checks), so it
        reads counters the llumlet keeps, never walks a list; and about every other step
        nothing it reports has changed, so the last report is handed out again."""
        ledger = self.ledger
        waiting = self.waiting
        limits = self.limits
        allocated, reserved = ledger.allocated, ledger.reserved
        running = len(self.running) + len(self.prefilling)  # vLLM's running list holds both
        head = waiting.head_demand_blocks() if waiting.count else 0
        last = self._last_report
        if (
            last is not None
            and limits.tiers == 1  # then the tier fields are fixed: no top tier, no headroom
            and not self.headroom_blocks
            and last.used_blocks == allocated
            and last.reserved_blocks == reserved
            and last.num_running == running
            and last.num_waiting == waiting.count
            and last.waiting_demand_blocks == waiting.demand_blocks
            and last.head_demand_blocks == head
            and last.waiting_tokens == waiting.tokens
            and last.num_preempted == waiting.preempted
            and last.draining == self.draining
            and last.migrating == self.migrating
        ):
            return last  # every field equal (the rest are the instance's constants)
        head_blocked = (
            waiting.count > 0 and ledger.capacity - allocated - reserved - head < limits.watermark_blocks
        )
        report = self._last_report = _new_report(
            LoadReport,
            (
                self.id,
                ledger.capacity,
                allocated,
                reserved,
                running,
                waiting.count,
                waiting.demand_blocks,
                head,
                headroom_usage(self.running_per_tier, self.headroom_blocks)
                if self.headroom_blocks
                else 0.0,
                head_blocked,
                self.draining,
                self.migrating,
                limits.watermark_blocks,
                limits.block_size,
                waiting.tokens,
                waiting.preempted,
                self._top_tier() if limits.tiers > 1 else 0,
            ),
        )
        return report

    def check_report(self) -> None:
        """Raise if the report handed out now is not what a report built afresh would be
        (the reuse of an unchanged report; ``Simulation(check_every_step=True)`` asks)."""
        handed = self.report()
        self._last_report = None
        fresh = self.report()
        assert handed == fresh, f"instance {self.id} reused {handed}, but its state reports {fresh}"

    def _top_tier(self) -> int:
        """The most critical tier among queued and running requests (the lowest tier, K − 1,
        when there are none): what a load-target priority reservation depends on."""
        waiting = self.waiting.per_tier
        running = self.running_per_tier
        top = len(running) - 1
        for tier in range(top):
            if running[tier] or waiting[tier]:
                top = tier
                break
        for request in self.prefilling:
            top = min(top, request.tier)
        return top
