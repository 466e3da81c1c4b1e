"""Sending each arriving request to an instance: the global scheduler's choice among the
instances that may take it, or, while the scheduler is down, the frontends' own fallback.

Which instances may take a request is decided elsewhere and only gathered here: the hand-off
rule's entry instances with pool roles (``sim.cluster.handoff``), the instances whose pool can
ever prefill it when pools' limits differ; what a cache-aware rule needs is each caching
instance's cached prefix of the request.
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

from sim.cluster import DispatchInfo, FrontendFallback, GlobalScheduler
from sim.engine.handoffs import Handoffs
from sim.engine.instances import InstanceRuntime
from sim.instance.limits import blocks_for
from sim.instance.load import LoadReport
from sim.instance.request import Request

ABORT_NO_INSTANCE = "no_live_instance"


class Dispatcher:
    """Dispatch, and whether the global scheduler is up (``fallback_kind`` None) or the
    frontends dispatch by themselves meanwhile."""

    def __init__(
        self,
        scheduler: GlobalScheduler,
        instances: Mapping[int, InstanceRuntime],
        handoffs: Optional[Handoffs],
        fallback: FrontendFallback,
        block_size: int,
        limits_differ: bool,
        enqueue: Callable[[InstanceRuntime, Request], None],
        end_request: Callable[[Request, str], None],
        settle: Callable[[], None] = lambda: None,
    ) -> None:
        self.scheduler = scheduler
        self.instances = instances
        self.handoffs = handoffs
        self.fallback = fallback
        self.block_size = block_size  # every pool's (the config checks it)
        # pools of other limits: a request goes only where some instance can ever prefill it
        self.limits_differ = limits_differ
        self.enqueue = enqueue
        self.end_request = end_request
        self.settle = settle  # instances' reports and caches as they are now (decode stretches)
        self.fallback_kind: Optional[str] = None  # set while the global scheduler is down
        self._reads_cache = scheduler.dispatch_rule.reads_cache

    @property
    def scheduler_up(self) -> bool:
        return self.fallback_kind is None

    def arrive(self, group: Sequence[Request]) -> None:
        """Requests arriving at one instant, in the scheduler's order."""
        for request in self.scheduler.order(group):
            self.dispatch(request)

    def dispatch(self, request: Request) -> None:
        """Send a request to an instance: the global scheduler's choice, or the frontends'
        fallback while the scheduler is down."""
        instances: Sequence[int] = self.scheduler.instances
        if not instances:
            self.end_request(request, ABORT_NO_INSTANCE)
            return
        among = None  # the instances to choose from, when not all
        if self.handoffs is not None:  # prefill and mixed instances take new requests
            entry = self.handoffs.entry()
            if len(entry) < len(instances):
                instances = among = entry
        if self.limits_differ:
            among = self._able_to_serve(request.seq_len, instances) or among
        if self.fallback_kind is None:
            self.settle()
            demand = blocks_for(request.seq_len, self.block_size)
            cached = self._cache_locality(request, among or instances) if self._reads_cache else None
            target = self.scheduler.dispatch(DispatchInfo(request.tier, demand, request.seq_len, cached), among)
        else:
            target = self.fallback.choose(among or instances, self.fallback_kind)
        self.enqueue(self.instances[target], request)

    def _cache_locality(self, request: Request, instances: Sequence[int]) -> dict[int, int]:
        """Each caching instance's leading blocks of ``request`` cached there (what
        instances publish of their caches, as vLLM's KV events do)."""
        locality = {}
        for instance_id in instances:
            ledger = self.instances[instance_id].llumlet.ledger
            if ledger.shares_blocks:
                locality[instance_id] = ledger.cached_tokens(request) // ledger.block_size
        return locality

    def _able_to_serve(self, tokens: int, instances: Sequence[int]) -> Optional[list[int]]:
        """The dispatchable instances whose pool can ever prefill ``tokens``, when only some
        can (None: all can, or none, and the request goes as it would in one pool)."""
        able = [i for i in instances if self.instances[i].pool.limits.can_prefill(tokens)]
        return able if 0 < len(able) < len(instances) else None

    def scheduler_down(self, fallback: Optional[str], reports: Callable[[], dict[int, LoadReport]]) -> None:
        """``fallback``: the global scheduler goes away (pairs end) and frontends dispatch by
        it; None: it comes back and schedules from fresh ``reports()``."""
        if fallback is not None:
            if self.fallback_kind is None:
                self.scheduler.suspend()
            self.fallback_kind = fallback
        elif self.fallback_kind is not None:
            self.fallback_kind = None
            self.scheduler.resume(reports())
