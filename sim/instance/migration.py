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
) -> Generator:
    """The migration process (simpy generator); ends with ``record.outcome`` set."""
    key = ("migration", record.id)
    preemptions_at_start = request.preemptions
    request.migration = record
    source.migrating = destination.migrating = True
    copied = 0
    suspended = False

    def gone() -> Optional[str]:
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
        if outcome != "committed":
            destination.ledger.cancel(key)
            wake(destination)  # the released reservation may admit its queue
            request.migration = None
            if suspended and request.state is RequestState.SUSPENDED:
                source.resume(request)
                wake(source)

    while True:
        reason = gone()
        if reason:
            return end("aborted", reason)
        record.stages += 1
        remaining = request.blocks - copied
        last = (
            settings.mode != "live"
            or remaining <= settings.last_stage_blocks
            or record.stages >= settings.max_stages
        )
        if last:
            outcome = env.event()
            source.request_suspension(request, outcome.succeed)
            if not (yield outcome):
                return end("aborted", gone() or ABORT_FINISHED)
            suspended = True
            record.suspended_at = env.now
            if settings.mode == "recompute":
                break
            stage_blocks = request.blocks - copied  # everything, the partial block included
        else:
            stage_blocks = max(request.blocks - 1 - copied, 0)  # completed blocks only
        # pre-allocate on the destination: ACK, or ABORT when it has no room
        if not destination.ledger.reserve(key, stage_blocks):
            return end("aborted", ABORT_DESTINATION_FULL)
        source.copying += 1
        destination.copying += 1
        yield env.timeout(transfer.stage_time(stage_blocks))
        source.copying -= 1
        destination.copying -= 1
        copied += stage_blocks
        record.blocks = copied
        record.last_stage_blocks = stage_blocks
        if last:
            break
        # post-stage check: did the request finish or get preempted meanwhile?

    if settings.mode == "recompute":
        # hand the request over without its KV cache (its token ids are negligible data):
        # the destination prefills it again, and that prefill is the downtime
        source.release_suspended(request)
        wake(source)  # the freed blocks may admit its queue
        record.committed_at = env.now
        request.migrations += 1
        destination.enqueue(request, front=True)
        wake(destination)
        source.migrating = destination.migrating = False
        record.end = env.now
        record.outcome = "committed"
        return None

    # commit: the source frees its copy, the destination owns the reserved blocks
    source.release_suspended(request)
    wake(source)  # the freed blocks may admit its queue
    destination.ledger.commit(key, request)
    record.committed_at = env.now
    record.downtime = env.now - record.suspended_at
    request.migrations += 1
    destination.admit_migrated(request)
    wake(destination)
    end("committed")
    return None
