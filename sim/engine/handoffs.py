"""Prefill/decode disaggregation, the engine's side: carrying out what the run's hand-off rule
decides (``sim.cluster.handoff``) — handing a request's KV from the prefill instance that
produced its first token to a decode instance, letting it decode where it is, and adaptive
PD's moves.

A request with tokens left after its prefill on a prefill instance waits for a hand-off,
held out of the batch with its blocks (``pd.copy: blocking``) or decoding there (``live``).
A hand-off is a migration of kind ``handoff`` (``sim.instance.migration``), started through
the launcher with its own ``TransferPlan``. Its destination reserves the request's blocks
before each copy (refused below its watermark). The copy crosses the link between the two
instances (``TransferModel.stage_time``: a fixed latency plus bytes over bandwidth; bytes =
blocks × the pool's block bytes), and both ends run co-located slower meanwhile. Concurrent
hand-offs through one instance share its link by taking turns, first come first served
(``KvTransfer`` links). It commits or aborts as any migration does (INV-5 commit-or-abort).
An aborted hand-off leaves the request where it was, and a later tick tries again.

Latency composition, which follows from this: the first token is the prefill instance's.
The wait for a hand-off, the copy and the wait for the decode instance's next iteration
all fall into the second token's time. Nothing is counted twice, because a request's times
are stamped once, by the events of its life (``sim.instance.request``). Requests of mixed
pools never meet any of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping, Optional, Protocol

from sim.cluster.handoff import SWAPS, Handoff, HandoffRule, HeldRequest
from sim.cluster.view import ClusterView
from sim.config.schema import PdConfig
from sim.engine.instances import InstanceRuntime
from sim.engine.migrations import MigrationLauncher
from sim.engine.sections import result_section
from sim.engine.setup import InstancePool
from sim.instance.endpoint import MigrationEndpoint
from sim.instance.former_io import Role
from sim.instance.kv_transfer import Link
from sim.instance.llumlet import Llumlet
from sim.instance.migration import ADAPTIVE, HANDOFF, MigrationOutcome, MigrationRecord
from sim.instance.request import Request, RequestState
from sim.instance.transfer_plan import MigrationMode


def pool_role(settings: Optional[PdConfig], role: str) -> Role:
    """What a pool's role asks of its batch former: a prefill instance holds a prefilled
    request out of its batch for a blocking copy."""
    return Role(role, role == "prefill" and settings is not None and settings.copy == "blocking")


class Handoffs:
    """The requests waiting for their hand-off, the hand-offs and moves in flight, each
    instance's link, and what adaptive PD did in the other role's place; the decisions are
    ``rule``'s, over the scheduler's ``view``, and the copies the launcher's migrations."""

    def __init__(
        self,
        settings: PdConfig,
        rule: HandoffRule,
        view: ClusterView,
        launcher: MigrationLauncher,
        live: Mapping[int, InstanceRuntime],
        wake: Callable[[MigrationEndpoint], None],
        candidate: Callable[[Llumlet], Optional[Request]],
    ) -> None:
        self.settings = settings
        self.rule = rule
        self.view = view
        # blocking: an aborted hand-off leaves its request held; live: decoding, as before
        staged = settings.copy == "live"
        self.plan = replace(
            launcher.plan, mode=MigrationMode.LIVE if staged else MigrationMode.BLOCKING, resume_on_abort=staged
        )
        self.launcher = launcher
        self.live = live
        self.wake = wake  # an idle instance's step loop, when a request it holds may decode now
        self.candidate = candidate  # the running request a move takes (the run's candidate rule)
        self.waiting: dict[Request, None] = {}  # prefilled on a prefill instance, not handed off
        self._in_flight: list[MigrationRecord] = []
        self.links: dict[int, Link] = {}  # each instance's link, made at its first hand-off
        self.paused = False  # the global scheduler is down: nobody chooses a decode instance
        self.swaps = dict.fromkeys(SWAPS, 0)  # adaptive PD: work done in the other role's place
        self._eased: list[tuple[MigrationRecord, Request]] = []  # decode work moving to a prefill instance

    # ------------------------------------------------------------------ what the engine asks
    def entry(self) -> list[int]:
        """The instances new requests go to (the rule's; counted when adaptive PD sends them
        to decode instances)."""
        instances, relieved = self.rule.entry(self.view)
        if relieved:
            self.swaps["prefilled_on_decode"] += 1
        return instances

    def balancing(self) -> list[int]:
        return self.rule.balancing(self.view)

    def is_prefill(self, instance_id: int) -> bool:
        return self.view.role_of[instance_id] == "prefill"

    def pause(self, paused: bool) -> None:
        """The global scheduler is down (or back): nobody picks a decode instance meanwhile."""
        self.paused = paused

    # ------------------------------------------------------------------ hand-offs
    def prefilled(self, request: Request, prefill_seconds: float) -> None:
        """A prefill instance's prefill gave ``request`` its first token (or its recompute
        after a preemption) after ``prefill_seconds``, and it has tokens left: it waits for its
        hand-off, which a rule deciding at the first token starts now (layer-wise: already
        under way for all but the last layer)."""
        self.waiting[request] = None
        if self.rule.decides_at_first_token and not self.paused:
            decisions = self.rule.at_first_token(self.view, self._held(request), self._decode_room())
            head_start = (0.0, 0.0)
            if self.settings.layerwise:
                layers = getattr(self.live[request.instance].pool.model, "num_layers", 1)
                head_start = (prefill_seconds, 1.0 / layers)
            self._carry_out(decisions, head_start)

    def on_tick(self) -> None:
        """Adaptive PD's moves first, then the rule's decisions for what waits."""
        self._in_flight = [r for r in self._in_flight if r.outcome is MigrationOutcome.IN_FLIGHT]
        if self.rule.adaptive is not None:
            self._adaptive_moves()
        if not self.waiting:
            return
        waiting = [r for r in self.waiting if self._still_waits(r)]
        self.waiting = dict.fromkeys(waiting)
        # a request computing its prompt again (V1: part-way through it after a preemption)
        # is no candidate: first of its instance, it would keep the instance's one hand-off
        # from the requests held there, whose blocks it may be waiting for
        held = [self._held(request) for request in waiting if self._in_batch(request) or self._joining(request)]
        self._carry_out(self.rule.on_tick(self.view, held, self._busy_ends(), self._decode_room()))

    def _adaptive_moves(self) -> None:
        """Carry out the rule's adaptive moves (requests eased to a prefill instance wait for a
        hand-off back once there)."""
        for record, request in self._eased:  # decoding on a prefill instance now: handed back later
            if record.outcome is MigrationOutcome.COMMITTED and not request.done:
                self.waiting[request] = None
        self._eased = [(record, request) for record, request in self._eased if record.outcome is MigrationOutcome.IN_FLIGHT]
        for move in self.rule.adaptive.moves(self.view, self._busy_ends()):
            request = self.candidate(self.live[move.source].llumlet)
            if request is None:
                continue
            record = self.launcher.start(request, self.live[move.source].llumlet, self.live[move.destination].llumlet, kind=ADAPTIVE)
            self._in_flight.append(record)
            self.swaps[move.swap] += 1
            if move.swap == "eased_to_prefill":
                self._eased.append((record, request))

    def _carry_out(self, decisions: list[Handoff], head_start: tuple[float, float] = (0.0, 0.0)) -> None:
        """Start each decided hand-off, or let its request decode where it is, unless it is
        moving already or not in its instance's batch (joining from the next step: a later
        tick decides again)."""
        by_id = {request.id: request for request in self.waiting}
        for decision in decisions:
            request = by_id[decision.request]
            source = self.live[request.instance].llumlet
            batches = source.batches
            if request.migration is not None or not self._in_batch(request):
                continue
            if decision.destination is None:
                if request in batches.suspended:
                    source.endpoint.resume(request)
                    self.wake(source.endpoint)
                    self.swaps["decoded_on_prefill"] += 1
                continue
            seconds, last_share = head_start
            plan = replace(
                self.plan,
                links=tuple(self._link(i) for i in sorted((source.id, decision.destination))),
                head_start=seconds,
                last_share=last_share,
            )
            record = self.launcher.start(request, source, self.live[decision.destination].llumlet, plan, kind=HANDOFF)
            self._in_flight.append(record)

    def _in_batch(self, request: Request) -> bool:
        """Decoding in its instance's batch, or held out of it: a request a hand-off can take."""
        batches = self.live[request.instance].llumlet.batches
        return request in batches.running or request in batches.suspended

    def _joining(self, request: Request) -> bool:
        """Prefilled and joining its instance's batch from the next step (a later tick takes it)."""
        return request in self.live[request.instance].llumlet.batches.joining

    def _held(self, request: Request) -> HeldRequest:
        """What the rule sees of a waiting request."""
        blocks = self.live[request.instance].llumlet.ledger.held(request)
        return HeldRequest(
            request.id, request.instance, request.tier, request.seq_len, blocks, request.migration is not None
        )

    def _busy_ends(self) -> set[int]:
        """Instances a hand-off or move is in flight to or from (one at a time each)."""
        return {end for record in self._in_flight for end in (record.source, record.destination)}

    def _still_waits(self, request: Request) -> bool:
        """On a live prefill instance, holding its KV, not ended."""
        return (
            not request.done
            and request.instance in self.live
            and self.view.role_of[request.instance] == "prefill"
            and request.state is not RequestState.QUEUED
        )

    def _decode_room(self) -> int:
        """The most blocks a live decode instance could take when empty (above its
        watermark); 0 with none left."""
        return max(
            (
                runtime.llumlet.limits.capacity_blocks - runtime.llumlet.limits.watermark_blocks
                for i, runtime in self.live.items()
                if self.view.role_of[i] == "decode"
            ),
            default=0,
        )

    def _link(self, instance_id: int) -> Link:
        """The instance's link for hand-offs: one copy at a time through it (Llumnix asserts
        a migration concurrency of 1, ``arg_utils.py``; ``max_migration_concurrency``)."""
        link = self.links.get(instance_id)
        if link is None:
            link = self.links[instance_id] = Link(self.launcher.env)
        return link


