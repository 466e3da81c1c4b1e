"""Prefill/decode disaggregation's policy, as rules over the scheduler's view: which instances
take new requests, where a request held on a prefill instance after its first token goes, and
adaptive PD's moves of decoding work between roles. ``sim.engine.handoffs`` carries the
decisions out (the held set, the links, the migrations); nothing here changes a request.

Roles come from the pools (``pools[*].role``, ``ClusterView.role_of``). Mixed instances
prefill and decode, as vLLM does. Prefill instances take every new request; each request
with tokens left after its prefill there waits for a hand-off. Decode instances take only
hand-offs, and balance migrations among themselves.

The rules, by ``pd.pairing`` (``HANDOFF_RULES``):
* ``immediate``: static pools. The decode instance is chosen at the first token by the run's
  dispatch rule, among those whose last report shows room for the request's blocks
  (DistServe, Splitwise; a decode instance of DistServe pulls a KV cache only when it has
  room). Requests still held are tried again at every tick.
* ``llumnix``: Llumnix v0. Each tick pairs prefill instances with requests waiting, most
  loaded first, with decode instances that have no preempted request, freest first, one
  hand-off in flight per instance. The load is remaining steps: free blocks above the
  watermark per running request (AlibabaPAI/llumnix main 24220fb, ``migration_scheduler.py``
  162-170, ``migration_policy.py`` 76-86, ``load_computation.py`` 89-120).

``pd.adaptive`` adds Llumnix's adaptive PD (``AdaptivePd``, its ``dispatch_scheduler.py``
87-105) to either: when every prefill instance's KV load (used plus queued blocks over
capacity) is full, a new request goes to a decode instance that is not, and is served there
end to end; when no decode instance has ``BUSY_REMAINING_STEPS`` per request left, a
prefilled request decodes on its prefill instance, and is handed off at the first tick at
which a decode instance is no longer busy. Meanwhile decoding is packed onto fewer prefill
instances, and a busy decode instance sheds requests to prefill instances running nothing.
Llumnix's code re-roles no instance: these moves are its adaptivity.

A rule is one class and one registration (``HANDOFF_RULES.register``), then
``pd.pairing: <name>`` selects it.
"""

from __future__ import annotations

import math
from typing import Callable, ClassVar, NamedTuple, Optional, Sequence

from sim.cluster.dispatch import DispatchInfo
from sim.cluster.view import ClusterView
from sim.config.registry import Registry
from sim.config.schema import PdConfig
from sim.instance.limits import blocks_for
from sim.instance.load import (
    BUSY_KV_LOAD,
    BUSY_REMAINING_STEPS,
    DECODE_COMPUTE_BOUND_BATCH,
    block_load,
    remaining_steps,
)

# what adaptive PD did in the other role's place (the summary's pd.role_swaps)
SWAPS = ("prefilled_on_decode", "decoded_on_prefill", "aggregated_on_prefill", "eased_to_prefill")


class HeldRequest(NamedTuple):
    """A request prefilled on a prefill instance and not handed off yet, as a rule sees it."""

    id: int
    instance: int  # the prefill instance holding its KV
    tier: int
    tokens: int  # its sequence so far: what a decode instance would hold
    blocks: int  # the blocks its KV holds on the prefill instance
    moving: bool = False  # a migration moves it already (a hand-off, or an adaptive move)


class Handoff(NamedTuple):
    """A decision about a held request: copy it to ``destination``, or (None) let it decode
    where it is."""

    request: int
    destination: Optional[int]


class Move(NamedTuple):
    """Adaptive PD moves a running request (the source's candidate) from ``source`` to
    ``destination``; ``swap`` names the move in the summary's role swaps."""

    source: int
    destination: int
    swap: str


Dispatch = Callable[[DispatchInfo, list[int]], int]


def _steps(view: ClusterView, instance_id: int) -> float:
    report = view.reports.get(instance_id)
    return math.inf if report is None else remaining_steps(report)


def _running(view: ClusterView, instance_id: int) -> int:
    report = view.reports.get(instance_id)
    return 0 if report is None else report.num_running


