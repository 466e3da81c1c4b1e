"""The llumlet: one instance's local scheduler, wired from parts that each own their state.

* ``waiting`` (``sim.instance.waiting``): the queue of requests waiting for admission;
* ``ledger`` (``sim.instance.blocks``): the instance's paged KV blocks;
* ``batches`` (``sim.instance.batching``): forms every iteration, applies its effects, and
  owns which requests are batched (vLLM's continuous batching, preemption by recompute);
* ``endpoint`` (``sim.instance.endpoint``): the instance as its migrations see it;
* ``reporter`` (``sim.instance.reporting``): the load report sent to the global scheduler;
* ``status`` (``sim.instance.status``): draining or failed, set by the engine.

The engine's step loop drives ``batches``; the scheduler reads ``reporter``; migrations talk
to ``endpoint``. What concerns the whole instance — a request's arrival, a failure, the
invariants over every part — is here.
"""

from __future__ import annotations

from typing import Callable, Collection, Sequence

from sim.instance.batching import BatchFormer
from sim.instance.blocks import BlockLedger
from sim.instance.endpoint import MigrationEndpoint
from sim.instance.former_io import MIXED, BatchEvents, Role
from sim.instance.limits import BatchTimer, LlumletLimits
from sim.instance.reporting import LoadReporter
from sim.instance.request import Request
from sim.instance.status import InstanceStatus
from sim.instance.waiting import WaitingQueue


class Llumlet:
    """One instance: its parts, and what spans them."""

    def __init__(
        self,
        instance_id: int,
        limits: LlumletLimits,
        timer: BatchTimer,
        clock: Callable[[], float],
        events: BatchEvents | None = None,
        headroom_blocks: Sequence[float] = (),
        priority: bool = False,
        colocated_slowdown: float = 0.0,
        batch_former: type[BatchFormer] = BatchFormer,
        ledger: type[BlockLedger] = BlockLedger,
        role: Role = MIXED,
    ) -> None:
        """``events``: where the batch former reports (none: nowhere); ``batch_former`` and
        ``ledger``: the classes of those parts (the pool's choice, ``sim.instance.parts``);
        ``role``: the pool's role, as the former sees it."""
        self.id = instance_id
        self.limits = limits
        self.status = InstanceStatus()
        self.ledger = ledger(limits.capacity_blocks, limits.block_size)
        self.waiting = WaitingQueue(limits.tiers if priority else 1, limits.tiers, limits.block_size)
        self.batches = batch_former(
            instance_id,
            limits,
            timer,
            clock,
            self.waiting,
            self.ledger,
            BatchEvents() if events is None else events,
            priority,
            colocated_slowdown,
            role,
        )
        self.endpoint = MigrationEndpoint(
            instance_id, limits, self.status, self.ledger, self.waiting, self.batches
        )
        self.reporter = LoadReporter(self.endpoint, headroom_blocks)

    def enqueue(self, request: Request) -> None:
        """A dispatched request joins the queue."""
        request.arrive(self.id)
        self.waiting.push(request)

    def take_queued(self) -> list[Request]:
        """Hand back every queued request (they hold no KV here): a spot instance under notice
        sends them to be dispatched again."""
        queued = []
        while self.waiting:
            queued.append(self.waiting.pop_head())
        return queued

    def fail(self) -> list[Request]:
        """The instance died: return every request it held (their KV is gone) and reset."""
        self.status.fail()
        lost = [*self.waiting, *self.batches.holders()]
        for request in lost:
            request.lost()
        self.batches.clear()
        self.ledger.clear()
        self.waiting.clear()
        return lost

    @property
    def is_empty(self) -> bool:
        """No request lives here any more (a drained instance can be removed)."""
        return not self.waiting and self.batches.holds_nothing

    def leaked_blocks(self, live_reservations: Collection) -> int:
        """Blocks allocated to no resident request, plus blocks reserved under a key that
        is not in ``live_reservations`` (the keys of migrations still in flight)."""
        return self.ledger.unowned(set(self.batches.holders()), live_reservations)

    def check(self) -> None:
        """Raise if blocks leaked, the lazy accounting drifted or the queue's totals are off
        (tests, and ``Simulation(check_every_step=True)``)."""
        self.ledger.check(self.batches.holders())
        self.batches.check()
        assert len(self.waiting) == sum(1 for _ in self.waiting)