# ---------------------------------------------------------------------- in the run's result
# what disaggregation leaves in a run's result: each pool's role, the bytes of a KV block a
# hand-off copies, how long each instance's link carried copies, and the requests adaptive PD
# served in the other role's place (the hand-offs themselves are migration records)
@dataclass(frozen=True)
class PdResult:
    pool_roles: dict[str, str]  # every pool's role: prefill, decode or mixed
    pool_block_bytes: dict[str, int]  # bytes of one KV block of the pool's instances (pools that migrate)
    link_busy_seconds: dict[int, float]  # each instance's hand-off link, by instance id
    role_swaps: dict[str, int]  # adaptive PD: work done in the other role's place, by kind


class _Run(Protocol):
    pools: dict[str, InstancePool]
    handoffs: Optional[Handoffs]  # None without pool roles


def _collect(run: _Run) -> Optional[PdResult]:
    roles: dict[str, str] = {name: pool.config.role for name, pool in run.pools.items()}
    if set(roles.values()) <= {"mixed"}:
        return None
    handoffs = run.handoffs
    return PdResult(
        pool_roles=roles,
        pool_block_bytes={
            name: getattr(pool.transfer, "block_bytes", 0) for name, pool in run.pools.items() if pool.transfer is not None
        },
        link_busy_seconds={} if handoffs is None else {i: link.busy_seconds for i, link in handoffs.links.items()},
        role_swaps={} if handoffs is None else dict(handoffs.swaps),
    )


# None: no pool has a role other than mixed
PD = result_section("pd", _collect)