def _with_role(view: ClusterView, instances: Sequence[int], role: str) -> list[int]:
    return [i for i in instances if view.role_of[i] == role]


class AdaptivePd:
    """Llumnix's adaptive PD: its relief of busy prefill instances, its filter of busy decode
    instances, and its moves between roles (``migration_scheduler.py`` 250-271 at 24220fb)."""

    def busy_prefill(self, view: ClusterView, instance_id: int) -> bool:
        report = view.reports.get(instance_id)
        return report is not None and block_load(report) >= BUSY_KV_LOAD

    def relief(self, view: ClusterView, takers: list[int]) -> Optional[list[int]]:
        """With every prefill and mixed instance busy, the decode instances that are not (None:
        no relief)."""
        if not all(self.busy_prefill(view, i) for i in takers):
            return None
        relief = [i for i in _with_role(view, view.instances, "decode") if not self.busy_prefill(view, i)]
        return relief or None

    def spare(self, view: ClusterView, decode: list[int]) -> list[int]:
        """The decode instances with steps to spare (not busy)."""
        return [i for i in decode if _steps(view, i) >= BUSY_REMAINING_STEPS]

    def moves(self, view: ClusterView, busy: set[int]) -> list[Move]:
        """With no decode instance that has room to spare, decoding on prefill instances is
        packed onto fewer of them (``AGGREGATE_DYNAMIC_P``: by id, the lowest half to the
        highest); and each busy decode instance sheds a request to a prefill instance running
        nothing (``EASE_D_WITH_P_BUBBLE``). One move per instance; none touches an instance in
        ``busy`` (a hand-off or move in flight)."""
        free = [i for i in view.instances if i not in busy]
        decode = _with_role(view, free, "decode")
        prefill = _with_role(view, free, "prefill")
        moves = []
        if not any(_steps(view, i) >= BUSY_REMAINING_STEPS for i in decode):
            decoding = [i for i in prefill if 0 < _running(view, i) <= DECODE_COMPUTE_BOUND_BATCH]
            for source, destination in list(zip(decoding, reversed(decoding)))[: len(decoding) // 2]:
                moves.append(Move(source, destination, "aggregated_on_prefill"))
        strained = sorted(
            (i for i in decode if _steps(view, i) < BUSY_REMAINING_STEPS), key=lambda i: (_steps(view, i), i)
        )
        bubbles = [i for i in prefill if not _running(view, i)]
        for source, destination in zip(strained, bubbles):
            moves.append(Move(source, destination, "eased_to_prefill"))
        return moves


class HandoffRule:
    """Where held requests go. ``dispatch``: the run's dispatch rule, choosing among the
    instances given; ``block_size``: tokens per KV block (a request's demand)."""

    # the rule decides at a request's first token (a layer-wise copy streams to the instance
    # chosen then), not only at ticks
    decides_at_first_token: ClassVar[bool] = False

    def __init__(self, settings: PdConfig, dispatch: Dispatch, block_size: int) -> None:
        self.settings = settings
        self.dispatch = dispatch
        self.block_size = block_size
        self.adaptive: Optional[AdaptivePd] = AdaptivePd() if settings.adaptive else None

    # ------------------------------------------------------------------ roles
    def entry(self, view: ClusterView) -> tuple[list[int], bool]:
        """The instances new requests go to — prefill and mixed ones (every instance when none
        of those is left) — and whether adaptive PD sent them to decode instances instead,
        every prefill instance being busy."""
        takers = [i for i in view.instances if view.role_of[i] != "decode"]
        if not takers:
            return list(view.instances), False
        relief = self.adaptive.relief(view, takers) if self.adaptive is not None else None
        return (takers, False) if relief is None else (relief, True)

    def balancing(self, view: ClusterView) -> list[int]:
        """The instances balance migrations move requests between: all but prefill ones."""
        return [i for i in view.instances if view.role_of[i] != "prefill"]

    def decode_instances(self, view: ClusterView) -> list[int]:
        """Decode instances that may take a hand-off now (adaptive PD: not busy)."""
        decode = _with_role(view, view.instances, "decode")
        return decode if self.adaptive is None else self.adaptive.spare(view, decode)

    # ------------------------------------------------------------------ hand-offs
    def at_first_token(self, view: ClusterView, request: HeldRequest, room: int) -> list[Handoff]:
        """Decisions for a request held just now, at its first token (``room``: the most
        blocks an empty decode instance could take)."""
        return []

    def on_tick(self, view: ClusterView, held: Sequence[HeldRequest], busy: set[int], room: int) -> list[Handoff]:
        """Decisions for the held requests at a tick, in order (``busy``: instances a
        hand-off or move is in flight to or from). A request whose KV no decode instance could
        ever hold decodes where it is; the others are the rule's ``place``."""
        decisions, movable = [], []
        for request in held:
            if request.moving:
                continue
            if request.blocks <= room:
                movable.append(request)
            else:
                decisions.append(Handoff(request.id, None))
        return decisions + self.place(view, movable, busy)

    def place(self, view: ClusterView, movable: list[HeldRequest], busy: set[int]) -> list[Handoff]:
        """Decisions for the held requests some decode instance could hold when empty."""
        raise NotImplementedError

    def decide(self, request: HeldRequest, destination: Optional[int], room: int) -> list[Handoff]:
        """Hand ``request`` off to ``destination``; with none, it stays held, or decodes where
        it is under adaptive PD (or when no decode instance could ever hold it)."""
        fits = request.blocks <= room
        if destination is not None and fits:
            return [Handoff(request.id, destination)]
        return [Handoff(request.id, None)] if self.adaptive is not None or not fits else []

    def chosen_destination(self, view: ClusterView, request: HeldRequest) -> Optional[int]:
        """The decode instance the run's dispatch rule picks for the request's blocks, among
        those whose last report shows room for them (None: the request waits)."""
        reports = view.reports
        decode = [
            i
            for i in self.decode_instances(view)
            if i not in reports or reports[i].free_blocks - reports[i].watermark_blocks >= request.blocks
        ]
        if not decode:
            return None
        demand = blocks_for(request.tokens, self.block_size)
        return self.dispatch(DispatchInfo(request.tier, demand, request.tokens), decode)


HANDOFF_RULES: Registry[type[HandoffRule]] = Registry("hand-off", "pd.pairing")


class Immediate(HandoffRule):
    """Static pools: each request to the dispatch rule's decode instance, at its first token
    and, while it waits, at every tick."""

    decides_at_first_token: ClassVar[bool] = True

    def at_first_token(self, view: ClusterView, request: HeldRequest, room: int) -> list[Handoff]:
        return self.decide(request, self.chosen_destination(view, request), room)

    def place(self, view: ClusterView, movable: list[HeldRequest], busy: set[int]) -> list[Handoff]:
        room = math.inf  # every movable request fits some decode instance
        return [h for r in movable for h in self.decide(r, self.chosen_destination(view, r), room)]


HANDOFF_RULES.register("immediate")(Immediate)


class LlumnixPairing(HandoffRule):
    """Llumnix's PD pairing: sources by remaining steps, fewest first (each its earliest
    prefilled request); destinations without preempted requests, most steps first; zipped;
    one hand-off per instance."""

    def place(self, view: ClusterView, movable: list[HeldRequest], busy: set[int]) -> list[Handoff]:
        by_source: dict[int, HeldRequest] = {}
        for request in movable:  # the earliest prefilled of each source first
            if request.instance not in busy:
                by_source.setdefault(request.instance, request)
        reports = view.reports
        sources = sorted(by_source, key=lambda i: (_steps(view, i), i))
        destinations = sorted(
            (
                i
                for i in self.decode_instances(view)
                if i not in busy and (i not in reports or reports[i].num_preempted == 0)
            ),
            key=lambda i: (-_steps(view, i), i),
        )
        decisions = []
        if not destinations:  # none to take one now: what may decode where it is does
            decisions += [h for r in movable for h in self.decide(r, None, math.inf)]
        return decisions + [Handoff(by_source[s].id, d) for s, d in zip(sources, destinations)]


HANDOFF_RULES.register("llumnix")(LlumnixPairing)
