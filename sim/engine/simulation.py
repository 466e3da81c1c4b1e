"""One run, as tests, benchmarks and the sweep see it: built in one pass by
``sim.engine.builder``, stepped (``run_until``, ``at``, ``migrate``, ``fail_instance``),
inspected (``sim.engine.inspection``) and finished with ``run()``.

The run's roles are its parts: the kernel advances time and runs the arrivals and the tick
(``sim.engine.kernel``); the cluster starts, drains, fails and removes instances
(``sim.engine.cluster``); the dispatcher sends each request to an instance
(``sim.engine.dispatcher``); scaling and faults act through ``ClusterActions``
(``sim.engine.actions``); migrations, hand-offs and balance migrations move requests
(``sim.engine.migrations``, ``handoffs``, ``balancing``). Policy lives in ``sim.cluster``
and ``sim.instance``. This class only holds the parts and offers their small public API.
"""

from __future__ import annotations

import os
import time as wallclock
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from sim.cluster import GlobalScheduler
from sim.config import PoolConfig, SimulationConfig
from sim.engine import inspection
from sim.engine.builder import build, cluster_idle, quiet_until, tick_jobs, tick_slept
from sim.engine.instances import InstanceRuntime, StretchTie
from sim.engine.result import LoadSample, SimulationResult
from sim.engine.watchdog import Watchdog, stall_span
from sim.instance.kv_transfer import TransferModel
from sim.instance.limits import BatchTimer
from sim.instance.llumlet import Llumlet
from sim.instance.migration import MigrationRecord
from sim.instance.request import Request

if TYPE_CHECKING:
    from sim.workload.build import Workload

# the environment variable that makes every step its own event (``decode_stretches`` off):
# the slow path the fast one is compared with
STEP_BY_STEP = "LLUMSIM_STEP_BY_STEP"


