"""Prefill/decode disaggregation: the engine's side of handing a request's KV from the prefill
instance that produced its first token to a decode instance.

Roles come from the pools (``pools[*].role``). Mixed instances prefill and decode, as vLLM
does. Prefill instances take every new request; each request with tokens left after its
prefill there waits for a hand-off, held out of the batch with its blocks (``pd.copy:
blocking``) or decoding there (``live``). Decode instances take only hand-offs, and
balance migrations among themselves.

A hand-off is a migration of kind ``handoff`` (``sim.instance.migration``). Its
destination reserves the request's blocks before each copy (refused below its watermark).
The copy crosses the link between the two instances (``TransferModel.stage_time``: a fixed
latency plus bytes over bandwidth; bytes = blocks × the pool's block bytes), and both ends
run co-located slower meanwhile. Concurrent hand-offs through one instance share its link by
taking turns, first come first served (``KvTransfer`` links). It
commits or aborts as any migration does (INV-5 commit-or-abort). An aborted hand-off leaves
the request where it was, and a later tick tries again.

Latency composition, which follows from this: the first token is the prefill instance's.
The wait for a hand-off, the copy and the wait for the decode instance's next iteration
all fall into the second token's time. Nothing is counted twice, because a request's times
are stamped once, by the events of its life (``sim.instance.request``). Requests of mixed
pools never meet any of it.

The three ways to run it (``pd`` in the config, ``sim.config.schema.PdConfig``):
* static pools: ``pairing: immediate``, the decode instance chosen at the first token by
  the run's dispatch rule (DistServe, Splitwise);
* Llumnix v0: ``pairing: llumnix``. Each tick pairs prefill instances with requests
  waiting, most loaded first, with decode instances that have no preempted request,
  freest first, one hand-off in flight per instance. The load is remaining steps: free
  blocks above the watermark per running request (AlibabaPAI/llumnix main 24220fb,
  ``migration_scheduler.py`` 162-170, ``migration_policy.py`` 76-86,
  ``load_computation.py`` 89-120);
* Llumnix's adaptive PD (``adaptive: true``, its ``dispatch_scheduler.py`` 87-105). When
  every prefill instance's KV load (used plus queued blocks over capacity) is full, a new
  request goes to a decode instance that is not, and is served there end to end. When no
  decode instance has ``BUSY_REMAINING_STEPS`` per request left, a prefilled request
  decodes on its prefill instance. Such a request is handed off at the first tick at which
  a decode instance is no longer busy. Meanwhile decoding is packed onto fewer prefill
  instances, and a busy decode instance sheds requests to prefill instances running nothing
  (``_adaptive_moves``). Llumnix's code re-roles no instance: these moves are its adaptivity.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable, Mapping, Optional

from sim.cluster import DispatchInfo, GlobalScheduler
from sim.config.schema import PdConfig
from sim.engine.instances import InstanceRuntime
from sim.engine.migrations import MigrationLauncher
from sim.instance.endpoint import MigrationEndpoint
from sim.instance.kv_transfer import Link
from sim.instance.limits import blocks_for
from sim.instance.llumlet import Llumlet
from sim.instance.load import LoadReport, artifact_migration_load, block_load
from sim.instance.migration import ADAPTIVE, HANDOFF, MigrationMode, MigrationOutcome, MigrationRecord, MigrationSettings
from sim.instance.request import Request, RequestState

# Llumnix's busy thresholds (llumnix/constants.py lines 107-109 at 24220fb): a prefill
# instance is busy at a KV load of 1.0, a decode instance below 10 remaining steps, and a
# prefill instance decoding more than 128 requests is compute-bound
BUSY_KV_LOAD = 1.0
BUSY_REMAINING_STEPS = 10.0
DECODE_COMPUTE_BOUND_BATCH = 128

# what adaptive PD did in the other role's place (the summary's pd.role_swaps)
SWAPS = ("prefilled_on_decode", "decoded_on_prefill", "aggregated_on_prefill", "eased_to_prefill")


def remaining_steps(report: LoadReport) -> float:
    """Llumnix's ``remaining_steps``: decode steps the free blocks above the watermark last
    each running request (infinite on an instance running nothing)."""
    return -artifact_migration_load(report, load_control=False)


class Handoffs:
    """Which instance plays which role, which requests wait for their hand-off, and the
    hand-offs started; the copies themselves are the launcher's migrations."""

    def __init__(
        self,
        settings: PdConfig,
        stages: MigrationSettings,
        launcher: MigrationLauncher,
        scheduler: GlobalScheduler,
        live: Mapping[int, InstanceRuntime],
        block_size: int,
        wake: Callable[[MigrationEndpoint], None],
        candidate: Callable[[Llumlet], Optional[Request]],
    ) -> None:
        self.settings = settings
        # blocking: an aborted hand-off leaves its request held; live: decoding, as before
        staged = settings.copy == "live"
        self.copy = replace(
            stages, mode=MigrationMode.LIVE if staged else MigrationMode.BLOCKING, resume_on_abort=staged
        )
        self.launcher = launcher
        self.scheduler = scheduler
        self.live = live
        self.block_size = block_size
        self.wake = wake  # an idle instance's step loop, when a request it holds may decode now
        self.candidate = candidate  # the running request a move takes (the run's candidate rule)
        self.roles: dict[int, str] = {}
        self.waiting: dict[Request, None] = {}  # prefilled on a prefill instance, not handed off
        self._in_flight: list[MigrationRecord] = []
        self.links: dict[int, Link] = {}  # each instance's link, made at its first hand-off
        self.paused = False  # the global scheduler is down: nobody chooses a decode instance
        self._room = 0  # the largest empty decode instance's room (blocks), found per tick
        self.swaps = dict.fromkeys(SWAPS, 0)  # adaptive PD: work done in the other role's place
        self._eased: list[tuple[MigrationRecord, Request]] = []  # decode work moving to a prefill instance

    # ------------------------------------------------------------------ roles
    def added(self, llumlet: Llumlet, role: str) -> None:
        """A new instance of a pool with ``role``: a prefill instance reports its prefills."""
        self.roles[llumlet.id] = role
        if role == "prefill":
            llumlet.batches.prefilled_here = self.prefilled
            llumlet.batches.holds_prefilled = self.settings.copy == "blocking"

    def entry(self, instances: list[int]) -> list[int]:
        """The instances new requests go to: prefill and mixed ones (every instance when
        none of those is left; with adaptive PD, decode instances when every prefill
        instance is busy)."""
        takers = [i for i in instances if self.roles[i] != "decode"]
        if not takers:
            return instances
        if self.settings.adaptive and all(self._busy_prefill(i) for i in takers):
            relief = [i for i in instances if self.roles[i] == "decode" and not self._busy_prefill(i)]
            if relief:
                self.swaps["prefilled_on_decode"] += 1
                return relief
        return takers

    def balancing(self, instances: list[int]) -> list[int]:
        """The instances balance migrations move requests between: all but prefill ones."""
        return [i for i in instances if self.roles[i] != "prefill"]

    def is_prefill(self, instance_id: int) -> bool:
        return self.roles[instance_id] == "prefill"

    # ------------------------------------------------------------------ hand-offs
    def prefilled(self, request: Request, prefill_seconds: float) -> None:
        """A prefill instance's prefill gave ``request`` its first token (or its recompute
        after a preemption) after ``prefill_seconds``, and it has tokens left: it waits for its
        hand-off (layer-wise: one at once, already under way for all but the last layer)."""
        self.waiting[request] = None
        if self.settings.pairing == "immediate" and not self.paused:
            self._room = self._decode_room()
            head_start = (0.0, 0.0)
            if self.settings.layerwise:
                layers = getattr(self.live[request.instance].pool.model, "num_layers", 1)
                head_start = (prefill_seconds, 1.0 / layers)
            self._hand_off(request, self._chosen_destination(request), head_start)

    def on_tick(self) -> None:
        """Hand off what waits: each waiting request again (``immediate``), or one per pair
        of the tick's pairing (``llumnix``); with adaptive PD, its moves first."""
        self._in_flight = [r for r in self._in_flight if r.outcome is MigrationOutcome.IN_FLIGHT]
        if self.settings.adaptive:
            self._adaptive_moves()
        if not self.waiting:
            return
        waiting = [r for r in self.waiting if self._still_waits(r)]
        self.waiting = dict.fromkeys(waiting)
        self._room = self._decode_room()
        movable = []
        for request in waiting:
            if request.migration is not None:
                continue
            if self._fits_a_decode_instance(request):
                movable.append(request)
            else:
                self._hand_off(request, None)  # it decodes where it is
        if self.settings.pairing == "immediate":
            for request in movable:
                self._hand_off(request, self._chosen_destination(request))
            return
        self._pair_llumnix(movable)

    def _adaptive_moves(self) -> None:
        """Llumnix's adaptive PD migrations (``migration_scheduler.py`` 250-271 at 24220fb;
        requests decoding on prefill instances go to a decode instance that is not busy as
        hand-offs, above). With no decode instance that has room to spare, decoding on
        prefill instances is packed onto fewer of them (``AGGREGATE_DYNAMIC_P``: by id, the
        lowest half to the highest); and each busy decode instance sheds a request to a
        prefill instance running nothing (``EASE_D_WITH_P_BUBBLE``). One move per instance."""
        for record, request in self._eased:  # decoding on a prefill instance now: handed back later
            if record.outcome is MigrationOutcome.COMMITTED and not request.done:
                self.waiting[request] = None
        self._eased = [(record, request) for record, request in self._eased if record.outcome is MigrationOutcome.IN_FLIGHT]
        reports = self.scheduler.view.reports
        busy = {end for record in self._in_flight for end in (record.source, record.destination)}
        free = [i for i in self.scheduler.instances if i not in busy]
        decode = [i for i in free if self.roles[i] == "decode"]
        prefill = [i for i in free if self.roles[i] == "prefill"]
        if not any(self._steps(reports, i) >= BUSY_REMAINING_STEPS for i in decode):
            decoding = [i for i in prefill if 0 < self._running(reports, i) <= DECODE_COMPUTE_BOUND_BATCH]
            for source, destination in list(zip(decoding, reversed(decoding)))[: len(decoding) // 2]:
                self._move(source, destination, "aggregated_on_prefill")
        strained = sorted(
            (i for i in decode if self._steps(reports, i) < BUSY_REMAINING_STEPS),
            key=lambda i: (self._steps(reports, i), i),
        )
        bubbles = [i for i in prefill if not self._running(reports, i)]
        for source, destination in zip(strained, bubbles):
            self._move(source, destination, "eased_to_prefill")

    def _move(self, source: int, destination: int, swap: str) -> None:
        """Move one running request (the run's candidate rule) from ``source`` to ``destination``."""
        request = self.candidate(self.live[source].llumlet)
        if request is None:
            return
        record = self.launcher.start(request, self.live[source].llumlet, self.live[destination].llumlet, kind=ADAPTIVE)
        self._in_flight.append(record)
        self.swaps[swap] += 1
        if swap == "eased_to_prefill":
            self._eased.append((record, request))

    def _running(self, reports: Mapping[int, LoadReport], instance_id: int) -> int:
        report = reports.get(instance_id)
        return 0 if report is None else report.num_running

    def _still_waits(self, request: Request) -> bool:
        """On a live prefill instance, holding its KV, not ended."""
        return (
            not request.done
            and request.instance in self.live
            and self.roles[request.instance] == "prefill"
            and request.state is not RequestState.QUEUED
        )

    def _pair_llumnix(self, waiting: list[Request]) -> None:
        """Llumnix's PD pairing of ``waiting`` (not moving, fitting a decode instance):
        sources by remaining steps, fewest first; destinations without preempted requests,
        most first; zipped; one hand-off per instance."""
        busy = {end for record in self._in_flight for end in (record.source, record.destination)}
        by_source: dict[int, Request] = {}
        for request in waiting:  # the earliest prefilled of each source first
            if request.instance not in busy:
                by_source.setdefault(request.instance, request)
        reports = self.scheduler.view.reports
        sources = sorted(by_source, key=lambda i: (self._steps(reports, i), i))
        destinations = sorted(
            (
                i
                for i in self._decode_instances()
                if i not in busy and (i not in reports or reports[i].num_preempted == 0)
            ),
            key=lambda i: (-self._steps(reports, i), i),
        )
        if not destinations:  # none to take one now: what may decode where it is does
            for request in waiting:
                self._hand_off(request, None)
        for source, destination in zip(sources, destinations):
            self._hand_off(by_source[source], destination)

    def _chosen_destination(self, request: Request) -> Optional[int]:
        """The decode instance the run's dispatch rule picks for the request's blocks, among
        those whose last report shows room for them (none: the request waits, as a decode
        instance of DistServe pulls a KV cache only when it has room)."""
        reports = self.scheduler.view.reports
        held = self.live[request.instance].llumlet.ledger.held(request)
        decode = [
            i
            for i in self._decode_instances()
            if i not in reports or reports[i].free_blocks - reports[i].watermark_blocks >= held
        ]
        if not decode:
            return None
        demand = blocks_for(request.seq_len, self.block_size)
        return self.scheduler.dispatch(DispatchInfo(request.tier, demand, request.seq_len), decode)

    def _decode_instances(self) -> list[int]:
        """Decode instances that may take a hand-off now (adaptive PD: not busy)."""
        decode = [i for i in self.scheduler.instances if self.roles[i] == "decode"]
        if self.settings.adaptive:
            reports = self.scheduler.view.reports
            decode = [i for i in decode if self._steps(reports, i) >= BUSY_REMAINING_STEPS]
        return decode

    def _hand_off(
        self, request: Request, destination: Optional[int], head_start: tuple[float, float] = (0.0, 0.0)
    ) -> None:
        """Start the request's hand-off to ``destination``. With none, it decodes where it
        is meanwhile under adaptive PD, or when no decode instance is left at all (failed:
        Llumnix's requests would hang); otherwise it stays held. A request whose KV no decode
        instance could ever take decodes where it is."""
        source = self.live[request.instance].llumlet
        batches = source.batches
        if request.migration is not None or (request not in batches.running and request not in batches.suspended):
            return  # moving already, or joining the batch from the next step: a later tick hands it off
        fits = self._fits_a_decode_instance(request)
        if destination is None or not fits:
            if request in batches.suspended and request.migration is None and (self.settings.adaptive or not fits):
                source.endpoint.resume(request)
                self.wake(source.endpoint)
                self.swaps["decoded_on_prefill"] += 1
            return
        record = self.launcher.start(
            request, source, self.live[destination].llumlet, self.copy, kind=HANDOFF,
            links=[self._link(i) for i in sorted((source.id, destination))],
            head_start=head_start,
        )
        self._in_flight.append(record)

    def _decode_room(self) -> int:
        """The most blocks a live decode instance could take when empty (above its
        watermark); 0 with none left."""
        return max(
            (
                runtime.llumlet.limits.capacity_blocks - runtime.llumlet.limits.watermark_blocks
                for i, runtime in self.live.items()
                if self.roles[i] == "decode"
            ),
            default=0,
        )

    def _fits_a_decode_instance(self, request: Request) -> bool:
        """Some live decode instance could take the request's blocks when empty (``_room``:
        found once per tick or prefill, not per request)."""
        return self.live[request.instance].llumlet.ledger.held(request) <= self._room

    def _link(self, instance_id: int) -> Link:
        """The instance's link for hand-offs: one copy at a time through it (Llumnix asserts
        a migration concurrency of 1, ``arg_utils.py``; ``max_migration_concurrency``)."""
        link = self.links.get(instance_id)
        if link is None:
            link = self.links[instance_id] = Link(self.launcher.env)
        return link

    def _steps(self, reports: Mapping[int, LoadReport], instance_id: int) -> float:
        report = reports.get(instance_id)
        return math.inf if report is None else remaining_steps(report)

    def _busy_prefill(self, instance_id: int) -> bool:
        report = self.scheduler.view.reports.get(instance_id)
        return report is not None and block_load(report) >= BUSY_KV_LOAD
