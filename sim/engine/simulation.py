"""The discrete-event kernel: advances time and carries out decisions made elsewhere.

Processes (simpy): arrivals; one step loop per instance (form batch -> replica-model time ->
apply; with per-step reports, the artifact's cadence, it delivers the instance's report at
each step's end and triggers pairing rounds); a tick every ``load_report_interval`` that runs
small jobs, each a callback named for what it does — deliver interval reports, pair on their
cadence, feed the scaler, remove drained instances, sample the cluster; migrations; faults;
the watchdog. Policy lives in ``sim.cluster`` and ``sim.instance``;
scaling and faults act through the ``ClusterActions`` methods below.

Tests build a run with ``Simulation(...)``, may step it (``run_until``, ``at``, ``migrate``,
``fail_instance``), inspect it (``sim.engine.inspection``) and finish it with ``run()``.
"""

from __future__ import annotations

import functools
import time as wallclock
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence

import numpy as np
import simpy

from sim.cluster import DispatchInfo, FrontendFallback, GlobalScheduler
from sim.cluster.scaling import scale_out_pool
from sim.cluster.slo_predictor import InstanceModel
from sim.config import PoolConfig, SimulationConfig
from sim.config.schema import AdaptiveHeadroomConfig, PdConfig
from sim.engine import inspection
from sim.engine.faults import FaultInjector
from sim.engine.handoffs import Handoffs
from sim.engine.idle_watch import IdleWatch
from sim.engine.migrations import MigrationLauncher
from sim.engine.instances import InstanceRuntime, StepLog, StepLoop
from sim.engine.result import LoadSample, SimulationResult
from sim.engine.scaling import Scaler
from sim.engine.setup import (
    InstancePool,
    build_pools,
    check_names,
    check_profiled_limits,
    headroom_controller,
    load_model,
    load_workload,
    workload_tiers,
)
from sim.engine.watchdog import Watchdog, stall_span
from sim.instance.endpoint import MigrationEndpoint
from sim.instance.limits import BatchTimer, blocks_for
from sim.instance.llumlet import Llumlet
from sim.instance.load import LoadReport
from sim.instance.kv_transfer import TransferModel
from sim.instance.migration import MigrationMode, MigrationRecord, MigrationSettings
from sim.instance.request import Request, RequestState

if TYPE_CHECKING:
    from sim.workload.build import Workload

ABORT_NO_INSTANCE = "no_live_instance"


