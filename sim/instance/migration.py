"""Moving a running request between llumlets: the staged live-migration handshake. The
request stays resident at its source until the commit, and every migration ends committed
or aborted with a reason (INV-5 commit-or-abort).

One migration is one process (``migrate``), read top to bottom:

* stage 0 copies every completed block while the request keeps decoding on the source;
  each further stage copies the blocks completed meanwhile;
* when few blocks remain (``last_stage_blocks``) or the stage cap is reached, the last stage
  takes the request out of the source batch, copies the rest, and the destination commits:
  it turns its reservation into the request's blocks and resumes it from its next iteration;
* before every stage the destination pre-allocates that stage's blocks (ACK) or refuses
  (ABORT); after every stage the source aborts if the request finished or was preempted
  meanwhile, or if the destination started draining (a scaled-in instance stops being a
  destination at once). On abort every reserved block is released and the request carries
  on at the source.

Each mode is a ``StagePlan``: ``blocking`` copies everything in one stage with the request
stopped; ``recompute`` copies nothing and the destination prefills the request again.

The copies are a ``KvTransfer`` (``sim.instance.kv_transfer``): the engine's operation for
moving KV blocks between instances, of which this handshake is one use.

Downtime is the time from the request leaving the source batch until the destination holds
its KV cache (live/blocking: the commit; recompute: the end of the re-prefill, not counting
time queued at the destination). The wait for the destination's next iteration boundary,
which any arriving request pays, is logged separately as ``rejoin_delay``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Callable, Generator, Optional

from sim.instance.endpoint import MigrationEndpoint
from sim.instance.kv_transfer import KvTransfer, TransferModel
from sim.instance.request import Request, RequestState
from sim.instance.transfer_plan import MigrationMode, TransferPlan

ABORT_DESTINATION_FULL = "destination_out_of_memory"
ABORT_FINISHED = "request_finished"
ABORT_PREEMPTED = "request_preempted"
ABORT_SOURCE_FAILED = "source_failed"
ABORT_DESTINATION_FAILED = "destination_failed"
ABORT_TRANSFER_FAILED = "transfer_failed"
ABORT_DESTINATION_DRAINING = "destination_draining"

# what a migration is for: the scheduler's load balancing, or prefill/decode disaggregation's
# hand-off of a prefilled request to a decode instance (sim.engine.handoffs)
BALANCE = "balance"
HANDOFF = "handoff"
ADAPTIVE = "adaptive"  # adaptive PD's moves of decoding work between roles (sim.engine.handoffs)
EVACUATION = "evacuation"  # a spot instance's requests moved away in its grace period (sim.engine.spot)


class MigrationOutcome(StrEnum):
    IN_FLIGHT = "in_flight"
    COMMITTED = "committed"
    ABORTED = "aborted"


@dataclass(frozen=True)
class StagePlan:
    """What a mode does: copy stages overlap decoding (live) or not; KV copied or rebuilt."""

    copies_while_running: bool
    copies_kv: bool


STAGE_PLANS = {
    MigrationMode.LIVE: StagePlan(copies_while_running=True, copies_kv=True),
    MigrationMode.BLOCKING: StagePlan(copies_while_running=False, copies_kv=True),
    MigrationMode.RECOMPUTE: StagePlan(copies_while_running=False, copies_kv=False),
}


@dataclass
class MigrationRecord:
    """One row of the migration log."""

    id: int
    request_id: int
    source: int
    destination: int
    mode: MigrationMode
    start: float
    end: float = math.nan
    stages: int = 0
    blocks: int = 0
    last_stage_blocks: int = 0
    downtime: float = math.nan
    rejoin_delay: float = math.nan
    outcome: MigrationOutcome = MigrationOutcome.IN_FLIGHT
    abort_reason: str = ""
    suspended_at: float = math.nan
    committed_at: float = math.nan
    kind: str = BALANCE  # BALANCE, HANDOFF, ADAPTIVE or EVACUATION

    @property
    def reservation_key(self) -> tuple[str, int]:
        """The destination's ledger key for this migration's pre-allocated blocks."""
        return ("migration", self.id)

    # as the request comes back to life at the destination (``sim.engine.migrations``)
    def rebuilt(self, now: float, prefill_seconds: float) -> None:
        """Recompute mode: the destination finished re-prefilling the request."""
        self.downtime = (self.committed_at - self.suspended_at) + prefill_seconds
        self.committed_at = now

    def rejoined(self, now: float) -> None:
        """The request is in a destination iteration again."""
        self.rejoin_delay = now - self.committed_at


def migrate(
    env,
    source: MigrationEndpoint,
    destination: MigrationEndpoint,
    request: Request,
    record: MigrationRecord,
    settings: TransferPlan,
    transfer: TransferModel,
    wake: Callable[[MigrationEndpoint], None],
    stage_fails: Callable[[], bool] = lambda: False,
    handshake_timeout: float = 10.0,
) -> Generator:
    """The migration process (simpy generator); ends with ``record.outcome`` set.

    ``settings``: the plan its starter made (mode, stage limits, the copies' options);
    ``stage_fails`` injects transfer failures (checked after each copy); a failed instance
    is noticed after every wait. When the source dies, the destination only learns it when
    the handshake times out, and frees its orphaned reservation then.
    """
    copies = KvTransfer(env, source, destination, record.reservation_key, transfer, settings)
    handshake = _Handshake(env, source, destination, request, record, wake, copies, settings.resume_on_abort)
    plan = STAGE_PLANS[settings.mode]
    while True:
        reason = handshake.trouble()
        if reason:
            return (yield from handshake.abort(reason, handshake_timeout))
        record.stages += 1
        last = (
            not plan.copies_while_running
            or source.ledger.held(request) - copies.copied <= settings.last_stage_blocks
            or record.stages >= settings.max_stages
        )
        if last:
            reason = yield from handshake.suspend()
            if reason:
                return (yield from handshake.abort(reason, handshake_timeout))
            if not plan.copies_kv:
                break
            stage_blocks = source.ledger.held(request) - copies.copied  # the partial block too
        else:
            stage_blocks = max(source.ledger.held(request) - 1 - copies.copied, 0)  # completed blocks
        reason = yield from handshake.copy_stage(stage_blocks, last, stage_fails)
        if reason:
            return (yield from handshake.abort(reason, handshake_timeout))
        if last:
            break
    handshake.commit(rebuild=not plan.copies_kv)
    return None


class _Handshake:
    """State and steps of one migration between two endpoints (see ``migrate``)."""

    def __init__(
        self,
        env,
        source: MigrationEndpoint,
        destination: MigrationEndpoint,
        request: Request,
        record: MigrationRecord,
        wake: Callable[[MigrationEndpoint], None],
        copies: KvTransfer,
        resume_on_abort: bool = True,
    ) -> None:
        self.env = env
        self.source = source
        self.destination = destination
        self.request = request
        self.record = record
        self.wake = wake
        self.copies = copies
        self.resume_on_abort = resume_on_abort
        self.preemptions_at_start = request.preemptions
        self.suspended = False
        request.moving(record)

    def trouble(self) -> Optional[str]:
        """Why the migration cannot go on, if it cannot."""
        if self.destination.status.failed:
            return ABORT_DESTINATION_FAILED
        if self.source.status.failed:
            return ABORT_SOURCE_FAILED
        if self.destination.status.draining:  # scaled in: it would only have to move the request on
            return ABORT_DESTINATION_DRAINING
        state = self.request.state
        if state is RequestState.FINISHED or state is RequestState.ABORTED:
            return ABORT_FINISHED
        if self.request.preemptions != self.preemptions_at_start:
            return ABORT_PREEMPTED
        return None

    def suspend(self) -> Generator:
        """Take the request out of the source batch at its next iteration boundary; returns
        why the migration cannot go on, if so."""
        answer = self.env.event()
        self.source.request_suspension(self.request, answer.succeed)
        if not (yield answer):
            return self.trouble() or ABORT_FINISHED
        self.suspended = True
        self.record.suspended_at = self.env.now
        return self.trouble()  # an instance may have failed while we waited for the boundary

    def copy_stage(self, blocks: int, last: bool, stage_fails) -> Generator:
        """Pre-allocate on the destination (ACK, or ABORT when it has no room above its
        watermark), copy, then check; returns why the migration cannot go on, if so."""
        sent = self.copies.reserve(self.request, blocks)
        if sent is None:
            return ABORT_DESTINATION_FULL
        yield from self.copies.copy(sent)
        reason = self.trouble() if last else None  # a non-final stage is checked at the loop top
        if reason is None and stage_fails():
            reason = ABORT_TRANSFER_FAILED
        if reason is None:
            self.copies.accept(blocks)
            self.record.blocks = self.copies.copied
            self.record.last_stage_blocks = blocks
        return reason

    def commit(self, rebuild: bool) -> None:
        """The source drops its copy; the destination owns the blocks — or, rebuilding,
        prefills the request again (its token ids are negligible data), and that prefill is
        the downtime."""
        source, destination, request, record = self.source, self.destination, self.request, self.record
        source.release_suspended(request)
        self.wake(source)  # the freed blocks may admit its queue
        record.committed_at = self.env.now
        request.moved()
        if not rebuild:
            self.copies.commit(request)
            record.downtime = self.env.now - record.suspended_at
        destination.accept_migrated(request, rebuild)
        self.wake(destination)
        self._end(MigrationOutcome.COMMITTED)

    def abort(self, reason: str, handshake_timeout: float) -> Generator:
        if reason == ABORT_SOURCE_FAILED:
            yield self.env.timeout(handshake_timeout)
        self._end(MigrationOutcome.ABORTED, reason)

    def _end(self, outcome: MigrationOutcome, reason: str = "") -> None:
        record, request, source = self.record, self.request, self.source
        record.end = self.env.now
        record.outcome = outcome
        record.abort_reason = reason
        if outcome is MigrationOutcome.COMMITTED:
            return
        self.copies.cancel()
        self.wake(self.destination)  # the released reservation may admit its queue
        request.settled(record)
        if source.status.failed:
            return
        held = not self.resume_on_abort and reason == ABORT_DESTINATION_FULL  # waits for room
        if self.suspended and request.state is RequestState.SUSPENDED and not held:
            source.resume(request)  # the request carries on at the source
        # the source may have emptied meanwhile (the request finished there): woken, an idle
        # source reports itself no longer migrating (INV-4 idle-view)
        self.wake(source)
