"""Building a run in one pass: validate the config (cheap checks first, so a typo fails before
a replica model is fitted), build its parts — the kernel, the instances, the dispatcher, the
movers (migrations, hand-offs, balance migrations), scaling, faults, the watchdog — wire them
to each other, and start the initial instances. ``Simulation`` (``sim.engine.simulation``)
holds what this returns; nothing here advances time.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

import numpy as np
import simpy

from sim.cluster import FrontendFallback, GlobalScheduler
from sim.cluster.scaling import scale_out_pool
from sim.cluster.step_reports import StepReports
from sim.config import PoolConfig, SimulationConfig
from sim.config.schema import AdaptiveHeadroomConfig, PdConfig
from sim.engine.actions import EngineActions
from sim.engine.balancing import Balancer
from sim.engine.cluster import Cluster
from sim.engine.dispatcher import Dispatcher
from sim.engine.faults import FaultInjector
from sim.engine.former_events import InstanceEvents
from sim.engine.handoffs import Handoffs, pool_role
from sim.engine.headroom import HeadroomAdapter
from sim.engine.idle_watch import IdleWatch
from sim.engine.instances import InstanceRuntime, StepLog
from sim.engine.kernel import Kernel, TickJob
from sim.engine.migrations import MigrationLauncher
from sim.engine.sampling import Sampler
from sim.engine.scheduled_at import ScheduledAtEnvironment
from sim.engine.scaling import Scaler
from sim.engine.spot import SpotPools
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
from sim.instance.kv_transfer import TransferModel
from sim.instance.limits import BatchTimer
from sim.instance.load import LoadReport
from sim.instance.transfer_plan import MigrationMode, TransferPlan

if TYPE_CHECKING:
    from sim.workload.build import Workload


@dataclass
class Parts:
    """A built run: every part, wired."""

    config: SimulationConfig
    env: simpy.Environment
    workload: "Workload"
    scheduler: GlobalScheduler
    pools: dict[str, InstancePool]
    kernel: Kernel
    cluster: Cluster
    dispatcher: Dispatcher
    actions: EngineActions
    migrations: MigrationLauncher
    handoffs: Optional[Handoffs]
    balancer: Balancer
    steps: StepLog
    step_reports: Optional[StepReports]
    sampler: Sampler
    headroom: Optional[HeadroomAdapter]
    scaler: Optional[Scaler]
    faults: FaultInjector
    spot: Optional[SpotPools]


def build(
    config: SimulationConfig,
    replica_model: BatchTimer | None = None,
    workload: "Workload | None" = None,
    root: Path | None = None,
    transfer: TransferModel | None = None,
    record_batches: bool = False,
    scheduler: GlobalScheduler | None = None,
    check_every_step: bool = False,
    load_pool_model: Callable[[PoolConfig, str], BatchTimer] | None = None,
    decode_stretches: bool = True,
) -> Parts:
    """A run's parts (the arguments: ``sim.engine.simulation.Simulation``'s)."""
    rules = check_names(config)
    if replica_model is None:
        check_profiled_limits(config)
        if config.cost.sku_prices:  # a pool without a list price fails here, not after the run
            from sim.hardware.prices import gpu_hour_prices

            gpu_hour_prices(config)
    workload = workload if workload is not None else load_workload(config, root)
    tiers = workload_tiers(config, workload)
    scheduler = scheduler or GlobalScheduler(
        config.scheduler, tiers, slo_targets=config.slo.targets(tiers) if config.slo else ()
    )
    # prefill/decode disaggregation: pools with roles hand requests over (a KV transfer)
    disaggregated = rules.handoff is not None
    # every step seen (records, checks), a cadence that reads every instance, or spot
    # evacuations that read instances' blocks directly: no stretches
    stretches = (
        decode_stretches
        and not (record_batches or check_every_step or disaggregated)
        and not (scheduler.migrates or config.autoscale.enabled)
        and not any(pool.spot is not None for pool in config.instance_pools())
    )
    env = ScheduledAtEnvironment() if stretches else simpy.Environment()
    pools = build_pools(
        config,
        tiers,
        scheduler.priority.charges_headroom(),
        scheduler.migrates or disaggregated or rules.evacuates,
        (load_pool_model or load_model) if replica_model is None else (lambda pool, key: replica_model),
        transfer,
    )
    block_size = next(iter(pools.values())).limits.block_size  # every pool's (the config checks it)
    candidate = functools.partial(_candidate, rules.candidate, scheduler.priority.normal_tier)
    rng = np.random.default_rng([config.seed, 0x11F])  # fault draws, random fallback (INV-6 same-result)

    # the parts, in the order each needs the ones before it (later ones through callbacks)
    headroom: Optional[HeadroomAdapter] = None
    kernel = Kernel(
        env,
        workload,
        config.scheduler.load_report_interval,
        dispatch=lambda group: dispatcher.arrive(group),
        on_end=lambda request: headroom.observe(request) if headroom is not None else None,
    )
    live: dict[int, InstanceRuntime] = {}  # the cluster's live instances (per-step reports count them)
    step_reports = (
        scheduler.step_reports(live, config.scheduler.pairing_every, lambda: balancer.pairing_round())
        if scheduler.wants_step_reports(config.autoscale.enabled or disaggregated)
        else None
    )
    always = config.scheduler.idle_reports == "always"
    idle_watch = None
    if step_reports is not None or not scheduler.reports_per_step:  # a view is read
        idle_watch = IdleWatch(
            scheduler.view.reports,
            (lambda now: now) if step_reports is not None else (lambda now: kernel.next_tick),
            lambda: dispatcher.scheduler_up,
            strict=check_every_step and always,  # the artifact's reporting leaves views stale
        )
    steps = StepLog(
        record_batches,
        check_every_step,
        step_reports,
        idle_watch,
        always,
        stretches=stretches,
    )
    cluster = Cluster(
        env,
        kernel.clock,
        pools,
        scheduler,
        steps,
        lambda instance_id, role: InstanceEvents(
            instance_id, launcher, handoffs if role == "prefill" else None, kernel.request_done
        ),
        lambda role: pool_role(config.pd, role),
        scheduler.local_tiers,
        config.migration.colocated_slowdown,
        live,
        lambda instance_id, pool: spot.started(instance_id, pool) if spot is not None else None,
    )
    launcher = MigrationLauncher(
        env,
        TransferPlan(
            mode=MigrationMode(config.migration.mode),
            last_stage_blocks=config.migration.last_stage_blocks,
            max_stages=config.migration.max_stages,
            skip_cached=config.migration.skip_cached,
        ),
        lambda source: cluster.instances[source.id].pool.transfer,
        cluster.wake_endpoint,
        stage_fails=lambda: faults.stage_fails(),
        handshake_timeout=config.migration.prealloc_timeout,
        on_commit=lambda source_id: balancer.after_commit(source_id),
        on_start=cluster.end_idle_stretch,
    )
    handoffs = None
    if rules.handoff is not None:
        settings = config.pd or PdConfig()
        handoffs = Handoffs(
            settings,
            rules.handoff(settings, scheduler.dispatch, block_size),
            scheduler.view,
            launcher,
            cluster.live,
            cluster.wake_endpoint,
            candidate,
        )
    dispatcher = Dispatcher(
        scheduler,
        cluster.instances,
        handoffs,
        FrontendFallback(rng),
        block_size,
        len({pool.limits for pool in pools.values()}) > 1,
        cluster.enqueue,
        kernel.end_request,
        steps.settle,
    )
    balancer = Balancer(
        scheduler,
        cluster.live,
        launcher,
        handoffs,
        candidate,
        config.scheduler.pairing_every,
        lambda: dispatcher.scheduler_up,
        lambda instance_id: spot is not None and spot.evacuating(instance_id),
    )
    actions = EngineActions(cluster, dispatcher, kernel, step_reports, handoffs)
    if scheduler.priority.adapts:  # adaptive headroom: the controller moving each tier's headroom
        adaptive = config.scheduler.priority.adaptive or AdaptiveHeadroomConfig()
        headroom = HeadroomAdapter(headroom_controller(config, tiers, pools), adaptive.interval, pools, cluster.live)
    scaler = (
        Scaler(
            env,
            rules.scaling(config.autoscale, scheduler.settings.load_control),
            actions,
            config.autoscale.cold_start,
            scale_out_pool(config.autoscale.pool, cluster.pool_names),
            lambda instance_id: spot is not None and spot.evacuating(instance_id),
        )
        if config.autoscale.enabled
        else None
    )
    sampler = Sampler(
        config.output.timeseries_interval,
        lambda: scaler.starting if scaler is not None else 0,
        lambda: tuple(headroom.controller.fractions) if headroom is not None else (),
    )
    faults = FaultInjector(env, config.faults, actions, rng)
    spot: Optional[SpotPools] = None
    if any(pool.config.spot is not None for pool in pools.values()):
        from sim.workload.build import resolve_trace_path

        spot = SpotPools(
            env, config, actions, cluster.live, launcher, faults, config.scheduler.load_report_interval,
            lambda trace: resolve_trace_path(trace, root, "spot trace"),
        )
    for pool in pools.values():
        for _ in range(pool.config.instances):
            # per-step reports: the first instances have not reported before their first step
            cluster.add_instance(pool.name, reported=not scheduler.reports_per_step)
    return Parts(
        config, env, workload, scheduler, pools, kernel, cluster, dispatcher, actions, launcher, handoffs,
        balancer, steps, step_reports, sampler, headroom, scaler, faults, spot,
    )


def cluster_idle(parts: Parts) -> Callable[[], bool]:
    """Whether the tick may sleep: no request in flight, no migration or hand-off under way,
    no instance draining, and nothing that acts on the clock alone — an auto-scaler (it
    scales an idle cluster in) or the adaptive-headroom controller (its windows are time)
    keep the tick running. What ends a sleep wakes the kernel (``Kernel.wake``)."""
    if parts.scaler is not None or parts.headroom is not None:
        return lambda: False
    kernel, cluster, launcher = parts.kernel, parts.cluster, parts.migrations
    return lambda: not kernel.in_flight and not cluster.draining and not launcher.in_flight_processes()


def quiet_until(parts: Parts) -> Callable[[], Optional[float]]:
    """Until when the tick's jobs have nothing to do while requests run: with per-step
    reports and no job that acts at every tick (hand-offs, a scaler, adaptive headroom),
    only a draining instance (to remove) or a due sample needs the tick — the next sample's
    time, or None (the next tick) while an instance drains. Skipping the ticks between
    changes nothing but how many events the run takes."""
    if not parts.scheduler.reports_per_step or parts.handoffs is not None or parts.scaler is not None or parts.headroom is not None:
        return lambda: None
    cluster, sampler = parts.cluster, parts.sampler
    return lambda: None if cluster.draining else sampler.next_sample


def tick_slept(parts: Parts) -> Callable[[int], None]:
    """What hears the report rounds a sleeping tick skipped: the pairing cadence of periodic
    reports (per-step reports count their own)."""
    if parts.scheduler.reports_per_step:
        return lambda rounds: None
    return parts.balancer.slept


def _candidate(rule, normal_tier: int, llumlet):
    """The request a source llumlet moves (the run's candidate rule over its batch)."""
    return rule(llumlet.batches, normal_tier)


def tick_jobs(parts: Parts, progress: Callable[[float], None] | None) -> list[TickJob]:
    """The jobs of this run's tick, in the order they run: deliver interval reports and pair on
    their cadence (periodic reports only), hand off what waits (pool roles only), feed the
    scaler (auto-scaling only), remove drained instances, adapt headroom (adaptive headroom
    only), sample the cluster."""
    jobs: list[TickJob] = []
    scheduler, dispatcher, cluster = parts.scheduler, parts.dispatcher, parts.cluster
    if not scheduler.reports_per_step:
        jobs.append(parts.balancer.deliver_interval_reports)
        if scheduler.migrates:
            jobs.append(parts.balancer.pair_on_cadence)
    handoffs = parts.handoffs
    if handoffs is not None:

        def hand_off_waiting(now: float, reports: Optional[dict[int, LoadReport]]) -> None:
            """Llumnix's PD migration runs at its polling interval; a refused hand-off is
            tried again here."""
            if dispatcher.scheduler_up:
                handoffs.on_tick()

        jobs.append(hand_off_waiting)
    scaler = parts.scaler
    if scaler is not None:

        def feed_scaler(now: float, reports: Optional[dict[int, LoadReport]]) -> None:
            """The scaling rule sees the latest known report of every live instance."""
            if dispatcher.scheduler_up:
                known = scheduler.view.reports if scheduler.reports_per_step else reports
                live_known = {i: known[i] for i in cluster.live if i in known}
                scaler.on_reports(now, live_known, len(cluster.live))

        jobs.append(feed_scaler)

    def remove_drained_instances(now: float, reports: Optional[dict[int, LoadReport]]) -> None:
        removed = cluster.remove_drained()
        if removed and scaler is not None:
            scaler.removed(removed)

    jobs.append(remove_drained_instances)
    if parts.headroom is not None:
        jobs.append(parts.headroom.adapt)
    jobs.append(functools.partial(parts.sampler.sample, progress))
    return jobs
