"""One inference request as the simulator tracks it across instances; its fields change only
through its own methods, one per event of its life (INV-2 request-owns-its-fields).

Token accounting follows vLLM: before an iteration a request needs KV blocks for
``prompt + generated`` tokens; a prefill (fresh or recompute) processes all of them and a
decode step processes one, and each iteration yields one more output token.

A request changes its own fields: the parts that move it (queue, batch former, migration,
a failed instance) call the methods below, each one event of its life, so what an event does
to a request is written once. The KV blocks it holds are not among them: each instance's
``BlockLedger`` owns its blocks and knows which request holds which.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Optional, Protocol

from sim.instance.content import Content


class RequestState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUSPENDED = "suspended"  # taken out of the batch for the last stage of a migration
    FINISHED = "finished"
    ABORTED = "aborted"


class MigrationInFlight(Protocol):
    """What a request knows of the migration moving it
    (``sim.instance.migration.MigrationRecord``, which imports this module)."""

    source: int
    destination: int


# every attribute of a Request (its __slots__, and what a pickle carries)
FIELDS = (
    "id",
    "tier",
    "arrival",
    "order",
    "prompt_tokens",
    "output_tokens",
    "generated",
    "state",
    "instance",
    "instances",
    "first_admitted",
    "first_token_time",
    "finish_time",
    "preemptions",
    "preemption_loss",
    "preempted_at",
    "migrations",
    "abort_reason",
    "retries",
    "migration",
    "requeued",
    # prefix caching: what its tokens are (None: shared with no other request) and the prompt
    # tokens its prefills found cached instead of computing, over every prefill it had
    "content",
    "cached_tokens",
    # bookkeeping of the llumlet currently holding the request (lazy decode progress)
    "epoch",
    "base_iteration",
    "base_generated",
)


class Request:
    """Mutable per-request state; the metrics table is built from these fields at the end."""

    __slots__ = FIELDS

    def __init__(
        self,
        rid: int,
        arrival: float,
        prompt_tokens: int,
        output_tokens: int,
        tier: int = 0,
        content: Optional[Content] = None,
    ) -> None:
        self.id = rid
        self.tier = tier
        self.arrival = arrival
        self.order = (arrival, rid)  # vLLM's FCFS key, built once: sorts read it per step
        self.prompt_tokens = prompt_tokens
        self.output_tokens = output_tokens
        self.generated = 0
        self.state = RequestState.QUEUED
        self.instance: Optional[int] = None
        self.instances: list[int] = []
        self.first_admitted: Optional[float] = None
        self.first_token_time: Optional[float] = None
        self.finish_time: Optional[float] = None
        self.preemptions = 0
        self.preemption_loss = 0.0
        self.preempted_at: Optional[float] = None
        self.migrations = 0
        self.abort_reason: Optional[str] = None
        self.retries = 0
        self.migration: Optional[MigrationInFlight] = None  # the in-flight migration moving it, if any
        self.requeued = False  # waiting again after a preemption (its queue counts it)
        self.content = content
        self.cached_tokens = 0
        self.epoch = 0
        self.base_iteration = 0
        self.base_generated = 0

    def __reduce__(self) -> tuple:
        """Pickled and copied field by field (compiled by ``sim.native``, a Request is a
        native class, which has no default way)."""
        return (_restored, (tuple(getattr(self, name) for name in FIELDS),))

    @property
    def seq_len(self) -> int:
        """Tokens whose KV must be resident for the next iteration (prompt + generated)."""
        return self.prompt_tokens + self.generated

    def arrive(self, instance_id: int) -> None:
        """The request is now at ``instance_id`` (dispatched or migrated there)."""
        self.instance = instance_id
        self.instances.append(instance_id)

    # ------------------------------------------------------------------ its life on an instance
    def queued(self) -> None:
        """It waits in an instance's queue (dispatched, preempted or migrated by recompute)."""
        self.state = RequestState.QUEUED

    def dequeued(self) -> None:
        """It left the queue: a preempted request no longer counts as waiting again."""
        self.requeued = False

    def admitted(self, now: float) -> None:
        """Its prefill is scheduled (blocks allocated); the first admission is remembered."""
        self.state = RequestState.RUNNING
        if self.first_admitted is None:
            self.first_admitted = now

    def found_cached(self, tokens: int) -> None:
        """A prefill admitted it with its first ``tokens`` tokens' KV already cached on the
        instance: those are not computed again."""
        self.cached_tokens += tokens

    def prefilled(self, now: float) -> None:
        """A prefill (first or recompute) yielded its token: the first token's time, and the
        time lost since a preemption."""
        self.generated += 1
        if self.first_token_time is None:
            self.first_token_time = now
        if self.preempted_at is not None:
            self.preemption_loss += now - self.preempted_at
            self.preempted_at = None

    def joined(self, iteration: int) -> None:
        """It joins a running batch at ``iteration``: its decode progress is counted lazily
        from there, and a new epoch invalidates the calendar entries of the last one."""
        self.state = RequestState.RUNNING
        self.epoch += 1
        self.base_iteration = iteration
        self.base_generated = self.generated

    def left(self, generated: int) -> None:
        """It left the running batch having produced ``generated`` tokens (new epoch)."""
        self.generated = generated
        self.epoch += 1

    def preempted(self, now: float) -> None:
        """Preempted by recompute: counted, and queued again from ``now`` (the loss is
        counted from the first preemption until a prefill brings it back)."""
        self.preemptions += 1
        if self.preempted_at is None:
            self.preempted_at = now
        self.requeued = True

    def suspended(self) -> None:
        """Taken out of the batch for a migration's last stage."""
        self.state = RequestState.SUSPENDED

    def lost(self) -> None:
        """Its instance died: whatever calendar entries it had there are void (new epoch)."""
        self.epoch += 1

    def moving(self, migration: MigrationInFlight) -> None:
        """A migration started moving it."""
        self.migration = migration

    def moved(self) -> None:
        """A migration moving it committed: counted."""
        self.migrations += 1

    def settled(self, migration: MigrationInFlight) -> None:
        """``migration`` is over (aborted, or rejoined at the destination): no longer moving
        it, unless another already is."""
        if self.migration is migration:
            self.migration = None

    def retiered(self, tier: int) -> None:
        """Its tier as another run drew it (runs that are one simulation, ``sim.sweep.sharing``)."""
        self.tier = tier

    def abort(self, reason: str, now: float) -> None:
        """End the request unserved, with a reason: the one terminal path besides finishing."""
        self.state = RequestState.ABORTED
        self.abort_reason = reason
        self.finish_time = now

    def finish(self, now: float) -> None:
        self.state = RequestState.FINISHED
        self.finish_time = now

    def restart_from_scratch(self, failed_instance: int) -> None:
        """Its instance died with the KV cache: the request is dispatched again as new
        (progress and first-token time reset, the retry counted). A migration that was
        moving it out of the failed instance, or had just moved it there (a recompute
        migration's request waiting to be rebuilt), no longer owns it."""
        self.retries += 1
        self.generated = 0
        self.requeued = False
        self.first_admitted = self.first_token_time = None
        self.preempted_at = None
        migration = self.migration
        if migration is not None and failed_instance in (migration.source, migration.destination):
            self.migration = None

    @property
    def done(self) -> bool:
        return self.state in (RequestState.FINISHED, RequestState.ABORTED)

    def __repr__(self) -> str:
        return (
            f"Request(id={self.id}, tier={self.tier}, state={self.state.value}, "
            f"prompt={self.prompt_tokens}, generated={self.generated}/{self.output_tokens}, "
            f"instance={self.instance})"
        )


def _restored(values: tuple) -> Request:
    """A pickled Request back (see ``Request.__reduce__``)."""
    request = Request(0, 0.0, 0, 0)
    for name, value in zip(FIELDS, values):
        setattr(request, name, value)
    return request
