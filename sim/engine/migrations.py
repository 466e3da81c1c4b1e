"""Starting migration processes and keeping their records (the engine's side of migration).

Which instances pair and whether a paired source starts now is the global scheduler's
decision; which request moves is the source llumlet's (``sim.instance.candidates``); the
stages and handshake are ``sim.instance.migration.migrate``. This module wires them to time
and takes both endpoints (``MigrationEndpoint.in_flight``) the moment a migration is
created (not when its process first runs), so nothing decided later in the same instant —
a drain, a removal — can pull an instance out from under a migration.
"""

from __future__ import annotations

from typing import Callable

import simpy

from sim.instance.endpoint import MigrationEndpoint
from sim.instance.llumlet import Llumlet
from sim.instance.kv_transfer import TransferModel
from sim.instance.migration import MigrationOutcome, MigrationRecord, MigrationSettings, migrate
from sim.instance.request import Request


class MigrationLauncher:
    def __init__(
        self,
        env: simpy.Environment,
        settings: MigrationSettings,
        transfer_from: Callable[[MigrationEndpoint], TransferModel | None],
        wake: Callable[[MigrationEndpoint], None],
        stage_fails: Callable[[], bool],
        handshake_timeout: float,
        on_commit: Callable[[int], None],
        on_start: Callable[[int], None] = lambda destination_id: None,
    ) -> None:
        self.env = env
        self.settings = settings
        self.transfer_from = transfer_from  # the transfer model of a migration out of a source
        self.wake = wake
        self.stage_fails = stage_fails
        self.handshake_timeout = handshake_timeout
        self.on_commit = on_commit  # called with the source id: it may go on migrating
        self.on_start = on_start  # called with the destination id: it expects a request now
        self.records: list[MigrationRecord] = []
        self._processes: list = []

    def start(self, request: Request, source: Llumlet, destination: Llumlet) -> MigrationRecord:
        """Start moving ``request`` (running on ``source``) to ``destination`` now."""
        if request not in source.batches.running:
            raise ValueError(f"request {request.id} is not running on instance {source.id}")
        if destination is source or destination.status.draining or destination.status.failed:
            raise ValueError(f"instance {destination.id} cannot be a migration destination now")
        record = MigrationRecord(
            id=len(self.records),
            request_id=request.id,
            source=source.id,
            destination=destination.id,
            mode=self.settings.mode,
            start=self.env.now,
        )
        self.records.append(record)
        ends = source.endpoint, destination.endpoint
        for end in ends:  # taken now: nothing later this instant can remove either
            end.in_flight += 1
        self.on_start(destination.id)
        self._processes.append(self.env.process(self._run(*ends, request, record)))
        return record

    def _run(
        self, source: MigrationEndpoint, destination: MigrationEndpoint, request: Request, record: MigrationRecord
    ):
        yield from migrate(
            self.env,
            source,
            destination,
            request,
            record,
            self.settings,
            self.transfer_from(source),
            self.wake,
            stage_fails=self.stage_fails,
            handshake_timeout=self.handshake_timeout,
        )
        source.in_flight -= 1
        destination.in_flight -= 1
        if record.outcome is MigrationOutcome.COMMITTED:
            self.on_commit(source.id)
        # after an abort the pair waits for the next pairing round

    def in_flight_processes(self) -> list:
        return [process for process in self._processes if process.is_alive]

    def live_reservation_keys(self) -> set:
        """Ledger keys of migrations still in flight (their reservations are not leaks)."""
        return {
            record.reservation_key
            for record in self.records
            if record.outcome is MigrationOutcome.IN_FLIGHT
        }
