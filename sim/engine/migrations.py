"""Starting migration processes and keeping their records (the engine's side of migration).

Which instances pair and whether a paired source starts now is the global scheduler's
decision; which request moves is the source llumlet's (``sim.instance.candidates``); the
stages and handshake are ``sim.instance.migration.migrate``. This module wires them to time
and takes both endpoints (``MigrationEndpoint.in_flight``) the moment a migration is
created (not when its process first runs), so nothing decided later in the same instant —
a drain, a removal — can pull an instance out from under a migration. It also keeps the
records current as a moved request comes back to life at its destination, from what the
destination's batch former reports (``prefilled``, ``joined``): the former only reports.
"""

from __future__ import annotations

from typing import Callable, Protocol

import simpy

from sim.instance.endpoint import MigrationEndpoint
from sim.instance.llumlet import Llumlet
from sim.instance.kv_transfer import TransferModel
from sim.instance.migration import BALANCE, MigrationOutcome, MigrationRecord, migrate
from sim.instance.request import Request, RequestState
from sim.instance.transfer_plan import TransferPlan
from sim.engine.sections import result_section


class MigrationLauncher:
    def __init__(
        self,
        env: simpy.Environment,
        plan: TransferPlan,
        transfer_from: Callable[[MigrationEndpoint], TransferModel | None],
        wake: Callable[[MigrationEndpoint], None],
        stage_fails: Callable[[], bool],
        handshake_timeout: float,
        on_commit: Callable[[int], None],
        on_start: Callable[[int], None] = lambda destination_id: None,
    ) -> None:
        self.env = env
        self.plan = plan  # a balance migration's (the run's migration settings)
        self.transfer_from = transfer_from  # the transfer model of a migration out of a source
        self.wake = wake
        self.stage_fails = stage_fails
        self.handshake_timeout = handshake_timeout
        self.on_commit = on_commit  # called with the source id: it may go on migrating
        self.on_start = on_start  # called with the destination id: it expects a request now
        self.records: list[MigrationRecord] = []
        self.committed = 0  # migrations that moved their request (the watchdog's progress)
        self._processes: list = []

    def start(
        self,
        request: Request,
        source: Llumlet,
        destination: Llumlet,
        plan: TransferPlan | None = None,
        kind: str = BALANCE,
        ended: simpy.Event | None = None,
    ) -> MigrationRecord:
        """Start moving ``request`` (running on ``source``, or held there for its hand-off)
        to ``destination`` now; ``plan``: this move's own (a hand-off's), else the run's;
        ``ended`` succeeds when it ends (an evacuation moves one request at a time)."""
        batches = source.batches
        if request.migration is not None:
            raise ValueError(f"request {request.id} is moving already (migration {request.migration})")
        if request not in batches.running and request not in batches.suspended:
            raise ValueError(f"request {request.id} is not running on instance {source.id}")
        if destination is source or destination.status.draining or destination.status.failed:
            raise ValueError(f"instance {destination.id} cannot be a migration destination now")
        record = MigrationRecord(
            id=len(self.records),
            request_id=request.id,
            source=source.id,
            destination=destination.id,
            mode=(plan or self.plan).mode,
            start=self.env.now,
            kind=kind,
        )
        self.records.append(record)
        # moving from now, not from when its process first runs: a second start later this
        # instant (adaptive PD's move and a hand-off in one tick) sees it and leaves it be
        request.moving(record)
        ends = source.endpoint, destination.endpoint
        for end in ends:  # taken now: nothing later this instant can remove either
            end.migration_started()
        self.on_start(destination.id)
        self._processes.append(self.env.process(self._run(*ends, request, record, plan or self.plan, ended)))
        return record

    def _run(
        self,
        source: MigrationEndpoint,
        destination: MigrationEndpoint,
        request: Request,
        record: MigrationRecord,
        plan: TransferPlan,
        ended: simpy.Event | None,
    ):
        yield from migrate(
            self.env,
            source,
            destination,
            request,
            record,
            plan,
            self.transfer_from(source),
            self.wake,
            stage_fails=self.stage_fails,
            handshake_timeout=self.handshake_timeout,
        )
        source.migration_ended()
        destination.migration_ended()
        if record.outcome is MigrationOutcome.COMMITTED:
            self.committed += 1
            if record.kind == BALANCE:
                self.on_commit(source.id)
        if ended is not None:
            ended.succeed()
        # after an abort the pair waits for the next pairing round

    # ------------------------------------------------------------------ at the destination
    def prefilled(self, instance_id: int, request: Request, prefill_seconds: float) -> None:
        """``request``'s prefill on ``instance_id`` ended. A recompute migration to it ends
        there: the re-prefill was its downtime, and, batched at once, it rejoins with no
        delay (held out of the batch for a hand-off, or finished, it does not rejoin)."""
        record = request.migration
        if record is None or record.destination != instance_id:
            return
        now = self.env.now
        record.rebuilt(now, prefill_seconds)
        if request.done:
            return
        if request.state is RequestState.RUNNING:
            record.rejoined(now)
        request.settled(record)

    def joined(self, instance_id: int, request: Request) -> None:
        """``request`` is batched on ``instance_id`` again: a migration to it ends here."""
        record = request.migration
        if record is not None and record.destination == instance_id:
            record.rejoined(self.env.now)
            request.settled(record)

    def in_flight_processes(self) -> list:
        return [process for process in self._processes if process.is_alive]

    def live_reservation_keys(self) -> set:
        """Ledger keys of migrations still in flight (their reservations are not leaks)."""
        return {
            record.reservation_key
            for record in self.records
            if record.outcome is MigrationOutcome.IN_FLIGHT
        }


class _Run(Protocol):
    migrations: MigrationLauncher


def _records(run: _Run) -> list[MigrationRecord]:
    return run.migrations.records


# the run's migration log in its result: every migration's record — the scheduler's balance
# migrations, hand-offs and adaptive PD's moves alike (``MigrationRecord.kind``) — in start
# order, in flight or ended; every run has one, empty when nothing migrated
MIGRATIONS = result_section("migrations", _records)
