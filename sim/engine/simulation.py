"""The discrete-event kernel: wires workload, llumlets and the global scheduler on simpy.

Processes: one arrival process, one step loop per instance (form batch -> replica-model time
-> apply), one periodic process that delivers load reports to the global scheduler (which
answers with migration pairs and scaling decisions) and samples time series, one process per
migration, and the injected faults (``sim.engine.faults``). Policy lives elsewhere; this
module only advances time and applies decisions.
"""

from __future__ import annotations

import time as wallclock
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import simpy

from sim.cluster import DispatchInfo, GlobalScheduler, make_scheduler
from sim.cluster.autoscaler import AutoScaler
from sim.config import ConfigError, SimulationConfig
from sim.engine.faults import inject_faults, stage_fails
from sim.engine.scaling import autoscale, remove_drained
from sim.instance.llumlet import BatchTimer, Llumlet, LlumletLimits
from sim.instance.migration import (
    MigrationRecord,
    MigrationSettings,
    TransferModel,
    migrate,
    select_request,
)
from sim.instance.request import Request, RequestState
from sim.instance.virtual_usage import tier_headroom_blocks

ABORT_NO_INSTANCE = "no_live_instance"


@dataclass
class InstanceRuntime:
    """An instance's llumlet plus its life in the simulation."""

    llumlet: Llumlet
    started_at: float  # billed from here (a scale-out's cold start is paid for)
    stopped_at: Optional[float] = None
    wake: Optional[simpy.Event] = None
    process: Optional[simpy.Process] = None

    @property
    def alive(self) -> bool:
        return self.stopped_at is None


@dataclass
class SimulationResult:
    """Everything a run produced; ``sim.metrics`` turns it into tables, summaries and plots."""

    config: SimulationConfig
    requests: list[Request]
    instance_samples: list[tuple]
    cluster_samples: list[tuple]
    instance_lifetimes: dict[int, tuple[float, float]]
    end_time: float
    wall_seconds: float
    capacity_blocks: int
    workload_description: str
    interrupted: bool = False
    batches: int = 0
    migrations: list[MigrationRecord] = field(default_factory=list)
    batch_log: list[tuple] = field(default_factory=list)  # (instance, start, duration, prefill, size)
    scaling_log: list[tuple] = field(default_factory=list)  # (time, action, instance)
    fault_log: list[tuple] = field(default_factory=list)  # (time, event, detail)
    leaked_blocks: int = 0  # allocated or reserved blocks left on live instances at the end


INSTANCE_SAMPLE_COLUMNS = (
    "time",
    "instance",
    "used_blocks",
    "reserved_blocks",
    "free_blocks",
    "queue_length",
    "running",
    "freeness_full",
    "freeness_normal",
    "draining",
)
CLUSTER_SAMPLE_COLUMNS = (
    "time",
    "instances",  # billed: starting, serving and draining
    "serving",
    "draining",
    "free_blocks",
    "fragmented_blocks",
    "queued",
)


