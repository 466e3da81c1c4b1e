"""The run summary: mean/P50/P90/P99 per latency metric, overall and per tier, SLO
attainment when the config sets SLOs, cost, throughput and the run's own figures; each
feature's section (migration, PD, prefix cache, …) placed among them from its own module
(``sim.metrics.sections``)."""

from __future__ import annotations

import math
from typing import Any, Optional

import pandas as pd

import sim.metrics.features  # noqa: F401  (every feature's section registered)
from sim import native
from sim.config import SimulationConfig, config_hash, to_dict
from sim.config.prerequisites import check as check_prerequisites
from sim.engine.result import SimulationResult
from sim.metrics.attainment import attainment_summary
from sim.metrics.cost import cost_summary
from sim.metrics.distribution import describe
from sim.metrics.sections import Tables, with_sections
from sim.metrics.tables import migration_table

LATENCY_METRICS = (
    "prefill_latency",
    "decode_latency_per_token",
    "e2e_latency",
    "queueing_delay",
    "preemption_loss",
)
def engine_note(config: SimulationConfig) -> Optional[str]:
    """The pools that run another serving engine than their GPU's deployments do in what
    llumsim models of it (today's GPUs on the Llumnix artifact's 2023 engine, say): said once
    in the run's printout, so that nobody reads such a run as today's vLLM (None: none)."""
    from sim.hardware.catalog import find_layout

    notes = []
    for pool in config.instance_pools():
        deployed = find_layout(pool.model, pool.device, pool.tensor_parallel).device_sku.deployed_engine
        if pool.engine != deployed:
            notes.append(f"pool {pool.name} runs {pool.device} on {pool.engine}; its deployments run {deployed}")
    return "; ".join(notes) or None


def latency_summary(requests: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Stats of each latency metric over finished requests."""
    finished = requests[requests["status"] == "finished"]
    return {metric: describe(finished[metric]) for metric in LATENCY_METRICS}


def mean_kv_occupancy(cluster: pd.DataFrame, capacity_blocks: int) -> float:
    """The mean, over samples, of the share of the reporting instances' KV blocks in use
    (allocated or reserved for an inbound migration)."""
    reporting = (cluster["serving"] + cluster["draining"]) * capacity_blocks
    busy = reporting > 0
    if not busy.any():
        return 0.0
    return float((1 - cluster["free_blocks"][busy] / reporting[busy]).mean())


def summarize(
    result: SimulationResult,
    requests: pd.DataFrame,
    cluster: pd.DataFrame,
    migrations: pd.DataFrame | None = None,
    instances: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """Everything a researcher reads first; written as ``summary.json``: the figures every
    run has, and each feature's section (``sim.metrics.features``) after the key it names.
    ``instances``, when not given, is built only if a section reads it."""
    if migrations is None:
        migrations = migration_table(result)
    finished = requests[requests["status"] == "finished"]
    aborted = requests[requests["status"] == "aborted"]
    start = float(requests["arrival"].min()) if len(requests) else 0.0
    makespan = max(result.end_time - start, 1e-9)
    pool_seconds = dict.fromkeys((pool.name for pool in result.config.instance_pools()), 0.0)
    for instance_id, (begin, end) in result.instance_lifetimes.items():
        pool_seconds[result.instance_pools[instance_id]] += end - begin
    tiers = sorted(int(t) for t in requests["tier"].unique()) if len(requests) else []
    config = result.config
    cost = cost_summary(config, pool_seconds, makespan, finished["e2e_latency"])
    core = {
        "name": result.config.name,
        "config_hash": config_hash(result.config),
        "scheduler": result.config.scheduler.name,
        "engines": {pool.name: pool.engine for pool in result.config.instance_pools()},
        "engine_note": engine_note(result.config),
        # options set without the option they need, which had no effect (sim.config.prerequisites)
        "ignored": check_prerequisites(result.config),
        "workload": result.workload_description,
        "interrupted": result.interrupted,
        "requests": {
            "total": int(len(requests)),
            "finished": int(len(finished)),
            "aborted": int(len(aborted)),
            "abort_reasons": {str(k): int(v) for k, v in aborted["abort_reason"].value_counts().items()},
            "unfinished": int((requests["status"] == "unfinished").sum()),
            # in the workload but not arrived when the run stopped (time limit, Ctrl-C)
            "not_arrived": result.not_arrived,
            "preempted": int((requests["preemptions"] > 0).sum()),
            "preemptions": int(requests["preemptions"].sum()),
            "migrated": int((requests["migrations"] > 0).sum()),
            "migrations": int(requests["migrations"].sum()),
        },
        "latency": latency_summary(requests),
        "latency_by_tier": {
            str(tier): latency_summary(requests[requests["tier"] == tier]) for tier in tiers
        },
        "throughput": {
            "requests_per_s": len(finished) / makespan,
            "output_tokens_per_s": float(finished["output_tokens"].sum()) / makespan,
        },
        "cost": cost,
        "slo": attainment_summary(requests, config.slo, config.workload.priority.tiers, makespan, cost["gpu_hours"])
        if config.slo is not None
        else None,
        "fragmentation": {
            "mean_fraction": float(cluster["fragmented_fraction"].mean()) if len(cluster) else 0.0,
        },
        "memory": {"mean_kv_occupancy": mean_kv_occupancy(cluster, result.capacity_blocks)},
        # INV-4 idle-view: instance-seconds idle while the scheduler's view said busy (0 unless
        # an idle instance went unheard past its next report; sim.engine.idle_watch)
        "scheduler_view": {
            "idle_stretches": result.idle_stretches,
            "stale_idle_instance_seconds": result.stale_idle_seconds,
        },
        "lengths": {
            field: {
                "mean": float(requests[field].mean()) if len(requests) else math.nan,
                "p95": float(requests[field].quantile(0.95)) if len(requests) else math.nan,
            }
            for field in ("prompt_tokens", "output_tokens")
        },
        "simulation": {
            "simulated_seconds": result.end_time,
            "wall_seconds": result.wall_seconds,
            "batches": result.batches,
            "requests_per_wall_second": len(requests) / max(result.wall_seconds, 1e-9),
            "engine": native.status(),  # what the wall seconds were measured on
            "kv_capacity_blocks": result.capacity_blocks,
            "leaked_blocks": result.leaked_blocks,
        },
        "config": to_dict(result.config),
    }
    return with_sections(core, result, Tables(result, requests, cluster, migrations, instances))
