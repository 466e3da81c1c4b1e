"""The engine's consumer of what an instance's batch former reports (``sim.instance.former_io``):
the migration launcher keeps a moved request's record current, a prefill instance's
prefilled requests wait for their hand-off, and every ending reaches the run's count."""

from __future__ import annotations

from typing import Callable, Optional

from sim.engine.handoffs import Handoffs
from sim.engine.migrations import MigrationLauncher
from sim.instance.former_io import BatchEvents
from sim.instance.request import Request


class InstanceEvents(BatchEvents):
    """One instance's events; ``handoffs``: on a prefill instance only."""

    def __init__(
        self,
        instance_id: int,
        launcher: MigrationLauncher,
        handoffs: Optional[Handoffs],
        on_end: Callable[[Request], None],
    ) -> None:
        super().__init__(on_end)
        self.instance_id = instance_id
        self.launcher = launcher
        self.handoffs = handoffs

    def prefilled(self, request: Request, seconds: float) -> None:
        self.launcher.prefilled(self.instance_id, request, seconds)  # first: a migration ending here settles
        if self.handoffs is not None and not request.done:
            self.handoffs.prefilled(request, seconds)

    def joined(self, request: Request) -> None:
        self.launcher.joined(self.instance_id, request)
