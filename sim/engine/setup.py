"""Building a run's parts from its config: workload, and each instance pool's replica model,
limits, headroom and transfer model.

Each failure a config can cause is a ``ConfigError`` naming the key, raised before the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple, Optional

from sim.cluster.adaptive_headroom import HeadroomController
from sim.config import ClusterConfig, ConfigError, PoolConfig, SchedulerConfig, SimulationConfig
from sim.config.registry import Registry
from sim.config.schema import AdaptiveHeadroomConfig, OverheadConfig, PdConfig
from sim.instance.batching import BatchFormer
from sim.instance.blocks import BlockLedger
from sim.instance.limits import NO_SEQUENCE_LIMIT, BatchTimer, LlumletLimits
from sim.instance.kv_transfer import TransferModel
from sim.instance.parts import BATCH_FORMERS, ENGINES, LEDGERS
from sim.instance.virtual_usage import tier_headroom_blocks

if TYPE_CHECKING:
    from sim.cluster.global_scheduler import Preset
    from sim.cluster.handoff import HandoffRule
    from sim.cluster.scaling import ScalingRule
    from sim.hardware import ReplicaModel
    from sim.instance.candidates import CandidateRule
    from sim.workload.build import Workload


class NamedRules(NamedTuple):
    """The rules a config names, looked up: the scheduler's resolved preset, the scaling
    rule's class, the migration candidate rule and, with pool roles, the hand-off rule's
    class."""

    settings: "Preset"
    scaling: "type[ScalingRule]"
    candidate: "CandidateRule"
    handoff: "Optional[type[HandoffRule]]"
    evacuates: bool = False  # a spot pool evacuates by live migration (its pools need transfer models)


def check_names(config: SimulationConfig) -> NamedRules:
    """Every rule the config names exists (cheap: before the workload and replica model are
    built); returns them."""
    from sim.cluster import PRIORITY_MODES, SCALING_RULES, resolve
    from sim.cluster.scaling import scale_out_pool
    from sim.cluster.dispatch import DISPATCH_RULES
    from sim.cluster.global_scheduler import NO_PAIRING
    from sim.cluster.handoff import HANDOFF_RULES
    from sim.cluster.ordering import ARRIVAL_ORDERINGS
    from sim.cluster.pairing import PAIRING_RULES
    from sim.instance.candidates import CANDIDATE_RULES

    scheduler = config.scheduler
    _check_slo_rules(  # the rules the config names itself, before any other check
        config,
        ((DISPATCH_RULES, scheduler.dispatch), (PAIRING_RULES, scheduler.pairing), (PRIORITY_MODES, scheduler.priority.mode)),
    )
    settings = resolve(config.scheduler)
    DISPATCH_RULES.get(settings.dispatch)
    if settings.pairing != NO_PAIRING:
        PAIRING_RULES.get(settings.pairing)
    ARRIVAL_ORDERINGS.get(settings.ordering)
    PRIORITY_MODES.get(settings.priority)
    _check_mode_options(config.scheduler, settings.priority)
    if config.scheduler.idle_reports != "always" and settings.reports != "per-step":
        chosen = "scheduler.reports" if config.scheduler.reports else f"the {config.scheduler.name} preset's"
        raise ConfigError(
            f"scheduler.idle_reports: only per-step reports read it; this run's reports are "
            f"{settings.reports} ({chosen}), which report every instance at every tick"
        )
    if settings.pairing != NO_PAIRING:
        chosen = "scheduler.pairing" if config.scheduler.pairing else f"the {config.scheduler.name} preset's pairing"
        _check_one_model(config, f"this run migrates ({chosen})", "scheduler.pairing: none")
    elif any(pool.role != "mixed" for pool in config.instance_pools()):
        _check_one_model(config, "its pools hand requests over (pools[*].role)")
    if config.autoscale.enabled:
        scale_out_pool(config.autoscale.pool, [pool.name for pool in config.instance_pools()])
    handoff = None
    if any(pool.role != "mixed" for pool in config.instance_pools()):
        pd = config.pd or PdConfig()
        handoff = HANDOFF_RULES.get(pd.pairing)
        if pd.layerwise and not (handoff.decides_at_first_token and pd.copy == "blocking"):
            raise ConfigError(
                "pd.layerwise: streams the KV during the prefill to the decode instance chosen for it; "
                "it needs pd.pairing: immediate (a rule that decides at the first token) and pd.copy: blocking"
            )
    evacuates = False
    for index, pool in enumerate(config.instance_pools()):
        if pool.spot is not None and pool.spot.evacuation == "live":
            _check_one_model(config, f"pools[{index}] evacuates by live migration (pools[{index}].spot.evacuation: live)")
            evacuates = True
    return NamedRules(
        settings,
        SCALING_RULES.get(config.autoscale.rule),
        CANDIDATE_RULES.get(config.migration.candidate or settings.candidate),
        handoff,
        evacuates,
    )


def _check_slo_rules(config: SimulationConfig, named: tuple[tuple[Registry, str | None], ...]) -> None:
    """A run without SLO targets names no rule that works against them, as the rule says
    (``reads_slo_targets``); an unknown name is left to its own lookup."""
    if config.slo is not None:
        return
    for registry, name in named:
        if name in registry and registry.get(name).reads_slo_targets:
            raise ConfigError(
                f"{registry.key}: {name} works against per-tier SLO targets; set slo (slo.tiers or slo.ladder)"
            )


# scheduler.priority keys only one priority mode reads: under another they would be ignored
MODE_OPTIONS = {"load_targets": "load-target", "adaptive": "adaptive-headroom"}


def _check_mode_options(scheduler: SchedulerConfig, mode: str) -> None:
    chosen = "scheduler.priority.mode" if scheduler.priority.mode else f"the {scheduler.name} preset's"
    for key, reader in MODE_OPTIONS.items():
        if getattr(scheduler.priority, key) is not None and mode != reader:
            raise ConfigError(
                f"scheduler.priority.{key}: only the {reader} priority mode reads it; this run's "
                f"mode is {mode} ({chosen})"
            )


def _check_one_model(config: SimulationConfig, moves: str, instead: str = "") -> None:
    """A migrating scheduler may move a request between any two instances, and a hand-off
    moves one from a prefill pool to a decode pool; a KV cache means nothing to another
    model: pools of a run that moves KV serve one model (``moves``: why this run does)."""
    pools = config.instance_pools()
    for index, pool in enumerate(pools):
        if pool.model != pools[0].model:
            raise ConfigError(
                f"pools[{index}].model: {pool.model} differs from pools[0]'s {pools[0].model}, and "
                f"{moves}, which cannot move a KV cache between models; use one model" + (f", or {instead}" if instead else "")
            )


def pool_key(config: SimulationConfig, index: int) -> str:
    """The config key an error about pool ``index`` names: ``cluster`` or ``pools[i]``."""
    return f"pools[{index}]" if config.pools else "cluster"


def check_profiled_limits(config: SimulationConfig) -> None:
    """The batch limits the replica model's profiles cover, known from the profile grid
    without fitting or loading anything: a cap above them fails before the model is built
    (and before a first run's "fitting Vidur's predictor" notice)."""
    from sim.hardware.predictor_settings import MAX_DECODE_BATCH, MAX_TOKENS

    for index, pool in enumerate(config.instance_pools()):
        key = pool_key(config, index)
        _check_batch_cap(key, pool.max_batch_size, MAX_DECODE_BATCH)
        if pool.max_batched_tokens > MAX_TOKENS:
            raise ConfigError(
                f"{key}.max_batched_tokens: {pool.max_batched_tokens} exceeds the {MAX_TOKENS} "
                "tokens per iteration the replica model is profiled for"
            )


def _check_batch_cap(key: str, requested: int, profiled: int) -> None:
    if requested > profiled:
        raise ConfigError(
            f"{key}.max_batch_size: {requested} exceeds the {profiled} "
            "decode batch sizes the replica model is profiled for"
        )


def load_workload(config: SimulationConfig, root: Path | None) -> "Workload":
    from sim.workload import build_workload
    from sim.workload.build import with_urgency

    workload = build_workload(config.workload, config.seed, root)
    if config.slo is not None and config.slo.contract is not None:
        return with_urgency(workload, config.workload, config.seed)
    return workload


def replica_model_settings(pool: ClusterConfig) -> dict:
    """The keys of a pool the replica model depends on (what a cache of models is keyed by:
    the instance count or watermark do not change it; the batch cap sizes the profile run).
    The engine's CPU line left at its defaults is None: the pool's own GPU's measured line
    (its SKU entry's ``cpu_overheads``; the defaults are the A10 entry's, so an A10 pool
    gets the same numbers)."""
    defaults = OverheadConfig()
    at_defaults = (pool.overhead.base, pool.overhead.per_request) == (defaults.base, defaults.per_request)
    return {
        "model": pool.model,
        "device": pool.device,
        "tensor_parallel": pool.tensor_parallel,
        "block_size": pool.block_size,
        "gpu_memory_utilization": pool.gpu_memory_utilization,
        "max_batched_tokens": pool.max_batched_tokens,
        "max_batch_size": pool.max_batch_size,
        "kv_capacity_blocks": pool.kv_capacity_blocks,
        "overhead_base": None if at_defaults else pool.overhead.base,
        "overhead_per_request": None if at_defaults else pool.overhead.per_request,
        "overhead_per_output_token": pool.overhead.per_output_token,
        "decode_scale": pool.decode_scale,
        "prefill_scale": pool.prefill_scale,
        "kv_scale": pool.kv_scale,
        "engine": pool.engine,
        "async_scheduling": pool.async_scheduling,
    }


def load_model(pool: ClusterConfig, key: str = "cluster") -> BatchTimer:
    """The replica model of a pool's instances (``key``: the config key errors name)."""
    from sim.hardware import UnknownHardwareError, load_replica_model

    try:
        return load_replica_model(**replica_model_settings(pool))
    except UnknownHardwareError as exc:
        raise ConfigError(f"{key}: {exc}") from None
    except ValueError as exc:  # a limit outside what the profiles cover
        raise ConfigError(f"{key}: {exc}") from None


def load_transfer(config: SimulationConfig, pool: ClusterConfig, model: "ReplicaModel") -> TransferModel:
    """The KV transfer model of migrations out of a pool's instances."""
    from sim.hardware.transfer import load_transfer_model

    overrides = config.migration.transfer
    return load_transfer_model(
        model.layout,
        model.kv_bytes_per_token,
        pool.block_size,
        stage_latency=overrides.stage_latency,
        gpu_bandwidth=overrides.gpu_bandwidth,
        network_bandwidth=overrides.network_bandwidth,
    )


def workload_tiers(config: SimulationConfig, workload: "Workload") -> int:
    """K: the configured tiers, or more if the workload carries higher tiers."""
    return max(config.workload.priority.tiers, int(workload.tier.max(initial=0)) + 1)


def pool_limits(pool: ClusterConfig, model: BatchTimer, tiers: int, key: str = "cluster") -> LlumletLimits:
    """Per-instance vLLM limits of a pool; the batch cap must be one its replica model covers."""
    capacity = pool.kv_capacity_blocks or model.kv_capacity_blocks
    _check_batch_cap(key, pool.max_batch_size, getattr(model, "max_batch_size", pool.max_batch_size))
    return LlumletLimits(
        capacity_blocks=capacity,
        block_size=pool.block_size,
        max_batched_tokens=pool.max_batched_tokens,
        max_batch_size=pool.max_batch_size,
        watermark_blocks=int(pool.watermark_fraction * capacity),
        tiers=tiers,
        max_seq_len=getattr(model, "max_tokens", NO_SEQUENCE_LIMIT),
        chunked_prefill=pool.engine == "vllm-v1",
    )


def tier_headroom(config: SimulationConfig, limits: LlumletLimits) -> list[float]:
    headroom = config.scheduler.headroom
    return tier_headroom_blocks(
        limits.capacity_blocks,
        limits.tiers,
        h_max=headroom.h_max,
        decay=headroom.decay,
        lowest_tier_none=headroom.lowest_tier_none,
        max_total=headroom.max_total,
        explicit=headroom.blocks,
    )


@dataclass(frozen=True)
class InstancePool:
    """What every instance of one pool is built from: its replica model, limits, tier
    headroom, the transfer model of migrations out of it, and its llumlet's parts."""

    name: str
    config: PoolConfig
    model: BatchTimer
    limits: LlumletLimits
    headroom: list[float]
    transfer: Optional[TransferModel]
    batch_former: type[BatchFormer] = BatchFormer
    ledger: type[BlockLedger] = BlockLedger

    def adapt_headroom(self, fractions: list[float]) -> None:
        """Adaptive headroom moved each tier's H_p (as fractions of an instance's capacity):
        the pool's new instances start from it."""
        self.headroom[:] = [f * self.limits.capacity_blocks for f in fractions]


def build_pools(
    config: SimulationConfig,
    tiers: int,
    charges_headroom: bool,
    migrates: bool,
    load_pool_model: Callable[[PoolConfig, str], BatchTimer],
    transfer: Optional[TransferModel] = None,
) -> dict[str, InstancePool]:
    """Every pool of the config, by name, in order. ``transfer`` (tests) replaces each
    pool's own; without migration there is none."""
    pools = {}
    for index, pool in enumerate(config.instance_pools()):
        key = pool_key(config, index)
        engine_former = ENGINES.get(pool.engine, f"{key}.engine")
        former = BATCH_FORMERS.get(pool.batch_former or engine_former, f"{key}.batch_former")  # before a model loads
        if pool.async_scheduling and pool.engine != "vllm-v1":
            raise ConfigError(
                f"{key}.async_scheduling: only vLLM V1 schedules a step ahead; {key}.engine is {pool.engine!r}"
            )
        if pool.engine == "vllm-v1" and pool.max_batched_tokens < pool.max_batch_size:
            raise ConfigError(
                f"{key}.max_batched_tokens: vLLM V1 decodes every running request in every step, so a "
                f"step's {pool.max_batched_tokens} tokens must be at least max_batch_size ({pool.max_batch_size})"
            )
        ledger = LEDGERS.get(pool.ledger, f"{key}.ledger")
        model = load_pool_model(pool, key)
        limits = pool_limits(pool, model, tiers, key)
        if migrates and transfer is None:
            pool_transfer: Optional[TransferModel] = load_transfer(config, pool, model)
        else:
            pool_transfer = transfer
        headroom = tier_headroom(config, limits) if charges_headroom else []
        pools[pool.name] = InstancePool(pool.name, pool, model, limits, headroom, pool_transfer, former, ledger)
    return pools


def headroom_controller(
    config: SimulationConfig, tiers: int, pools: dict[str, InstancePool]
) -> HeadroomController:
    """The adaptive-headroom controller, starting from the first pool's fixed allocation as
    fractions of its capacity (the background tier, without headroom by design, stays so)."""
    first = next(iter(pools.values()))
    headroom = config.scheduler.headroom
    settings = config.scheduler.priority.adaptive or AdaptiveHeadroomConfig()
    assert config.slo is not None  # the config requires it for this mode
    return HeadroomController(
        [h / first.limits.capacity_blocks for h in first.headroom],
        config.slo.targets(tiers),
        config.slo.quantile,
        settings.step,
        headroom.max_total,
        fixed=[tiers - 1] if headroom.lowest_tier_none and headroom.blocks is None else [],
    )
