"""What a llumlet tells the global scheduler: its instance-level load report.

Only raw counts travel; the load signals computed from them (virtual usage, freeness, the
artifact's load formulas) are in ``sim.instance.load``.
"""

from __future__ import annotations

from mypy_extensions import trait

from sim.instance.load import LoadReport
from sim.instance.state import LlumletState
from sim.instance.virtual_usage import headroom_usage

# LoadReport's own __new__ is a generated Python function; building the tuple directly skips
# that frame on the hottest path (one report per executed step). Fields in declaration order.
_new_report = tuple.__new__


@trait
class LoadReportingMixin(LlumletState):
    """Mixed into ``Llumlet``; reads the counters it keeps (ledger, queue, per-tier counts)."""

    def report(self) -> LoadReport:
        """The instance-level load record sent to the global scheduler (raw counts; the
        signals computed from them are in ``sim.instance.load``). Built at every executed
        step with per-step reports (and at ticks, samples and migration checks), so it
        reads counters the llumlet keeps, never walks a list."""
        ledger = self.ledger
        waiting = self.waiting
        limits = self.limits
        allocated, reserved = ledger.allocated, ledger.reserved
        if waiting.count:
            head = waiting.head_demand_blocks()
            head_blocked = ledger.capacity - allocated - reserved - head < limits.watermark_blocks
        else:
            head, head_blocked = 0, False
        return _new_report(
            LoadReport,
            (
                self.id,
                ledger.capacity,
                allocated,
                reserved,
                len(self.running) + len(self.prefilling),  # vLLM's running list holds both
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
