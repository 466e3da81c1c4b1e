"""Spot pools: the preemption notice, the grace period and its evacuation, the stop, and the
replacement (``pools[*].spot``, ``sim.config.spot_schema``).

At a notice (``sim.engine.preemptions`` says when) the instance stops taking requests: it
drains, as a scaled-in instance does, but its requests are this part's to move — the
scheduler's balancing pairs it as no source. Then, by the pool's ``evacuation``:

* ``live``: its queued requests (no KV yet) are dispatched again at once, and its running
  requests move one at a time by live migration — the largest KV first, or by tier — each to
  the instance with most free blocks that can hold it, until the grace deadline (one at a
  time: they leave through one instance's link);
* ``recompute``: every request on it is aborted and dispatched again to be computed from
  scratch, as a system without migration does; the instance holds nothing and stops then;
* ``none``: it serves on; what it still holds at the stop is lost.

At the deadline the instance stops as a failed instance does (``FaultInjector.fail_instance``):
what it still holds — an evacuation not yet committed included, which the handshake then
aborts — is lost, ended or retried from scratch (``on_failure``). An instance that emptied
before the deadline was removed as a drained one is. The replacement (``replacement``) serves
``cold_start`` seconds after the notice, billed from the notice (it is launched then).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping, NamedTuple, Optional, Protocol

import simpy

from sim.config import SimulationConfig
from sim.config.spot_schema import SpotConfig
from sim.engine.actions import ClusterActions
from sim.engine.faults import FaultInjector
from sim.engine.instances import InstanceRuntime
from sim.engine.migrations import MigrationLauncher
from sim.engine.preemptions import lifetime_seconds, read_availability_trace, trace_draws
from sim.engine.sections import result_section
from sim.instance.llumlet import Llumlet
from sim.instance.migration import EVACUATION
from sim.instance.request import Request, RequestState
from sim.instance.transfer_plan import MigrationMode, TransferPlan

NOTICE = "notice"  # the cloud's notice: detail is the pool
MOVED_OFF = "redispatched"  # a queued request sent elsewhere at a live notice
RECOMPUTED = "recomputed"  # a request aborted at a recompute notice, dispatched again from scratch
LOST = "lost"  # a request still on the instance at its stop
STOP = "stop"  # the instance stopped (detail: requests lost)
REPLACED = "replacement"  # a replacement serves (detail: its pool)


class SpotEvent(NamedTuple):
    time: float
    event: str
    instance: int
    detail: str | int = ""  # the pool, a request id, a count (by event)


class SpotPools:
    """The notices of every spot pool's instances and what follows them; acts on the cluster
    only through ``ClusterActions``, the launcher and the fault injector's failure."""

    def __init__(
        self,
        env: simpy.Environment,
        config: SimulationConfig,
        actions: ClusterActions,
        live: Mapping[int, InstanceRuntime],
        launcher: MigrationLauncher,
        faults: FaultInjector,
        poll: float,
        resolve: Callable[[str], Path],
    ) -> None:
        """``poll``: how often an evacuation waiting for a movable request or for room looks
        again (the load-report interval); ``resolve``: a trace key to its path."""
        self.env = env
        self.seed = config.seed
        self.actions = actions
        self.live = live
        self.launcher = launcher
        self.faults = faults
        self.poll = poll
        self.spot: dict[str, SpotConfig] = {p.name: p.spot for p in config.instance_pools() if p.spot is not None}
        on_demand = [p.name for p in config.instance_pools() if p.spot is None]
        self.on_demand = on_demand[0] if on_demand else None
        self.plan = TransferPlan(  # evacuations are live migrations with the run's stage limits
            mode=MigrationMode.LIVE,
            last_stage_blocks=config.migration.last_stage_blocks,
            max_stages=config.migration.max_stages,
            skip_cached=config.migration.skip_cached,
        )
        self.noticed: set[int] = set()  # instances under notice (their requests are ours to move)
        self.log: list[SpotEvent] = []
        for index, pool in enumerate(config.instance_pools()):
            source = pool.spot.preemption if pool.spot is not None else None
            if source is not None and source.trace is not None:
                removals = read_availability_trace(resolve(source.trace))  # a bad trace fails before the run
                env.process(self._replay(pool.name, removals, source.start, trace_draws(self.seed, index)))

    # ------------------------------------------------------------------ notices
    def started(self, instance_id: int, pool: str) -> None:
        """An instance started: one of a pool with a rate draws its notice's time."""
        spot = self.spot.get(pool)
        if spot is not None and spot.preemption.rate_per_hour is not None:
            after = lifetime_seconds(spot.preemption.rate_per_hour, self.seed, instance_id)
            self.env.process(self._notice_after(instance_id, after))

    def evacuating(self, instance_id: int) -> bool:
        """Whether the instance is under notice (no balance migration sources from it)."""
        return instance_id in self.noticed

    def _notice_after(self, instance_id: int, seconds: float):
        yield self.env.timeout(seconds)
        if self.actions.is_alive(instance_id) and instance_id not in self.noticed:
            self.notice(instance_id)

    def _replay(self, pool: str, removals, start: float, rng):
        """Each removal group of the trace: every live instance of the pool not yet under
        notice gets one with probability removed/live (its own draw, in id order)."""
        for removal in removals:
            if removal.time < start:
                continue
            yield self.env.timeout(removal.time - start - self.env.now)
            share = removal.removed / removal.live
            for instance_id in sorted(self.live):
                if self.actions.pool_of(instance_id) == pool and instance_id not in self.noticed:
                    if rng.random() < share:
                        self.notice(instance_id)

    def notice(self, instance_id: int) -> None:
        """The cloud takes the instance back ``grace`` seconds from now."""
        pool = self.actions.pool_of(instance_id)
        spot = self.spot[pool]
        self.noticed.add(instance_id)
        self.log.append(SpotEvent(self.env.now, NOTICE, instance_id, pool))
        if spot.replacement != "none":
            replacement = pool if spot.replacement == "spot" else self.on_demand
            assert replacement is not None  # the config requires an on-demand pool
            self.env.process(self._replace(replacement, spot.cold_start))
        if spot.evacuation == "recompute":
            for request in self.faults.fail_instance(instance_id, "retry"):
                self.log.append(SpotEvent(self.env.now, RECOMPUTED, instance_id, request.id))
            self.log.append(SpotEvent(self.env.now, STOP, instance_id, 0))
            return
        self.actions.drain(instance_id)
        if spot.evacuation == "live":
            self.env.process(self._evacuate(instance_id, self.env.now + spot.grace))
        self.env.process(self._stop(instance_id, spot.grace, spot.on_failure))

    # ------------------------------------------------------------------ the grace period
    def _evacuate(self, instance_id: int, deadline: float):
        """Move the instance's requests away, one at a time, until it is empty, stopped, or
        the deadline passes."""
        env = self.env
        while env.now < deadline and instance_id in self.live:
            source = self.live[instance_id].llumlet
            for queued in source.take_queued():
                self.log.append(SpotEvent(env.now, MOVED_OFF, instance_id, queued.id))
                self.actions.dispatch(queued)
            if source.is_empty:
                return  # removed as a drained instance is, at the next tick
            request = self._next_to_move(source)
            destination = None if request is None else self._room_for(request, source)
            if request is None or destination is None:  # a prefill still running, or no room yet
                yield env.timeout(min(self.poll, deadline - env.now))
                continue
            ended = env.event()
            record = self.launcher.start(request, source, destination, self.plan, kind=EVACUATION, ended=ended)
            yield ended
            if record.end == record.start and env.now < deadline:  # refused at once: not again this instant
                yield env.timeout(min(self.poll, deadline - env.now))

    def _next_to_move(self, source: Llumlet) -> Optional[Request]:
        """The running request that moves next: most KV blocks first (``tier``: most critical
        tier first, then most blocks); ties by id."""
        spot = self.spot[self.actions.pool_of(source.id)]
        held = source.ledger.held
        movable = [r for r in source.batches.running if r.migration is None and r.state is RequestState.RUNNING]
        if not movable:
            return None
        if spot.order == "tier":
            return min(movable, key=lambda r: (r.tier, -held(r), r.id))
        return min(movable, key=lambda r: (-held(r), r.id))

    def _room_for(self, request: Request, source: Llumlet) -> Optional[Llumlet]:
        """The serving instance with most free blocks above its watermark, if that holds the
        request's blocks and one more (it decodes on while it moves); ties by id."""
        need = source.ledger.held(request) + 1
        best: Optional[Llumlet] = None
        best_free = need - 1
        for runtime in self.live.values():
            llumlet = runtime.llumlet
            if llumlet is source or llumlet.status.draining or llumlet.status.failed:
                continue
            free = llumlet.ledger.free - llumlet.limits.watermark_blocks
            if free > best_free:
                best, best_free = llumlet, free
        return best

    def _stop(self, instance_id: int, grace: float, on_failure: str):
        yield self.env.timeout(grace)
        lost = self.faults.fail_instance(instance_id, on_failure) if self.actions.is_alive(instance_id) else []
        for request in lost:
            self.log.append(SpotEvent(self.env.now, LOST, instance_id, request.id))
        self.log.append(SpotEvent(self.env.now, STOP, instance_id, len(lost)))

    def _replace(self, pool: str, cold_start: float):
        yield self.env.timeout(cold_start)
        new_id = self.actions.add_instance(pool, billed_from=self.env.now - cold_start)
        self.log.append(SpotEvent(self.env.now, REPLACED, new_id, pool))


class _Spot(Protocol):
    spot: Optional[SpotPools]


def _spot_log(run: _Spot) -> Optional[list[SpotEvent]]:
    return None if run.spot is None else run.spot.log


# every notice, request moved off or recomputed, loss, stop and replacement, when (None: no
# spot pool)
SPOT_LOG = result_section("spot_log", _spot_log)
