"""The narrow interface through which scaling and faults act on a running simulation.

They keep their own state and change the cluster only through these calls; nothing outside
the engine writes engine or scheduler internals.
"""

from __future__ import annotations

from typing import Optional, Protocol

from sim.instance.request import Request


class ClusterActions(Protocol):
    @property
    def now(self) -> float: ...

    @property
    def pool_names(self) -> list[str]:
        """The pools instances come from, in config order."""

    def add_instance(self, pool_name: str, billed_from: Optional[float] = None) -> int:
        """Start an instance of a pool with zero load; it reports and takes dispatches at once."""

    def drain(self, instance_id: int) -> None:
        """No more dispatches; a fake request of infinite usage makes it a migration source
        until it is empty, when it is removed."""

    def undrain(self, instance_id: int) -> None:
        """Stop a drain: the instance serves and takes dispatches again."""

    def fail(self, instance_id: int) -> list[Request]:
        """The instance dies with its KV cache; returns the requests it held (not ended)."""

    def dispatch(self, request: Request) -> None:
        """Send a request into the cluster (again, after a failure)."""

    def end_request(self, request: Request, reason: str) -> None:
        """Abort a request for good, with a reason."""

    def set_scheduler_down(self, fallback: Optional[str]) -> None:
        """``fallback`` (round-robin, random): the global scheduler goes away and frontends
        dispatch on their own; None: it comes back and schedules from fresh reports."""

    def is_alive(self, instance_id: int) -> bool: ...

    def pool_of(self, instance_id: int) -> str:
        """The pool an instance (live or not) came from."""
