"""What a llumlet tells the global scheduler: its instance-level load report.

Only raw counts travel; the load signals computed from them (virtual usage, freeness, the
artifact's load formulas) are in ``sim.instance.load``.
"""

from __future__ import annotations

from typing import Final, Sequence

from sim.instance.batching import BatchFormer
from sim.instance.blocks import BlockLedger
from sim.instance.endpoint import MigrationEndpoint
from sim.instance.limits import LlumletLimits
from sim.instance.load import LoadReport
from sim.instance.status import InstanceStatus
from sim.instance.virtual_usage import headroom_usage
from sim.instance.waiting import WaitingQueue

# LoadReport's own __new__ is a generated Python function; building the tuple directly skips
# that frame on the hottest path (one report per executed step). Fields in declaration order:
# tests/test_load_reporter.py reads every field of a built report back by name.
_new_report: Final = tuple.__new__

# what can differ between two reports of one instance, as one plain tuple compared item by
# item with the last report's (the compiled engine compares such a tuple natively): blocks
# used and reserved, requests running, the queue's change count (for all its totals), the
# headroom charged, draining, migrating, the top tier. The other fields follow from these or
# never change (the instance's id, capacity, watermark and block size).
ReportState = tuple[int, int, int, int, float, bool, bool, int]
_NO_STATE: Final[ReportState] = (-1, 0, 0, 0, 0.0, False, False, 0)  # no ledger has -1 blocks: never equal


class LoadReporter:
    """Builds an instance's reports from the counters its parts keep (never walks a list),
    and hands the last one out again while nothing it reports changed. It reads the parts the
    instance's migration endpoint is wired to, and the endpoint's own count of migrations."""

    def __init__(self, endpoint: MigrationEndpoint, headroom_blocks: Sequence[float] = ()) -> None:
        self.id = endpoint.id
        self.limits: LlumletLimits = endpoint.limits
        self.status: InstanceStatus = endpoint.status
        self.ledger: BlockLedger = endpoint.ledger
        self.waiting: WaitingQueue = endpoint.waiting
        self.batches: BatchFormer = endpoint.batches
        self.endpoint = endpoint
        self.headroom_blocks = tuple(headroom_blocks)  # H_p of each tier, charged while it runs
        self._tiered = self.limits.tiers > 1
        self._last_state: ReportState = _NO_STATE
        self._last: LoadReport = LoadReport(-1, 0, 0, 0, 0, 0, 0, 0)  # never handed out: no state matches

    def set_headroom(self, headroom_blocks: Sequence[float]) -> None:
        """Adaptive headroom moved each tier's H_p (blocks)."""
        self.headroom_blocks = tuple(headroom_blocks)

    def report(self) -> LoadReport:
        """The instance-level load record sent to the global scheduler (raw counts; the
        signals computed from them are in ``sim.instance.load``). Built at every executed
        step with per-step reports (and at ticks, samples and migration checks); at most steps
        nothing it reports has changed, and the last report is handed out again."""
        ledger, batches = self.ledger, self.batches
        state: ReportState = (
            ledger.allocated,
            ledger.reserved,
            len(batches.running) + len(batches.prefilling),  # vLLM's running list holds both
            self.waiting.changes,
            headroom_usage(batches.running_per_tier, self.headroom_blocks) if self.headroom_blocks else 0.0,
            self.status.draining,
            self.endpoint.in_flight > 0,
            self._top_tier() if self._tiered else 0,
        )
        if state == self._last_state:
            return self._last
        self._last_state = state
        allocated, reserved, running, _, headroom, draining, migrating, top_tier = state
        waiting, limits = self.waiting, self.limits
        queued = waiting.count
        head = waiting.head_demand_blocks() if queued else 0
        report = self._last = _new_report(LoadReport, (  # LoadReport's fields, in its order, each named
            self.id,  # instance_id
            ledger.capacity,  # capacity_blocks
            allocated,  # used_blocks
            reserved,  # reserved_blocks
            running,  # num_running
            queued,  # num_waiting
            waiting.demand_blocks,  # waiting_demand_blocks
            head,  # head_demand_blocks
            headroom,  # headroom_blocks
            queued > 0 and ledger.capacity - allocated - reserved - head < limits.watermark_blocks,  # head_blocked
            draining,  # draining
            migrating,  # migrating
            limits.watermark_blocks,  # watermark_blocks
            limits.block_size,  # block_size
            waiting.tokens,  # waiting_tokens
            waiting.preempted,  # num_preempted
            top_tier,  # top_tier
        ))
        return report

    def _top_tier(self) -> int:
        """The most critical tier among queued and running requests (the lowest tier, K − 1,
        when there are none): what a load-target priority reservation depends on."""
        waiting = self.waiting.per_tier
        running = self.batches.running_per_tier
        top = len(running) - 1
        for tier in range(top):
            if running[tier] or waiting[tier]:
                top = tier
                break
        for request in self.batches.prefilling:
            top = min(top, request.tier)
        return top
