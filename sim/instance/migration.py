"""Moving a running request between llumlets: the staged live-migration handshake.

One migration is one process (``migrate``), read top to bottom:

* stage 0 copies every completed block while the request keeps decoding on the source;
  each further stage copies the blocks completed meanwhile;
* when few blocks remain (``last_stage_blocks``) or the stage cap is reached, the last stage
  takes the request out of the source batch, copies the rest, and the destination commits:
  it turns its reservation into the request's blocks and resumes it from its next iteration;
* before every stage the destination pre-allocates that stage's blocks (ACK) or refuses
  (ABORT); after every stage the source aborts if the request finished or was preempted
  meanwhile. On abort every reserved block is released and the request carries on at the
  source.

``blocking`` copies everything in one stage with the request stopped; ``recompute`` drops
the KV cache at the source and the destination prefills the request again.

Downtime is the time from the request leaving the source batch until the destination holds
its KV cache (live/blocking: the commit; recompute: the end of the re-prefill, not counting
time queued at the destination). The wait for the destination's next iteration boundary,
which any arriving request pays, is logged separately as ``rejoin_delay``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Generator, Optional, Protocol

from sim.instance.llumlet import Llumlet
from sim.instance.request import Request, RequestState

ABORT_DESTINATION_FULL = "destination_out_of_memory"
ABORT_FINISHED = "request_finished"
ABORT_PREEMPTED = "request_preempted"
ABORT_SOURCE_FAILED = "source_failed"
ABORT_DESTINATION_FAILED = "destination_failed"
ABORT_TRANSFER_FAILED = "transfer_failed"


class TransferModel(Protocol):
    """What a migration needs from the hardware layer (``sim.hardware.transfer``)."""

    stage_latency: float

    def stage_time(self, blocks: int) -> float: ...


@dataclass
class MigrationRecord:
    """One row of the migration log."""

    id: int
    request_id: int
    source: int
    destination: int
    mode: str
    start: float
    end: float = math.nan
    stages: int = 0
    blocks: int = 0
    last_stage_blocks: int = 0
    downtime: float = math.nan
    rejoin_delay: float = math.nan
    outcome: str = "in_flight"
    abort_reason: str = ""
    suspended_at: float = math.nan
    committed_at: float = math.nan

    # hooks called by the destination llumlet as the request comes back to life there
    def rebuilt(self, now: float, prefill_started: float) -> None:
        """Recompute mode: the destination finished re-prefilling the request."""
        self.downtime = (self.committed_at - self.suspended_at) + (now - prefill_started)
        self.committed_at = now

    def rejoined(self, now: float) -> None:
        """The request is in a destination iteration again."""
        self.rejoin_delay = now - self.committed_at


@dataclass(frozen=True)
class MigrationSettings:
    mode: str = "live"
    last_stage_blocks: int = 16
    max_stages: int = 3


def select_request(source: Llumlet) -> Optional[Request]:
    """The source llumlet's choice: lower priority first, then shorter sequence; never one
    already migrating."""
    best: Optional[Request] = None
    best_key = None
    for request in source.running:
        if request.migration is not None:
            continue
        key = (-request.tier, request.prompt_tokens + source.progress(request), request.id)
        if best_key is None or key < best_key:
            best, best_key = request, key
    return best


def migrate(
    env,
    source: Llumlet,
    destination: Llumlet,
    request: Request,
    record: MigrationRecord,
    settings: MigrationSettings,
    transfer: TransferModel,
    wake: Callable[[Llumlet], None],
    stage_fails: Callable[[], bool] = lambda: False,
    handshake_timeout: float = 10.0,
) -> Generator:
    """The migration process (simpy generator); ends with ``record.outcome`` set.

    ``stage_fails`` injects transfer failures (checked after each copy); a failed instance
    is noticed after every wait. When the source dies, the destination only learns it when
    the handshake times out, and frees its orphaned reservation then.
    """
    key = ("migration", record.id)
    preemptions_at_start = request.preemptions
    request.migration = record
    source.migrating = destination.migrating = True
    copied = 0
    suspended = False

    def trouble() -> Optional[str]:
        """Why the migration cannot go on, if it cannot."""
        if destination.failed:
            return ABORT_DESTINATION_FAILED
        if source.failed:
            return ABORT_SOURCE_FAILED
        if request.state is RequestState.FINISHED or request.state is RequestState.ABORTED:
            return ABORT_FINISHED
        if request.preemptions != preemptions_at_start:
            return ABORT_PREEMPTED
        return None

    def end(outcome: str, reason: str = "") -> None:
        record.end = env.now
        record.outcome = outcome
        record.abort_reason = reason
        source.migrating = destination.migrating = False
        if outcome == "committed":
            return
        destination.ledger.cancel(key)
        wake(destination)  # the released reservation may admit its queue
        if request.migration is record:
            request.migration = None
        if suspended and request.state is RequestState.SUSPENDED and not source.failed:
            source.resume(request)  # the request carries on at the source
            wake(source)

    def abort(reason: str) -> Generator:
        if reason == ABORT_SOURCE_FAILED:
            yield env.timeout(handshake_timeout)
        end("aborted", reason)

    while True:
        reason = trouble()
        if reason:
            return (yield from abort(reason))
        record.stages += 1
        remaining = request.blocks - copied
        last = (
            settings.mode != "live"
            or remaining <= settings.last_stage_blocks
            or record.stages >= settings.max_stages
        )
        if last:
            answer = env.event()
            source.request_suspension(request, answer.succeed)
            if not (yield answer):
                return (yield from abort(trouble() or ABORT_FINISHED))
            suspended = True
            record.suspended_at = env.now
            reason = trouble()  # an instance may have failed while we waited for the boundary
            if reason:
                return (yield from abort(reason))
            if settings.mode == "recompute":
                break
            stage_blocks = request.blocks - copied  # everything, the partial block included
        else:
            stage_blocks = max(request.blocks - 1 - copied, 0)  # completed blocks only
        # pre-allocate on the destination: ACK, or ABORT when it has no room
        if not destination.ledger.reserve(key, stage_blocks):
            return (yield from abort(ABORT_DESTINATION_FULL))
        source.copying += 1
        destination.copying += 1
        yield env.timeout(transfer.stage_time(stage_blocks))
        source.copying -= 1
        destination.copying -= 1
        reason = trouble() if last else None  # a non-final stage is checked at the loop top
        if reason is None and stage_fails():
            reason = ABORT_TRANSFER_FAILED
        if reason:
            return (yield from abort(reason))
        copied += stage_blocks
        record.blocks = copied
        record.last_stage_blocks = stage_blocks
        if last:
            break

    # commit: the source drops its copy; the destination owns the blocks (or, for recompute,
    # prefills the request again — its token ids are negligible data — and that prefill is
    # the downtime)
    source.release_suspended(request)
    wake(source)  # the freed blocks may admit its queue
    record.committed_at = env.now
    request.migrations += 1
    if settings.mode == "recompute":
        destination.enqueue(request, front=True)
    else:
        destination.ledger.commit(key, request)
        record.downtime = env.now - record.suspended_at
        destination.admit_migrated(request)
    wake(destination)
    end("committed")
    return None
