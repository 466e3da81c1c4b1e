"""The llumlet's side of a migration: what ``sim.instance.migration.migrate`` talks to.

At the source a migration asks for a request's suspension (applied at the next iteration
boundary, when the request leaves the batch but keeps its blocks), gives it back to the
batch on abort, or drops its copy after commit. At the destination it reserves blocks in the
ledger, and a committed request joins the batch from the next iteration, or queues to be
prefilled again (recompute). The endpoint owns the count of migrations touching the
instance (the launcher takes both ends when it creates one): an instance with one in flight
reports ``migrating`` and is never removed.
"""

from __future__ import annotations

from typing import Callable

from sim.instance.batching import BatchFormer
from sim.instance.blocks import BlockLedger
from sim.instance.limits import LlumletLimits
from sim.instance.request import Request
from sim.instance.status import InstanceStatus
from sim.instance.waiting import WaitingQueue


class MigrationEndpoint:
    """One instance as its migrations see it: the ledger, the batch, the queue, its status."""

    def __init__(
        self,
        instance_id: int,
        limits: LlumletLimits,
        status: InstanceStatus,
        ledger: BlockLedger,
        waiting: WaitingQueue,
        batches: BatchFormer,
    ) -> None:
        self.id = instance_id
        self.limits = limits
        self.status = status
        self.ledger = ledger
        self.waiting = waiting
        self.batches = batches
        self.in_flight = 0  # migrations from or to this instance not yet ended

    @property
    def migrating(self) -> bool:
        return self.in_flight > 0

    def migration_started(self) -> None:
        """A migration from or to this instance was created (the launcher takes both ends at
        once): the instance reports ``migrating`` and is never removed until it ends."""
        self.in_flight += 1

    def migration_ended(self) -> None:
        self.in_flight -= 1

    def request_suspension(self, request: Request, answer: Callable[[bool], None]) -> None:
        """Take a running request out of the batch at the next iteration boundary; ``answer``
        gets False if it is no longer running by then."""
        self.batches.suspend_at_boundary(request, answer)

    def stage_started(self) -> None:
        """A stage copies to or from this instance: its iterations run co-located slower."""
        self.batches.copy_started()

    def stage_ended(self) -> None:
        self.batches.copy_ended()

    def resume(self, request: Request) -> None:
        """An aborted migration gives a suspended request back to this batch."""
        self.batches.resume(request)

    def release_suspended(self, request: Request) -> None:
        """After commit (or a recompute hand-over) the source drops its copy."""
        self.batches.release_suspended(request)

    def accept_migrated(self, request: Request, rebuild: bool) -> None:
        """A committed inbound request: it joins this batch from the next iteration with the
        KV cache the migration reserved here, or (``rebuild``: recompute migration) queues at
        the head to be prefilled again over every token it has."""
        request.arrive(self.id)
        if rebuild:
            self.waiting.push(request, front=True)
        else:
            self.batches.join(request)
