"""The llumlet's state as its parts see it: declared once, so that each part (the load
report, the migration endpoint, the invariant checks) type-checks on its own module, and so
that the optional compiled engine (``sim.native``) can build them: mypyc compiles mixins as
*traits*, which must declare what they read."""

from __future__ import annotations

from typing import Callable, Optional

from mypy_extensions import trait

from sim.instance.blocks import BlockLedger
from sim.instance.limits import LlumletLimits
from sim.instance.load import LoadReport
from sim.instance.request import Request
from sim.instance.waiting import WaitingQueue


@trait
class LlumletState:
    """Attributes ``Llumlet.__init__`` sets, and the two core methods its parts call."""

    id: int
    limits: LlumletLimits
    ledger: BlockLedger
    waiting: WaitingQueue
    running: dict[Request, None]
    running_per_tier: list[int]
    suspended: dict[Request, None]
    joining: list[Request]
    prefilling: list[Request]
    _suspensions: list[tuple[Request, Callable[[bool], None]]]
    headroom_blocks: tuple[float, ...]
    iteration: int
    seq_sum: int
    busy: bool
    draining: bool
    migrating: bool
    _last_report: Optional[LoadReport]  # the latest report built (handed out again if unchanged)

    def enqueue(self, request: Request, front: bool = False) -> None:
        raise NotImplementedError  # Llumlet's

    def _leave_running(self, request: Request) -> None:
        raise NotImplementedError  # Llumlet's

    def progress(self, request: Request) -> int:
        """Output tokens a running request has produced so far (lazy decode accounting)."""
        return request.base_generated + (self.iteration - request.base_iteration)