class Simulation:
    """One run. ``replica_model`` and ``workload`` may be injected (tests, benchmarks)."""

    def __init__(
        self,
        config: SimulationConfig,
        replica_model: BatchTimer | None = None,
        workload=None,
        root: Path | None = None,
        transfer: TransferModel | None = None,
        record_batches: bool = False,
        scheduler: GlobalScheduler | None = None,
    ) -> None:
        self.config = config
        self.env = simpy.Environment()
        # cheap validation first, so a typo fails before the replica model is fitted
        self.scheduler: GlobalScheduler = scheduler or make_scheduler(config.scheduler)
        self.workload = workload if workload is not None else _load_workload(config, root)
        self.model = replica_model if replica_model is not None else _load_model(config)
        cluster = config.cluster
        capacity = cluster.kv_capacity_blocks or self.model.kv_capacity_blocks
        tiers = max(config.workload.priority.tiers, int(self.workload.tier.max(initial=0)) + 1)
        model_batch_cap = getattr(self.model, "max_batch_size", cluster.max_batch_size)
        if cluster.max_batch_size > model_batch_cap:
            raise ConfigError(
                f"cluster.max_batch_size: {cluster.max_batch_size} exceeds the {model_batch_cap} "
                "decode batch sizes the replica model is profiled for"
            )
        self.limits = LlumletLimits(
            capacity_blocks=capacity,
            block_size=cluster.block_size,
            max_batched_tokens=cluster.max_batched_tokens,
            max_batch_size=cluster.max_batch_size,
            watermark_blocks=int(cluster.watermark_fraction * capacity),
            tiers=tiers,
            max_seq_len=getattr(self.model, "max_tokens", LlumletLimits.max_seq_len),
        )
        self.headroom = (
            tier_headroom_blocks(
                capacity,
                tiers,
                h_max=config.scheduler.headroom.h_max,
                decay=config.scheduler.headroom.decay,
                lowest_tier_none=config.scheduler.headroom.lowest_tier_none,
                max_total=config.scheduler.headroom.max_total,
                explicit=config.scheduler.headroom.blocks,
            )
            if self.scheduler.uses_tiers
            else []
        )
        migration = config.migration
        self.migration_settings = MigrationSettings(
            mode=migration.mode,
            last_stage_blocks=migration.last_stage_blocks,
            max_stages=migration.max_stages,
        )
        self.transfer = transfer
        if self.scheduler.migrates and self.transfer is None:
            self.transfer = _load_transfer(config, self.model)
        self.pairing: dict[int, int] = {}
        self.migrations: list[MigrationRecord] = []
        self.in_flight: list[simpy.Process] = []  # migration processes
        self.record_batches = record_batches
        self.batch_log: list[tuple] = []
        self.instances: dict[int, InstanceRuntime] = {}  # every instance ever started
        self.live: dict[int, InstanceRuntime] = {}  # those not stopped
        self.requests: list[Request] = []
        self.done_count = 0
        self.all_done = self.env.event()
        self.instance_samples: list[tuple] = []
        self.cluster_samples: list[tuple] = []
        self.batches = 0
        self.check_every_step = False  # tests: verify block conservation after every iteration
        self._done = bytearray(len(self.workload))
        self.rng = np.random.default_rng([config.seed, 0x11F])  # fault draws, fallback dispatch
        self.scheduler_up = True
        self.fallback = "round-robin"
        self._fallback_next = 0
        self.transfer_failure: Optional[tuple[float, float, float]] = None  # (p, start, end)
        self.autoscaler = AutoScaler(config.autoscale) if config.autoscale.enabled else None
        self.starting = 0  # scale-outs still in their cold start
        self.scaling_log: list[tuple] = []
        self.fault_log: list[tuple] = []
        for _ in range(cluster.instances):
            self.add_instance()

    # ------------------------------------------------------------------ instances
    def add_instance(self, billed_from: Optional[float] = None) -> int:
        """Start a new instance (initial cluster, scale-out, restart) and let it receive work."""
        instance_id = len(self.instances)
        llumlet = Llumlet(
            instance_id,
            self.limits,
            self.model,
            clock=lambda: self.env.now,
            on_done=self.request_done,
            headroom_blocks=self.headroom,
            priority=self.scheduler.uses_tiers,
            colocated_slowdown=self.config.migration.colocated_slowdown,
        )
        started = self.env.now if billed_from is None else billed_from
        runtime = InstanceRuntime(llumlet=llumlet, started_at=started)
        self.instances[instance_id] = runtime
        self.live[instance_id] = runtime
        runtime.process = self.env.process(self._instance_loop(runtime))
        self.scheduler.add_instance(instance_id)
        self.scheduler.observe({instance_id: llumlet.report()})
        return instance_id

    def live_instances(self) -> list[InstanceRuntime]:
        return list(self.live.values())

    def stop_instance(self, instance_id: int) -> None:
        """The instance leaves the cluster (drained, or failed): no reports, no dispatch."""
        runtime = self.instances[instance_id]
        runtime.stopped_at = self.env.now
        del self.live[instance_id]
        self.scheduler.remove_instance(instance_id)
        self.pairing.pop(instance_id, None)
        if runtime.process is not None and runtime.process.is_alive:
            runtime.process.interrupt()

    def wake(self, runtime: InstanceRuntime) -> None:
        """Resume an idle instance's step loop after work arrived."""
        if runtime.wake is not None and not runtime.wake.triggered:
            runtime.wake.succeed()

    def _wake_llumlet(self, llumlet: Llumlet) -> None:
        self.wake(self.instances[llumlet.id])

    def _instance_loop(self, runtime: InstanceRuntime):
        llumlet = runtime.llumlet
        env = self.env
        try:
            while True:
                batch = llumlet.next_batch()
                if batch is None:
                    llumlet.busy = False
                    runtime.wake = env.event()
                    yield runtime.wake
                    runtime.wake = None
                    continue
                llumlet.busy = True
                duration = llumlet.iteration_time(batch)
                if self.record_batches:
                    self.batch_log.append(
                        (llumlet.id, env.now, duration, batch.is_prefill, batch.size)
                    )
                yield env.timeout(duration)
                llumlet.complete(batch)
                self.batches += 1
                if self.check_every_step:
                    llumlet.check()
        except simpy.Interrupt:
            return  # the instance was removed or failed

    # ------------------------------------------------------------------ requests
    def _arrivals(self):
        workload = self.workload
        env = self.env
        arrivals = workload.arrival.tolist()
        prompts = workload.prompt_tokens.tolist()
        outputs = workload.output_tokens.tolist()
        tiers = workload.tier.tolist()
        index, count = 0, len(arrivals)
        while index < count:
            arrival = arrivals[index]
            if arrival > env.now:
                yield env.timeout(arrival - env.now)
            # requests arriving together are dispatched most critical tier first
            end = index + 1
            while end < count and arrivals[end] == arrival:
                end += 1
            batch = [
                Request(i, arrival, prompts[i], outputs[i], tiers[i]) for i in range(index, end)
            ]
            self.requests.extend(batch)
            for request in sorted(batch, key=lambda r: r.tier) if len(batch) > 1 else batch:
                self.dispatch(request)
            index = end

    def dispatch(self, request: Request) -> None:
        """Send a request to an instance: the global scheduler's choice, or the frontends'
        round-robin/random fallback while the scheduler is down."""
        if not self.scheduler.instances:
            request.state = RequestState.ABORTED
            request.abort_reason = ABORT_NO_INSTANCE
            request.finish_time = self.env.now
            self.request_done(request)
            return
        if self.scheduler_up:
            demand = -(-request.seq_len // self.limits.block_size)
            target = self.scheduler.dispatch(DispatchInfo(request.tier, demand))
        else:
            target = self._fallback_target()
        runtime = self.instances[target]
        runtime.llumlet.enqueue(request)
        self.wake(runtime)

    def _fallback_target(self) -> int:
        live = self.scheduler.instances
        if self.fallback == "random":
            return live[int(self.rng.integers(len(live)))]
        self._fallback_next += 1
        return live[self._fallback_next % len(live)]

    def request_done(self, request: Request) -> None:
        """Every request ends here exactly once: finished, or aborted with a reason."""
        if self._done[request.id]:
            raise AssertionError(f"request {request.id} ended twice")
        self._done[request.id] = 1
        self.done_count += 1
        if self.done_count == len(self.workload) and not self.all_done.triggered:
            self.all_done.succeed()

    # ------------------------------------------------------------------ periodic work
    def _load_reports(self, progress: Callable[[float], None] | None):
        interval = self.config.scheduler.load_report_interval
        sample_every = self.config.output.timeseries_interval
        pairing_every = self.config.scheduler.pairing_every
        next_sample = 0.0
        scheduler = self.scheduler
        rounds = 0
        while True:
            now = self.env.now
            reports = {
                runtime.llumlet.id: runtime.llumlet.report() for runtime in self.live_instances()
            }
            if self.scheduler_up:
                scheduler.observe(reports)
                rounds += 1
                if scheduler.migrates and rounds % pairing_every == 0:
                    self.pairing = scheduler.migration_pairs()
                    for source in self.pairing:
                        self._start_migration(source)
                if self.autoscaler is not None:
                    autoscale(self, now, reports)
            remove_drained(self)
            if now >= next_sample:
                self._sample(reports)
                next_sample = now + sample_every
                if progress is not None:
                    progress(now)
            yield self.env.timeout(interval)

    def _sample(self, reports) -> None:
        now = self.env.now
        free_total = 0
        queued = 0
        draining = 0
        blocked_demands = []
        for runtime in self.live_instances():
            llumlet = runtime.llumlet
            report = reports[llumlet.id]
            free = report.free_blocks
            free_total += free
            queued += report.num_waiting
            draining += report.draining
            if llumlet.head_blocked_by_memory:
                blocked_demands.append(report.head_demand_blocks)
            self.instance_samples.append(
                (
                    now,
                    llumlet.id,
                    report.used_blocks,
                    report.reserved_blocks,
                    free,
                    report.num_waiting,
                    report.num_running,
                    report.freeness_full,
                    report.freeness_normal,
                    report.draining,
                )
            )
        # fragmentation: free memory that, pooled, would admit a request queued for lack of blocks
        fragmented = free_total if any(d <= free_total for d in blocked_demands) else 0
        self.cluster_samples.append(
            (
                now,
                len(reports) + self.starting,
                len(reports) - draining,
                draining,
                free_total,
                fragmented,
                queued,
            )
        )

    # ------------------------------------------------------------------ migration
    def _start_migration(self, source_id: int) -> None:
        """Start the next migration out of a paired source, if it is still a source."""
        destination_id = self.pairing.get(source_id)
        if destination_id is None:
            return
        source, destination = self.instances[source_id], self.instances[destination_id]
        if not (source.alive and destination.alive):
            return
        if source.llumlet.migrating or destination.llumlet.migrating:
            return
        if source.llumlet.report().freeness_full >= self.config.scheduler.source_below:
            return
        request = select_request(source.llumlet)
        if request is not None:
            self.migrate_request(request, source_id, destination_id)

    def migrate_request(self, request: Request, source_id: int, destination_id: int) -> MigrationRecord:
        """Start moving ``request`` (running on ``source_id``) to ``destination_id`` now."""
        source, destination = self.instances[source_id], self.instances[destination_id]
        if request not in source.llumlet.running:
            raise ValueError(f"request {request.id} is not running on instance {source_id}")
        record = MigrationRecord(
            id=len(self.migrations),
            request_id=request.id,
            source=source_id,
            destination=destination_id,
            mode=self.migration_settings.mode,
            start=self.env.now,
        )
        self.migrations.append(record)
        self.in_flight.append(self.env.process(self._migration(source, destination, request, record)))
        return record

    def _migration(self, source, destination, request, record):
        yield from migrate(
            self.env,
            source.llumlet,
            destination.llumlet,
            request,
            record,
            self.migration_settings,
            self.transfer,
            self._wake_llumlet,
            stage_fails=lambda: stage_fails(self),
            handshake_timeout=self.config.migration.prealloc_timeout,
        )
        if record.outcome == "committed":
            self._start_migration(source.llumlet.id)  # keep going while it is still a source
        # after an abort the pair waits for the next pairing round

    # ------------------------------------------------------------------ run
    def run(self, progress: Callable[[float], None] | None = None) -> SimulationResult:
        """Simulate until every request finished or aborted (or the time limit)."""
        started = wallclock.perf_counter()
        env = self.env
        env.process(self._arrivals())
        env.process(self._load_reports(progress))
        inject_faults(self)
        stop = self.all_done
        if self.config.time_limit is not None:
            stop = env.any_of([self.all_done, env.timeout(self.config.time_limit)])
        interrupted = False
        try:
            if len(self.workload):
                env.run(until=stop)
                # let migrations of requests that just finished reach their abort
                pending = [p for p in self.in_flight if p.is_alive]
                if pending and self.all_done.triggered:
                    env.run(until=env.all_of(pending))
        except KeyboardInterrupt:
            interrupted = True
        end = env.now
        lifetimes = {
            instance_id: (runtime.started_at, runtime.stopped_at if runtime.stopped_at is not None else end)
            for instance_id, runtime in self.instances.items()
        }
        return SimulationResult(
            config=self.config,
            requests=self.requests,
            instance_samples=self.instance_samples,
            cluster_samples=self.cluster_samples,
            instance_lifetimes=lifetimes,
            end_time=end,
            wall_seconds=wallclock.perf_counter() - started,
            capacity_blocks=self.limits.capacity_blocks,
            workload_description=self.workload.description,
            interrupted=interrupted,
            batches=self.batches,
            migrations=self.migrations,
            batch_log=self.batch_log,
            scaling_log=self.scaling_log,
            fault_log=self.fault_log,
            leaked_blocks=self.leaked_blocks(),
        )

    def leaked_blocks(self) -> int:
        """Blocks allocated to no resident request or reserved for no in-flight migration."""
        leaked = 0
        for runtime in self.live_instances():
            llumlet = runtime.llumlet
            held = sum(r.blocks for r in llumlet.holders())
            leaked += llumlet.ledger.allocated - held
            for (_, migration_id), blocks in llumlet.ledger.reservations.items():
                if self.migrations[migration_id].outcome != "in_flight":
                    leaked += blocks
        return leaked


def _load_model(config: SimulationConfig) -> BatchTimer:
    from sim.hardware import UnknownHardwareError, load_replica_model

    cluster = config.cluster
    try:
        return load_replica_model(
            cluster.model,
            cluster.device,
            cluster.tensor_parallel,
            block_size=cluster.block_size,
            gpu_memory_utilization=cluster.gpu_memory_utilization,
            max_batched_tokens=cluster.max_batched_tokens,
            kv_capacity_blocks=cluster.kv_capacity_blocks,
        )
    except UnknownHardwareError as exc:
        raise ConfigError(f"cluster: {exc}") from None
    except ValueError as exc:  # a limit outside what the profiles cover
        raise ConfigError(f"cluster: {exc}") from None


def _load_transfer(config: SimulationConfig, model) -> TransferModel:
    from sim.hardware.transfer import load_transfer_model

    overrides = config.migration.transfer
    return load_transfer_model(
        model.kv_bytes_per_token,
        config.cluster.block_size,
        getattr(model, "tensor_parallel", 1),
        stage_latency=overrides.stage_latency,
        gpu_bandwidth=overrides.gpu_bandwidth,
        network_bandwidth=overrides.network_bandwidth,
    )


def _load_workload(config: SimulationConfig, root: Path | None):
    from sim.workload import build_workload

    return build_workload(config.workload, config.seed, root)