class Simulation:
    """One run. ``replica_model`` (every pool's), ``workload``, ``transfer`` and ``scheduler``
    may be injected (tests, benchmarks), and ``load_pool_model`` builds each pool's replica
    model otherwise (a sweep worker's cache); ``check_every_step`` verifies block
    conservation on an instance after every iteration. ``decode_stretches``: a quiet batch's
    decode steps are formed in one go rather than each as an event (``sim.engine.instances``;
    the same requests either way); None takes it from the environment, off where
    ``LLUMSIM_STEP_BY_STEP=1``."""

    def __init__(
        self,
        config: SimulationConfig,
        replica_model: BatchTimer | None = None,
        workload: "Workload | None" = None,
        root: Path | None = None,
        transfer: TransferModel | None = None,
        record_batches: bool = False,
        scheduler: GlobalScheduler | None = None,
        check_every_step: bool = False,
        load_pool_model: Callable[[PoolConfig, str], BatchTimer] | None = None,
        decode_stretches: bool | None = None,
    ) -> None:
        if decode_stretches is None:
            decode_stretches = os.environ.get(STEP_BY_STEP) != "1"
        # what a run made again step by step is built from (a scheduler passed in keeps state:
        # such a run steps from the start)
        self._arguments = (config, replica_model, workload, root, transfer, record_batches, scheduler,
                           check_every_step, load_pool_model)
        self._build(decode_stretches and scheduler is None)

    def _build(self, decode_stretches: bool) -> None:
        self.parts = build(*self._arguments, decode_stretches)
        config = self.parts.config
        self.watchdog = Watchdog(
            self.env,
            stall_span(config),
            lambda: inspection.progress(self),
            lambda: inspection.pending(self),
            lambda: inspection.describe_stuck(self),
        )
        self._started = False

    # ------------------------------------------------------------------ what the run holds
    def __getattr__(self, name: str) -> Any:
        """The run's parts by name — ``config``, ``env``, ``scheduler``, ``pools``, ``kernel``,
        ``cluster``, ``migrations``, ``handoffs``, ``steps``, ``scaler``, ``faults``…
        (``sim.engine.builder.Parts``) — as inspection and tests read them."""
        if name == "parts":  # not built (yet): no parts to look in
            raise AttributeError(name)
        return getattr(self.parts, name)

    @property
    def now(self) -> float:
        return self.env.now

    @property
    def instances(self) -> dict[int, InstanceRuntime]:
        """Every instance ever started."""
        return self.cluster.instances

    @property
    def live(self) -> dict[int, InstanceRuntime]:
        """Instances alive now (serving or draining)."""
        return self.cluster.live

    @property
    def live_ids(self) -> list[int]:
        """Instances alive now, in id order."""
        return list(self.cluster.live)

    @property
    def requests(self) -> list[Request]:
        """The requests that have arrived."""
        return self.kernel.requests

    @property
    def load_samples(self) -> list[LoadSample]:
        return self.parts.sampler.samples

    @property
    def fallback_kind(self) -> Optional[str]:
        """How frontends dispatch while the global scheduler is down (None: it is up)."""
        return self.dispatcher.fallback_kind

    @property
    def migration_records(self) -> list[MigrationRecord]:
        return self.migrations.records

    def llumlet(self, instance_id: int) -> Llumlet:
        return self.cluster.instances[instance_id].llumlet

    def pool_of(self, instance_id: int) -> str:
        return self.cluster.pool_of(instance_id)

    def is_alive(self, instance_id: int) -> bool:
        return self.cluster.is_alive(instance_id)

    def request(self, request_id: int) -> Request:
        """A request that has arrived (requests are created at their arrival; a later turn
        of a conversation arrives after requests of higher id)."""
        requests = self.kernel.requests
        if request_id < len(requests) and requests[request_id].id == request_id:
            return requests[request_id]
        for request in requests:
            if request.id == request_id:
                return request
        raise KeyError(f"request {request_id} has not arrived")

    # ------------------------------------------------------------------ stepping (tests)
    def add_instance(self, pool_name: str, billed_from: Optional[float] = None) -> int:
        return self.parts.actions.add_instance(pool_name, billed_from)

    def drain(self, instance_id: int) -> None:
        self.parts.actions.drain(instance_id)

    def undrain(self, instance_id: int) -> None:
        self.parts.actions.undrain(instance_id)

    def dispatch(self, request: Request) -> None:
        self.parts.actions.dispatch(request)

    def migrate(self, request_id: int, source: int, destination: int) -> MigrationRecord:
        """Start migrating a running request now, whatever the scheduler would do."""
        return self.migrations.start(self.request(request_id), self.llumlet(source), self.llumlet(destination))

    def fail_instance(self, instance_id: int, on_failure: str = "abort") -> list[Request]:
        """An instance failure now, with the ``instance_failure`` fault's semantics."""
        return self.faults.fail_instance(instance_id, on_failure)

    def at(self, when: float, action: Callable[[], object]) -> None:
        """Call ``action()`` at simulated time ``when`` (after the events already due then)."""

        def later():
            yield self.env.timeout(max(when - self.env.now, 0.0))
            action()

        self.env.process(later())

    def run_until(self, when: float) -> None:
        """Advance simulated time to ``when`` (starting the run if needed)."""
        try:
            self.start()
            self.env.run(until=when)
        except StretchTie:
            self._step_by_step()
            self.run_until(when)
            return
        self.steps.settle()  # what a caller reads now is as step-by-step runs leave it

    def _step_by_step(self) -> None:
        """The run met a tie it cannot order as stepping would (``StretchTie``): it is made
        again from the start, every step its own event."""
        self._build(False)

    def start(self, progress: Callable[[float], None] | None = None) -> None:
        """Start arrivals, load reports and faults (once)."""
        if self._started:
            return
        self._started = True
        kernel, sampler, steps = self.kernel, self.parts.sampler, self.steps
        periodic = not self.scheduler.reports_per_step
        # the tick's jobs that read instances (their reports, the scheduler's view) read them
        # as they are now: stretches form the steps that ended first
        reads_every_tick = periodic or self.parts.scaler is not None
        self.env.process(kernel.arrivals())
        self.env.process(
            kernel.tick(
                tick_jobs(self.parts, progress),
                self.cluster.live,
                lambda now: periodic or sampler.due(now),
                cluster_idle(self.parts),
                tick_slept(self.parts),
                (lambda now: steps.settle() if reads_every_tick or sampler.due(now) else None)
                if steps.stretches
                else None,
                quiet_until(self.parts),
            )
        )
        self.env.process(self.watchdog.watch())
        self.faults.start()

    # ------------------------------------------------------------------ run
    def run(self, progress: Callable[[float], None] | None = None) -> SimulationResult:
        """Simulate until every request finished or aborted (or the time limit). A run that
        stops making progress raises ``SimulationStalled`` (see ``sim.engine.watchdog``)."""
        started = wallclock.perf_counter()
        env = self.env
        self.start(progress)
        stop = self.kernel.all_done
        if self.config.time_limit is not None:
            limit = env.timeout(max(self.config.time_limit - env.now, 0.0))
            stop = env.any_of([self.kernel.all_done, limit])
        interrupted = False
        try:
            if len(self.workload):
                self.watchdog.run(stop)
                # let migrations of requests that just finished reach their abort
                pending = self.migrations.in_flight_processes()
                if pending and self.kernel.all_done.triggered:
                    self.watchdog.run(env.all_of(pending))
        except KeyboardInterrupt:
            interrupted = True
        except StretchTie:
            self._step_by_step()
            return self.run(progress)
        self.steps.settle()  # a run stopped by its time limit: the steps that ended before it
        if self.steps.idle_watch is not None:
            self.steps.idle_watch.close(env.now)
        if self.kernel.all_done.triggered:
            inspection.check_all_ended(self)
        return inspection.result(self, wallclock.perf_counter() - started, interrupted)
