"""The run summary: mean/P50/P90/P99 per latency metric, overall and per tier, plus cost."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from sim.config import config_hash, to_dict
from sim.engine.simulation import SimulationResult

LATENCY_METRICS = (
    "prefill_latency",
    "decode_latency_per_token",
    "e2e_latency",
    "queueing_delay",
    "preemption_loss",
)
PERCENTILES = (50, 90, 99)


def describe(values: pd.Series) -> dict[str, float]:
    """mean, p50, p90, p99 of the non-missing values (NaN when there are none)."""
    data = values.dropna().to_numpy(dtype=float)
    if data.size == 0:
        return {"mean": math.nan, **{f"p{p}": math.nan for p in PERCENTILES}, "count": 0}
    stats = {"mean": float(data.mean())}
    stats.update({f"p{p}": float(v) for p, v in zip(PERCENTILES, np.percentile(data, PERCENTILES))})
    stats["count"] = int(data.size)
    return stats


def latency_summary(requests: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Stats of each latency metric over finished requests."""
    finished = requests[requests["status"] == "finished"]
    return {metric: describe(finished[metric]) for metric in LATENCY_METRICS}


def summarize(
    result: SimulationResult, requests: pd.DataFrame, cluster: pd.DataFrame
) -> dict[str, Any]:
    """Everything a researcher reads first; written as ``summary.json``."""
    finished = requests[requests["status"] == "finished"]
    aborted = requests[requests["status"] == "aborted"]
    start = float(requests["arrival"].min()) if len(requests) else 0.0
    makespan = max(result.end_time - start, 1e-9)
    instance_seconds = sum(end - begin for begin, end in result.instance_lifetimes.values())
    tiers = sorted(int(t) for t in requests["tier"].unique()) if len(requests) else []
    return {
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
        "cost": {
            "instance_seconds": instance_seconds,
            "average_instances": instance_seconds / makespan,
        },
        "fragmentation": {
            "mean_fraction": float(cluster["fragmented_fraction"].mean()) if len(cluster) else 0.0,
        },
        "simulation": {
            "simulated_seconds": result.end_time,
            "wall_seconds": result.wall_seconds,
            "batches": result.batches,
            "requests_per_wall_second": len(requests) / max(result.wall_seconds, 1e-9),
            "kv_capacity_blocks": result.capacity_blocks,
        },
        "config": to_dict(result.config),
    }
