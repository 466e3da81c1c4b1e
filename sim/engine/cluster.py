"""The instances of a run and what is done to them: started from a pool (the initial cluster,
a scale-out, a restart), drained and undrained, failed, removed once drained and empty, and
woken when work reaches an idle one. Scaling and faults reach these through ``ClusterActions``
(``sim.engine.actions``); the scheduler hears of each change here.
"""

from __future__ import annotations

from typing import Callable, Optional

import simpy

from sim.cluster import GlobalScheduler
from sim.cluster.slo_predictor import InstanceModel
from sim.engine.instances import InstanceRuntime, StepLog
from sim.engine.setup import InstancePool
from sim.instance.endpoint import MigrationEndpoint
from sim.instance.former_io import BatchEvents, Role
from sim.instance.llumlet import Llumlet
from sim.instance.load import LoadReport
from sim.instance.request import Request


class Cluster:
    """Every instance ever started (``instances``), those not stopped (``live``) and those
    draining; ``live`` is given (empty) so that what counts the live instances can hold it
    before the cluster exists. ``events_for(instance_id, role)``: where a new instance's batch former reports;
    ``role_of(role)``: what a pool's role asks of its former; ``started(instance_id, pool)``:
    who hears of each instance started."""

    def __init__(
        self,
        env: simpy.Environment,
        clock: Callable[[], float],
        pools: dict[str, InstancePool],
        scheduler: GlobalScheduler,
        steps: StepLog,
        events_for: Callable[[int, str], BatchEvents],
        role_of: Callable[[str], Role],
        local_tiers: bool,
        colocated_slowdown: float,
        live: dict[int, InstanceRuntime],
        started: Callable[[int, str], None] = lambda instance_id, pool: None,
    ) -> None:
        self.env = env
        self.clock = clock
        self.pools = pools
        self.scheduler = scheduler
        self.steps = steps
        self.events_for = events_for
        self.role_of = role_of
        self.local_tiers = local_tiers
        self.colocated_slowdown = colocated_slowdown
        self.instances: dict[int, InstanceRuntime] = {}  # every instance ever started
        self.live = live  # those not stopped (an empty dict, shared with per-step reports' cadence)
        self.draining: set[int] = set()  # live instances draining (the tick checks only these)
        self.started = started  # told of every instance started, with its pool (spot pools' notices)

    @property
    def pool_names(self) -> list[str]:
        return list(self.pools)

    def pool_of(self, instance_id: int) -> str:
        return self.instances[instance_id].pool.name

    def is_alive(self, instance_id: int) -> bool:
        return instance_id in self.live

    def reports(self) -> dict[int, LoadReport]:
        """Every live instance's report now."""
        return {i: runtime.llumlet.reporter.report() for i, runtime in self.live.items()}

    # ------------------------------------------------------------------ instances
    def add_instance(self, pool_name: str, billed_from: Optional[float] = None, reported: bool = True) -> int:
        """Start a new instance of a pool (initial cluster, scale-out, restart) and let it
        receive work. A new instance is known to the scheduler as empty (``reported``), as
        the artifact records a scaled-out instance with an empty report until its first step."""
        instance_id = len(self.instances)
        pool = self.pools[pool_name]
        role = pool.config.role
        llumlet = Llumlet(
            instance_id,
            pool.limits,
            pool.model,
            clock=self.clock,
            events=self.events_for(instance_id, role),
            headroom_blocks=pool.headroom,
            priority=self.local_tiers,
            colocated_slowdown=self.colocated_slowdown,
            batch_former=pool.batch_former,
            ledger=pool.ledger,
            role=self.role_of(role),
        )
        started = self.env.now if billed_from is None else billed_from
        runtime = InstanceRuntime(llumlet=llumlet, pool=pool, started_at=started)
        self.instances[instance_id] = runtime
        self.live[instance_id] = runtime
        runtime.start(self.env, self.steps)
        self.scheduler.add_instance(
            instance_id,
            llumlet.reporter.report() if reported else None,
            InstanceModel(pool.model, pool.limits),
            pool.name,
            role,
        )
        self.started(instance_id, pool.name)
        return instance_id

    def drain(self, instance_id: int) -> None:
        self.steps.cut(instance_id)  # its reports say draining from its next step
        self.instances[instance_id].llumlet.status.drain()
        self.draining.add(instance_id)
        self.scheduler.remove_instance(instance_id)

    def undrain(self, instance_id: int) -> None:
        runtime = self.instances[instance_id]
        self.steps.cut(instance_id)
        runtime.llumlet.status.undrain()
        self.draining.discard(instance_id)
        pool = runtime.pool
        self.scheduler.add_instance(instance_id, runtime.llumlet.reporter.report(), pool=pool.name, role=pool.config.role)

    def remove_drained(self) -> list[int]:
        """Remove draining instances that hold nothing any more and are no migration's
        endpoint (a migration created this instant counts: it took both ends at once; INV-5
        commit-or-abort)."""
        removed: list[int] = []
        if not self.draining:
            return removed  # every tick asks; mostly nothing drains
        for runtime in list(self.live.values()):
            llumlet = runtime.llumlet
            if llumlet.status.draining and llumlet.is_empty and not llumlet.endpoint.migrating:
                self._stop_instance(llumlet.id)
                removed.append(llumlet.id)
        return removed

    def fail(self, instance_id: int) -> list[Request]:
        self.steps.cut(instance_id)  # what it loses is what it holds now
        lost = self.instances[instance_id].llumlet.fail()
        self._stop_instance(instance_id)
        return lost

    def _stop_instance(self, instance_id: int) -> None:
        """The instance leaves the cluster (drained, or failed): no reports, no dispatch."""
        del self.live[instance_id]
        self.draining.discard(instance_id)
        self.scheduler.remove_instance(instance_id)
        self.instances[instance_id].stop(self.env.now)

    # ------------------------------------------------------------------ work arriving
    def enqueue(self, runtime: InstanceRuntime, request: Request) -> None:
        """A dispatched request joins the instance's queue, and an idle instance wakes."""
        self.steps.cut(runtime.llumlet.id)  # its next step may admit it
        runtime.llumlet.enqueue(request)
        self.wake(runtime)

    def wake(self, runtime: InstanceRuntime) -> None:
        """Resume an idle instance's step loop after work arrived (its idle stretch ends
        now, before any report of the work that woke it)."""
        if runtime.wake is not None and not runtime.wake.triggered:
            self.end_idle_stretch(runtime.llumlet.id)
            runtime.wake.succeed()

    def wake_endpoint(self, endpoint: MigrationEndpoint) -> None:
        self.wake(self.instances[endpoint.id])

    def end_idle_stretch(self, instance_id: int) -> None:
        """Work is on its way to the instance (a request, or a migration that will reserve
        blocks on it without waking it): it is no longer idle (INV-4 idle-view)."""
        if self.steps.idle_watch is not None:
            self.steps.idle_watch.ended(instance_id, self.env.now)
