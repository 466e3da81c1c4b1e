"""The narrow interface through which scaling and faults act on a running simulation.

They keep their own state and change the cluster only through these calls; nothing outside
the engine writes engine or scheduler internals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol

from sim.instance.request import Request

if TYPE_CHECKING:
    from sim.cluster.step_reports import StepReports
    from sim.engine.cluster import Cluster
    from sim.engine.dispatcher import Dispatcher
    from sim.engine.handoffs import Handoffs
    from sim.engine.kernel import Kernel


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


class EngineActions:
    """``ClusterActions`` carried out on a run's parts: its instances (``Cluster``), its
    dispatcher, and its kernel, which ends requests; going down or up also silences or
    restores per-step reports and the hand-offs' choice of decode instances."""

    def __init__(
        self,
        cluster: "Cluster",
        dispatcher: "Dispatcher",
        kernel: "Kernel",
        step_reports: "Optional[StepReports]",
        handoffs: "Optional[Handoffs]",
    ) -> None:
        self.cluster = cluster
        self.dispatcher = dispatcher
        self.kernel = kernel
        self.step_reports = step_reports
        self.handoffs = handoffs

    @property
    def now(self) -> float:
        return self.kernel.env.now

    @property
    def pool_names(self) -> list[str]:
        return self.cluster.pool_names

    def add_instance(self, pool_name: str, billed_from: Optional[float] = None) -> int:
        self.kernel.wake()  # the tick has work again: the cluster changed
        return self.cluster.add_instance(pool_name, billed_from)

    def drain(self, instance_id: int) -> None:
        self.kernel.wake()  # the tick has work again: the cluster changed
        self.cluster.drain(instance_id)

    def undrain(self, instance_id: int) -> None:
        self.kernel.wake()  # the tick has work again: the cluster changed
        self.cluster.undrain(instance_id)

    def fail(self, instance_id: int) -> list[Request]:
        self.kernel.wake()  # the tick has work again: the cluster changed
        return self.cluster.fail(instance_id)

    def dispatch(self, request: Request) -> None:
        self.dispatcher.dispatch(request)

    def end_request(self, request: Request, reason: str) -> None:
        self.kernel.end_request(request, reason)

    def set_scheduler_down(self, fallback: Optional[str]) -> None:
        self.kernel.wake()
        self.cluster.steps.make_exact()  # reports reach the scheduler, or nobody, from now
        self.dispatcher.scheduler_down(fallback, self.cluster.reports)
        down = not self.dispatcher.scheduler_up
        if self.step_reports is not None:
            self.step_reports.pause(down)  # reports reach nobody
        if self.handoffs is not None:
            self.handoffs.pause(down)  # nobody picks a decode instance

    def is_alive(self, instance_id: int) -> bool:
        return self.cluster.is_alive(instance_id)

    def pool_of(self, instance_id: int) -> str:
        return self.cluster.pool_of(instance_id)
