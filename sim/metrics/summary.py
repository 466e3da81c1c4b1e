"""The run summary: mean/P50/P90/P99 per latency metric, overall and per tier, SLO
attainment when the config sets SLOs, plus cost and the migration log's outcomes, churn and
time spent migrating."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

import sim.metrics.features  # noqa: F401  (every feature's section registered)
from sim import native
from sim.config import config_hash, to_dict
from sim.engine.result import SimulationResult
from sim.instance.migration import BALANCE
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
def latency_summary(requests: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Stats of each latency metric over finished requests."""
    finished = requests[requests["status"] == "finished"]
    return {metric: describe(finished[metric]) for metric in LATENCY_METRICS}


def churn(migrations: pd.DataFrame) -> dict[str, int]:
    """Migrations that undo each other: requests moved 3 or more times, and reversals, where
    a request's next migration takes it back to the instance it just left (path 0>3>0)."""
    committed = migrations[migrations["outcome"] == "committed"].sort_values(["committed_at", "id"])
    per_request = committed.groupby("request_id")
    counts = per_request.size()
    # a reversal: this migration's destination is the previous migration's source
    previous_source = per_request["source"].shift()
    reversal = committed["destination"] == previous_source
    return {
        "requests_migrated": int(len(counts)),
        "requests_migrated_3_or_more": int((counts >= 3).sum()),
        "reversals": int(reversal.sum()),
        "requests_with_reversal": int(committed.loc[reversal, "request_id"].nunique()),
    }


def migrating_fractions(
    migrations: pd.DataFrame, lifetimes: dict[int, tuple[float, float]]
) -> dict[int, float]:
    """Fraction of each instance's lifetime with a migration in flight to or from it.

    Intervals run from a record's start to its end (to the instance's end while still in
    flight); overlapping intervals are merged, so time is never counted twice."""
    intervals: dict[int, list[tuple[float, float]]] = {i: [] for i in lifetimes}
    for start, end, source, destination in migrations[
        ["start", "end", "source", "destination"]
    ].itertuples(index=False):
        for instance in (source, destination):
            begin, stop = lifetimes[instance]
            first, finish = max(start, begin), stop if math.isnan(end) else min(end, stop)
            if finish > first:
                intervals[instance].append((first, finish))
    fractions = {}
    for instance, spans in intervals.items():
        begin, stop = lifetimes[instance]
        covered, reach = 0.0, -math.inf
        for start, end in sorted(spans):
            if end > reach:
                covered += end - max(start, reach)
                reach = end
        fractions[instance] = covered / (stop - begin) if stop > begin else 0.0
    return fractions


def migration_summary(result: SimulationResult, migrations: pd.DataFrame) -> dict[str, Any]:
    """Outcomes, downtime, stages, churn and migrating time of the migration log."""
    committed = migrations[migrations["outcome"] == "committed"]
    aborted = migrations[migrations["outcome"] == "aborted"]
    downtime = describe(committed["downtime"].astype(float))
    fractions = migrating_fractions(migrations, result.instance_lifetimes)
    return {
        "total": int(len(migrations)),
        "committed": int(len(committed)),
        "aborted": int(len(aborted)),
        "in_flight": int((migrations["outcome"] == "in_flight").sum()),
        "abort_reasons": {str(k): int(v) for k, v in aborted["abort_reason"].value_counts().items()},
        "downtime": {key: downtime[key] for key in ("mean", "p50", "p99", "count")},
        "mean_stages": float(committed["stages"].mean()) if len(committed) else math.nan,
        "mean_blocks": float(committed["blocks"].mean()) if len(committed) else math.nan,
        "churn": churn(migrations),
        "migrating_fraction": {
            "mean": float(np.mean(list(fractions.values()))) if fractions else 0.0,
            "per_instance": {str(i): f for i, f in sorted(fractions.items())},
        },
    }


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
    """Everything a researcher reads first; written as ``summary.json``. ``migration`` is
    the scheduler's balance migrations; prefill-to-decode hand-offs (and adaptive PD's
    moves, counted in its role swaps) are under ``pd``."""
    if migrations is None:
        migrations = migration_table(result)
    balance = migrations["kind"] == BALANCE
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
        "migration": migration_summary(result, migrations[balance]),
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
        # the part of decoding spent waiting behind prefill iterations (every prefill step
        # stalls its instance's running requests: vLLM 0.1.2 batches no prefill with decodes)
        "decode_stall": {
            "request_seconds": result.decode_stall_seconds,
            "per_output_token": result.decode_stall_seconds / max(float(finished["output_tokens"].sum()), 1.0),
        },
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