class Simulation:
    """One run. ``replica_model`` (every pool's), ``workload``, ``transfer`` and ``scheduler``
    may be injected (tests, benchmarks), and ``load_pool_model`` builds each pool's replica
    model otherwise (a sweep worker's cache); ``check_every_step`` verifies block
    conservation on an instance after every iteration."""

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
    ) -> None:
        self.config = config
        self.env = simpy.Environment()
        # cheap validation first, so a typo fails before the replica model is fitted
        rules = check_names(config)
        if replica_model is None:
            check_profiled_limits(config)
            if config.cost.sku_prices:  # a pool without a list price fails here, not after the run
                from sim.hardware.prices import gpu_hour_prices

                gpu_hour_prices(config)
        self.choose_candidate = rules.candidate
        self.workload = workload if workload is not None else load_workload(config, root)
        tiers = workload_tiers(config, self.workload)
        self.scheduler = scheduler or GlobalScheduler(
            config.scheduler, tiers, slo_targets=config.slo.targets(tiers) if config.slo else ()
        )
        # prefill/decode disaggregation: pools with roles hand requests over (a KV transfer)
        disaggregated = any(pool.role != "mixed" for pool in config.instance_pools())
        self.pools: dict[str, InstancePool] = build_pools(
            config,
            tiers,
            self.scheduler.priority.charges_headroom(),
            self.scheduler.migrates or disaggregated,
            (load_pool_model or load_model) if replica_model is None else (lambda pool, key: replica_model),
            transfer,
        )
        # adaptive-headroom: the controller moving each tier's headroom, and when it next does
        self.headroom_controller = (
            headroom_controller(config, tiers, self.pools) if self.scheduler.priority.adapts else None
        )
        self._next_adapt = (config.scheduler.priority.adaptive or AdaptiveHeadroomConfig()).interval
        first = next(iter(self.pools.values()))
        # pools of other limits: a request goes only where some instance can ever prefill it
        self._limits_differ = len({pool.limits for pool in self.pools.values()}) > 1
        self.block_size = first.limits.block_size  # every pool's (the config checks it)
        self.instances: dict[int, InstanceRuntime] = {}  # every instance ever started
        self.live: dict[int, InstanceRuntime] = {}  # those not stopped
        self.draining: set[int] = set()  # live instances draining (the tick checks only these)
        self._wire_reports(record_batches, check_every_step, disaggregated)
        self.requests: list[Request] = []
        self.load_samples: list[LoadSample] = []
        self._next_sample = 0.0  # when the tick next samples the cluster
        self._report_rounds = 0  # periodic report rounds delivered (the pairing cadence)
        self._done = bytearray(len(self.workload))
        self._done_count = 0
        # conversations: what each request's tokens are (a prefix cache's identity of its
        # blocks) and the turn each request's end lets arrive (sim.workload.sessions)
        sharing = self.workload.sharing
        self._contents = sharing.contents() if sharing is not None else None
        self._next_turns = sharing.next_turns() if sharing is not None else {}
        self._reads_cache = self.scheduler.dispatch_rule.reads_cache
        self.all_done = self.env.event()
        rng = np.random.default_rng([config.seed, 0x11F])  # fault draws, random fallback
        self.fallback = FrontendFallback(rng)
        self.fallback_kind: Optional[str] = None  # set while the global scheduler is down
        self.migrations, self.handoffs = self._movers(disaggregated)
        self.scaler = (
            Scaler(
                self.env,
                rules.scaling(config.autoscale, self.scheduler.settings.load_control),
                self,
                config.autoscale.cold_start,
                scale_out_pool(config.autoscale.pool, self.pool_names),
            )
            if config.autoscale.enabled
            else None
        )
        # the llumlets read the clock ~3 times per batch: simpy's ``now`` property returns
        # ``_now``; reading the attribute directly is 2-3% of the event loop
        self._clock = functools.partial(getattr, self.env, "_now")
        for pool in self.pools.values():
            for _ in range(pool.config.instances):
                # per-step reports: the first instances have not reported before their first step
                self.add_instance(pool.name, reported=not self.scheduler.reports_per_step)
        self.faults = FaultInjector(self.env, config.faults, self, rng)
        self.watchdog = Watchdog(
            self.env,
            stall_span(config),
            lambda: inspection.progress(self),
            lambda: inspection.pending(self),
            lambda: inspection.describe_stuck(self),
        )
        self._started = False

    def _movers(self, disaggregated: bool) -> tuple[MigrationLauncher, Optional[Handoffs]]:
        """What moves requests between instances: the migration launcher and, with pool
        roles, the prefill-to-decode hand-offs started through it."""
        migrations = MigrationLauncher(
            self.env,
            MigrationSettings(
                mode=MigrationMode(self.config.migration.mode),
                last_stage_blocks=self.config.migration.last_stage_blocks,
                max_stages=self.config.migration.max_stages,
                skip_cached=self.config.migration.skip_cached,
            ),
            lambda source: self.instances[source.id].pool.transfer,
            self._wake_endpoint,
            stage_fails=lambda: self.faults.stage_fails(),
            handshake_timeout=self.config.migration.prealloc_timeout,
            on_commit=self._after_commit,
            on_start=self._end_idle_stretch,
        )
        handoffs = (
            Handoffs(
                self.config.pd or PdConfig(),
                migrations.settings,
                migrations,
                self.scheduler,
                self.live,
                self.block_size,
                self._wake_endpoint,
                lambda llumlet: self.choose_candidate(llumlet.batches, self.scheduler.priority.normal_tier),
            )
            if disaggregated
            else None
        )
        return migrations, handoffs

    def _wire_reports(self, record_batches: bool, check_every_step: bool, disaggregated: bool) -> None:
        """How the scheduler hears the instances: per-step reports where something reads
        them, the step log, and the watch of idle instances against the view (INV-4)."""
        # per-step reports (the artifact's cadence) where something reads them
        self.step_reports = (
            self.scheduler.step_reports(self.live, self.config.scheduler.pairing_every, self._pairing_round)
            if self.scheduler.wants_step_reports(self.config.autoscale.enabled or disaggregated)
            else None
        )
        self.steps = StepLog(record_batches, check_every_step, self.step_reports)
        always = self.steps.idle_reports_always = self.config.scheduler.idle_reports == "always"
        self._next_tick = 0.0  # when the tick next runs (periodic reports are due then)
        if self.step_reports is not None or not self.scheduler.reports_per_step:  # a view is read
            self.steps.idle_watch = IdleWatch(
                self.scheduler.view.reports,
                (lambda now: now) if self.step_reports is not None else (lambda now: self._next_tick),
                lambda: self.fallback_kind is None,
                strict=check_every_step and always,  # the artifact's reporting leaves views stale
            )

    # ------------------------------------------------------------------ cluster actions
    @property
    def now(self) -> float:
        return self.env.now

    def add_instance(
        self, pool_name: str, billed_from: Optional[float] = None, reported: bool = True
    ) -> int:
        """Start a new instance of a pool (initial cluster, scale-out, restart) and let it
        receive work. A new instance is known to the scheduler as empty (``reported``), as
        the artifact records a scaled-out instance with an empty report until its first step."""
        instance_id = len(self.instances)
        pool = self.pools[pool_name]
        llumlet = Llumlet(
            instance_id,
            pool.limits,
            pool.model,
            clock=self._clock,
            on_done=self._request_done,
            headroom_blocks=pool.headroom,
            priority=self.scheduler.local_tiers,
            colocated_slowdown=self.config.migration.colocated_slowdown,
            batch_former=pool.batch_former,
            ledger=pool.ledger,
        )
        started = self.env.now if billed_from is None else billed_from
        runtime = InstanceRuntime(llumlet=llumlet, pool=pool, started_at=started)
        self.instances[instance_id] = runtime
        self.live[instance_id] = runtime
        if self.handoffs is not None:
            self.handoffs.added(llumlet, pool.config.role)
        runtime.loop = StepLoop(self.env, runtime, self.steps)
        self.scheduler.add_instance(
            instance_id, llumlet.reporter.report() if reported else None, InstanceModel(pool.model, pool.limits), pool.name
        )
        return instance_id

    def drain(self, instance_id: int) -> None:
        self.instances[instance_id].llumlet.status.draining = True
        self.draining.add(instance_id)
        self.scheduler.remove_instance(instance_id)

    def undrain(self, instance_id: int) -> None:
        llumlet = self.instances[instance_id].llumlet
        llumlet.status.draining = False
        self.draining.discard(instance_id)
        self.scheduler.add_instance(instance_id, llumlet.reporter.report(), pool=self.pool_of(instance_id))

    def _remove_drained(self) -> list[int]:
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
        lost = self.instances[instance_id].llumlet.fail()
        self._stop_instance(instance_id)
        return lost

    def dispatch(self, request: Request) -> None:
        """Send a request to an instance: the global scheduler's choice, or the frontends'
        fallback while the scheduler is down."""
        instances: Sequence[int] = self.scheduler.instances
        if not instances:
            self.end_request(request, ABORT_NO_INSTANCE)
            return
        among = None  # the instances to choose from, when not all
        if self.handoffs is not None:  # prefill and mixed instances take new requests
            entry = self.handoffs.entry(list(instances))
            if len(entry) < len(instances):
                instances = among = entry
        if self._limits_differ:
            among = self._able_to_serve(request.seq_len, instances) or among
        if self.fallback_kind is None:
            demand = blocks_for(request.seq_len, self.block_size)
            cached = self._cache_locality(request, among or instances) if self._reads_cache else None
            target = self.scheduler.dispatch(DispatchInfo(request.tier, demand, request.seq_len, cached), among)
        else:
            target = self.fallback.choose(among or instances, self.fallback_kind)
        runtime = self.instances[target]
        runtime.llumlet.enqueue(request)
        self._wake(runtime)

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

    def end_request(self, request: Request, reason: str) -> None:
        request.abort(reason, self.env.now)
        self._request_done(request)

    def set_scheduler_down(self, fallback: Optional[str]) -> None:
        if fallback is not None:
            if self.fallback_kind is None:
                self.scheduler.suspend()
            self.fallback_kind = fallback
        elif self.fallback_kind is not None:
            self.fallback_kind = None
            self.scheduler.resume({i: r.llumlet.reporter.report() for i, r in self.live.items()})
        if self.step_reports is not None:
            self.step_reports.paused = self.fallback_kind is not None  # reports reach nobody
        if self.handoffs is not None:
            self.handoffs.paused = self.fallback_kind is not None  # nobody picks a decode instance

    def is_alive(self, instance_id: int) -> bool:
        return instance_id in self.live

    def pool_of(self, instance_id: int) -> str:
        return self.instances[instance_id].pool.name

    @property
    def pool_names(self) -> list[str]:
        return list(self.pools)

    # ------------------------------------------------------------------ inspection (tests)
    def llumlet(self, instance_id: int) -> Llumlet:
        return self.instances[instance_id].llumlet

    @property
    def live_ids(self) -> list[int]:
        """Instances alive now (serving or draining), in id order."""
        return list(self.live)

    def request(self, request_id: int) -> Request:
        """A request that has arrived (requests are created at their arrival; a later turn
        of a conversation arrives after requests of higher id)."""
        if request_id < len(self.requests) and self.requests[request_id].id == request_id:
            return self.requests[request_id]
        for request in self.requests:
            if request.id == request_id:
                return request
        raise KeyError(f"request {request_id} has not arrived")

    @property
    def migration_records(self) -> list[MigrationRecord]:
        return self.migrations.records

    # ------------------------------------------------------------------ stepping (tests)
    def migrate(self, request_id: int, source: int, destination: int) -> MigrationRecord:
        """Start migrating a running request now, whatever the scheduler would do."""
        return self.migrations.start(
            self.request(request_id), self.llumlet(source), self.llumlet(destination)
        )

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
        self.start()
        self.env.run(until=when)

    def start(self, progress: Callable[[float], None] | None = None) -> None:
        """Start arrivals, load reports and faults (once)."""
        if self._started:
            return
        self._started = True
        self.env.process(self._arrivals())
        self.env.process(self._tick(self._tick_jobs(progress)))
        self.env.process(self.watchdog.watch())
        self.faults.start()

    # ------------------------------------------------------------------ processes
    def _stop_instance(self, instance_id: int) -> None:
        """The instance leaves the cluster (drained, or failed): no reports, no dispatch."""
        runtime = self.instances[instance_id]
        runtime.stopped_at = self.env.now
        del self.live[instance_id]
        self.draining.discard(instance_id)
        self.scheduler.remove_instance(instance_id)
        runtime.loop.stop()

    def _wake(self, runtime: InstanceRuntime) -> None:
        """Resume an idle instance's step loop after work arrived (its idle stretch ends
        now, before any report of the work that woke it)."""
        if runtime.wake is not None and not runtime.wake.triggered:
            self._end_idle_stretch(runtime.llumlet.id)
            runtime.wake.succeed()

    def _end_idle_stretch(self, instance_id: int) -> None:
        """Work is on its way to the instance (a request, or a migration that will reserve
        blocks on it without waking it): it is no longer idle (INV-4 idle-view)."""
        if self.steps.idle_watch is not None:
            self.steps.idle_watch.ended(instance_id, self.env.now)

    def _wake_endpoint(self, endpoint: MigrationEndpoint) -> None:
        self._wake(self.instances[endpoint.id])

    def _arrivals(self):
        """The requests that arrive at their own time (every one, without conversations:
        a later turn arrives when its previous one ends, ``_next_turn``)."""
        workload = self.workload
        env = self.env
        arrivals = workload.arrival.tolist()
        opening = workload.sharing.opening.tolist() if workload.sharing is not None else range(len(arrivals))
        position, count = 0, len(opening)
        while position < count:
            arrival = arrivals[opening[position]]
            if arrival > env.now:
                yield env.timeout(arrival - env.now)
            end = position + 1
            while end < count and arrivals[opening[end]] == arrival:
                end += 1
            self._arrive([self._new_request(opening[i], arrival) for i in range(position, end)])
            position = end

    def _new_request(self, index: int, arrival: float) -> Request:
        workload = self.workload
        content = self._contents[index] if self._contents is not None else None
        return Request(
            index,
            arrival,
            int(workload.prompt_tokens[index]),
            int(workload.output_tokens[index]),
            int(workload.tier[index]),
            content,
        )

    def _arrive(self, group: list[Request]) -> None:
        self.requests.extend(group)
        for request in self.scheduler.order(group):
            self.dispatch(request)

    def _next_turn(self, index: int):
        """A conversation's next turn: its message a think time after the last answer ended."""
        yield self.env.timeout(float(self.workload.sharing.think[index]))
        self._arrive([self._new_request(index, self.env.now)])

    def _request_done(self, request: Request) -> None:
        """Every request ends here exactly once: finished, or aborted with a reason (INV-3
        ends-once)."""
        if self._done[request.id]:
            raise AssertionError(f"request {request.id} ended twice")
        self._done[request.id] = 1
        self._done_count += 1
        follower = self._next_turns.get(request.id)
        if follower is not None:
            self.env.process(self._next_turn(follower))
        if self.headroom_controller is not None:
            self.headroom_controller.observe(request.tier, *_slo_times(request))
        if self._done_count == len(self.workload) and not self.all_done.triggered:
            self.all_done.succeed()

    # ------------------------------------------------------------------ the tick's jobs
    def _tick(self, jobs: list[Callable[[float, Optional[dict[int, LoadReport]]], None]]):
        """The engine's clock: every ``load_report_interval``, one snapshot of the live
        instances' reports (only when a job reads one this tick: with per-step reports an
        idle cluster costs no report per tick), then each job in turn, in this order."""
        interval = self.config.scheduler.load_report_interval
        periodic = not self.scheduler.reports_per_step
        live = self.live
        while True:
            now = self.env.now
            reports = (
                {instance_id: r.llumlet.reporter.report() for instance_id, r in live.items()}
                if periodic or now >= self._next_sample
                else None
            )
            for job in jobs:
                job(now, reports)
            self._next_tick = now + interval
            yield self.env.timeout(interval)

    def _tick_jobs(self, progress: Callable[[float], None] | None) -> list:
        """The jobs of this run's tick, each a callback named for what it does."""
        jobs: list = []
        if not self.scheduler.reports_per_step:
            jobs.append(self._deliver_interval_reports)
            if self.scheduler.migrates:
                jobs.append(self._pair_on_cadence)
        if self.handoffs is not None:
            jobs.append(self._hand_off_waiting)
        if self.scaler is not None:
            jobs.append(self._feed_scaler)
        jobs.append(self._remove_drained_instances)
        if self.headroom_controller is not None:
            jobs.append(self._adapt_headroom)
        jobs.append(functools.partial(self._sample, progress))
        return jobs

    def _deliver_interval_reports(self, now: float, reports: Optional[dict[int, LoadReport]]) -> None:
        """Periodic reports: the scheduler hears every live instance (unless it is down)."""
        if self.fallback_kind is None:
            self.scheduler.observe(reports)
            self._report_rounds += 1

    def _pair_on_cadence(self, now: float, reports: Optional[dict[int, LoadReport]]) -> None:
        """A pairing round every ``pairing_every`` report rounds (per-step reports count
        their own, ``sim.cluster.step_reports``)."""
        if self.fallback_kind is None and self._report_rounds % self.config.scheduler.pairing_every == 0:
            self._pairing_round()

    def _hand_off_waiting(self, now: float, reports: Optional[dict[int, LoadReport]]) -> None:
        """Requests prefilled on prefill instances go to decode instances (Llumnix's PD
        migration runs at its polling interval; a refused hand-off is tried again here)."""
        if self.fallback_kind is None:
            self.handoffs.on_tick()

    def _feed_scaler(self, now: float, reports: Optional[dict[int, LoadReport]]) -> None:
        """The scaling rule sees the latest known report of every live instance."""
        if self.fallback_kind is None:
            known = self.scheduler.view.reports if self.scheduler.reports_per_step else reports
            live_known = {i: known[i] for i in self.live if i in known}
            self.scaler.on_reports(now, live_known, len(self.live))

    def _remove_drained_instances(self, now: float, reports: Optional[dict[int, LoadReport]]) -> None:
        removed = self._remove_drained()
        if removed and self.scaler is not None:
            self.scaler.removed(removed)

    def _adapt_headroom(self, now: float, reports: Optional[dict[int, LoadReport]]) -> None:
        """Every ``priority.adaptive.interval``: the controller ends its window, and a moved
        allocation reaches every pool (new instances) and every live instance's reports."""
        if now < self._next_adapt:
            return
        controller = self.headroom_controller
        self._next_adapt = now + (self.config.scheduler.priority.adaptive or AdaptiveHeadroomConfig()).interval
        if not controller.adjust():
            return
        for pool in self.pools.values():
            pool.headroom[:] = [f * pool.limits.capacity_blocks for f in controller.fractions]
        for runtime in self.live.values():
            runtime.llumlet.reporter.headroom_blocks = tuple(runtime.pool.headroom)

    def _sample(
        self, progress: Callable[[float], None] | None, now: float, reports: Optional[dict[int, LoadReport]]
    ) -> None:
        """Every ``timeseries_interval``: the tick's reports, kept for the time series."""
        if now >= self._next_sample:
            starting = self.scaler.starting if self.scaler is not None else 0
            headroom = tuple(self.headroom_controller.fractions) if self.headroom_controller else ()
            self.load_samples.append(LoadSample(now, starting, tuple(reports.values()), headroom))
            self._next_sample = now + self.config.output.timeseries_interval
            if progress is not None:
                progress(now)

    def _pairing_round(self) -> None:
        handoffs = self.handoffs
        among = None if handoffs is None else handoffs.balancing(list(self.scheduler.instances))
        for source in self.scheduler.migration_pairs(among):
            if handoffs is None or not handoffs.is_prefill(source):  # its requests are handed off
                self._try_migration(source)

    def _after_commit(self, source_id: int) -> None:
        if self.scheduler.continues_after_commit:
            self._try_migration(source_id)  # keep going while it is still a source

    def _try_migration(self, source_id: int) -> None:
        """A paired source starts its next migration if the scheduler still wants it to."""
        destination_id = self.scheduler.destination_for(source_id)
        if destination_id is None:
            return
        source, destination = self.live[source_id], self.live[destination_id]
        if not self.scheduler.should_migrate(
            source.llumlet.reporter.report(), destination.llumlet.reporter.report()
        ):
            return
        request = self.choose_candidate(source.llumlet.batches, self.scheduler.priority.normal_tier)
        if request is not None:
            self.migrations.start(request, source.llumlet, destination.llumlet)

    # ------------------------------------------------------------------ run
    def run(self, progress: Callable[[float], None] | None = None) -> SimulationResult:
        """Simulate until every request finished or aborted (or the time limit). A run that
        stops making progress raises ``SimulationStalled`` (see ``sim.engine.watchdog``)."""
        started = wallclock.perf_counter()
        env = self.env
        self.start(progress)
        stop = self.all_done
        if self.config.time_limit is not None:
            limit = env.timeout(max(self.config.time_limit - env.now, 0.0))
            stop = env.any_of([self.all_done, limit])
        interrupted = False
        try:
            if len(self.workload):
                self.watchdog.run(stop)
                # let migrations of requests that just finished reach their abort
                pending = self.migrations.in_flight_processes()
                if pending and self.all_done.triggered:
                    self.watchdog.run(env.all_of(pending))
        except KeyboardInterrupt:
            interrupted = True
        if self.steps.idle_watch is not None:
            self.steps.idle_watch.close(env.now)
        if self.all_done.triggered:
            inspection.check_all_ended(self)
        return inspection.result(self, wallclock.perf_counter() - started, interrupted)


def _slo_times(request: Request) -> tuple[Optional[float], Optional[float]]:
    """An ended request's TTFT (None: no first token) and TPOT after it (None: not
    finished; 0 for a one-token request), as the frontend that streamed it knows them."""
    first = request.first_token_time
    ttft = None if first is None else first - request.arrival
    if request.state is not RequestState.FINISHED or first is None:
        return ttft, None
    tokens_after = request.output_tokens - 1
    return ttft, (request.finish_time - first) / tokens_after if tokens_after else 0.0
