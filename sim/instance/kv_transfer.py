"""Copying a request's KV blocks from one instance to another: the engine's KV transfer.

A transfer is a sequence of copies over the link between two instances, each of a number of
blocks: the destination pre-allocates them first (refused, as vLLM's block manager refuses
``get_free_blocks``, when they would cut into the watermark it keeps free), the link takes
its time for those of them the destination lacks — all, unless its prefix cache holds some
(``BlockLedger.lacking``) — (``TransferModel.stage_time``: a fixed latency plus bytes over
bandwidth, ``sim.hardware.transfer``), and both instances' iterations run slower while a
copy is in flight (the co-located copy). At the end the transfer commits — the blocks it
reserved become the request's table in the destination's ledger — or is cancelled, and the
reservation freed. A transfer given ``links`` (a prefill-to-decode hand-off: each instance's
``Link``, a ``simpy.Resource`` of one) waits until it holds all of them before each copy, so
concurrent copies through an instance take turns, first come first served; taken in a fixed
order (instance id), two copies never wait for each other crosswise. A layer-wise hand-off's
first copy starts with a head start — the seconds it ran during the prefill, all but the
last layer's share — unless it had to wait for a link. Live migration (``sim.instance.migration``) is one use: its stages are
copies and its handshake decides when to stop; a prefill-to-decode hand-off is another.
"""

from __future__ import annotations

from typing import Generator, Hashable, Optional, Protocol

import simpy

from sim.instance.endpoint import MigrationEndpoint
from sim.instance.request import Request
from sim.instance.transfer_plan import TransferPlan


class TransferModel(Protocol):
    """The link a transfer crosses (``sim.hardware.transfer``)."""

    stage_latency: float

    def stage_time(self, blocks: int) -> float: ...


class Link(simpy.Resource):
    """An instance's link for hand-offs: one copy through it at a time, and the seconds it
    carried one (its utilisation, which waits for it do not count toward)."""

    def __init__(self, env) -> None:
        super().__init__(env, capacity=1)
        self.busy_seconds = 0.0


class KvTransfer:
    """One request's KV blocks on their way from ``source`` to ``destination``, reserved on
    the destination under ``key`` (its ledger's reservation key), over ``link`` as ``plan``
    says (the links each copy holds, a head start, whether cached blocks cross)."""

    def __init__(
        self,
        env,
        source: MigrationEndpoint,
        destination: MigrationEndpoint,
        key: Hashable,
        link: TransferModel,
        plan: TransferPlan = TransferPlan(),
    ) -> None:
        self.env = env
        self.links = plan.links
        self.head_start = plan.head_start  # spent by the first copy
        self.last_share = plan.last_share
        self.source = source
        self.destination = destination
        self.key = key
        self.link = link
        self.copied = 0  # blocks copied so far (counted once a copy is accepted)
        self.skip_cached = plan.skip_cached  # False: every block crosses, cached there or not

    def reserve(self, request: Request, blocks: int) -> Optional[int]:
        """Pre-allocate the next copy's blocks on the destination (ACK) and return how many
        must cross the link — those it lacks: a prefix cache there may hold the rest — or
        refuse (ABORT, None) when that would leave fewer free than its watermark."""
        ledger = self.destination.ledger
        if not self.skip_cached:
            fresh = ledger.free - blocks >= self.destination.limits.watermark_blocks and ledger.reserve(self.key, blocks)
            return blocks if fresh else None
        # the watermark counts every block of the stage, found cached or not (a hit on a
        # free cached block leaves the free blocks too), as vLLM's migrate-in check does
        if ledger.free - blocks < self.destination.limits.watermark_blocks:
            return None
        sent = ledger.lacking(self.key, request, self.copied, blocks)
        if not ledger.reserve(self.key, blocks, request, self.copied):
            return None
        return sent

    def copy(self, blocks: int) -> Generator:
        """Move ``blocks`` reserved blocks over the link (a simpy process step): both ends
        run their iterations co-located slower meanwhile (after the wait for ``links``)."""
        claims = []
        waited = False  # for a link: nothing could stream ahead of the copy meanwhile
        for link in self.links:
            claim = link.request()
            waited = waited or not claim.triggered
            yield claim
            claims.append((link, claim))
        self.source.stage_started()
        self.destination.stage_started()
        seconds = self.link.stage_time(blocks)
        if self.head_start and not waited:
            seconds = max(seconds - self.head_start, seconds * self.last_share)
        self.head_start = 0.0
        yield self.env.timeout(seconds)
        self.source.stage_ended()
        self.destination.stage_ended()
        for link, claim in claims:
            link.busy_seconds += seconds
            link.release(claim)

    def accept(self, blocks: int) -> None:
        """The copy of ``blocks`` arrived intact."""
        self.copied += blocks

    def commit(self, request: Request) -> None:
        """The copied blocks are ``request``'s on the destination now."""
        self.destination.ledger.commit(self.key, request)

    def cancel(self) -> int:
        """Free whatever the transfer reserved on the destination; returns how many blocks."""
        return self.destination.ledger.cancel(self.key)
