"""The llumlet's side of a migration: the hooks ``sim.instance.migration.migrate`` calls.

At the source a migration asks for a request's suspension (applied at the next iteration
boundary, when the request leaves the batch but keeps its blocks), gives it back to the
batch on abort, or drops its copy after commit. At the destination a committed request joins
the batch from the next iteration, or queues to be prefilled again (recompute).
"""

from __future__ import annotations

from typing import Callable

from mypy_extensions import trait

from sim.instance.request import Request, RequestState
from sim.instance.state import LlumletState


@trait
class MigrationEndpointMixin(LlumletState):
    """Mixed into ``Llumlet``; uses its running/suspended/joining sets, ledger and queue."""

    def request_suspension(self, request: Request, answer: Callable[[bool], None]) -> None:
        """Take a running request out of the batch at the next iteration boundary; ``answer``
        gets False if it is no longer running by then."""
        if request not in self.running:
            answer(False)
            return
        self._suspensions.append((request, answer))
        if not self.busy:
            self._apply_suspensions()

    def _apply_suspensions(self) -> None:
        pending, self._suspensions = self._suspensions, []
        for request, answer in pending:
            if request in self.running:
                self._leave_running(request)
                self.suspended[request] = None
                request.state = RequestState.SUSPENDED
                answer(True)
            else:
                answer(False)

    def resume(self, request: Request) -> None:
        """An aborted migration gives a suspended request back to this batch."""
        del self.suspended[request]
        self.joining.append(request)

    def release_suspended(self, request: Request) -> None:
        """After commit (or a recompute hand-over) the source drops its copy."""
        del self.suspended[request]
        self.ledger.release(request)

    def accept_migrated(self, request: Request, rebuild: bool) -> None:
        """A committed inbound request: it joins this batch from the next iteration with the
        KV cache the migration reserved here, or (``rebuild``: recompute migration) queues at
        the head to be prefilled again over every token it has."""
        if rebuild:
            self.enqueue(request, front=True)
            return
        request.instance = self.id
        request.instances.append(self.id)
        self.joining.append(request)
