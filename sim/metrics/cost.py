"""What a run cost: instance-seconds, GPU-hours, money, and the K-tier project's
cost-per-latency.

GPUs per instance is the tensor-parallel degree (LLaMA-7B on one A10: 1; LLaMA-30B on 4×A10:
4), so GPU-hours compare clusters of different models fairly. A GPU-hour costs
``cost.gpu_hour_price`` in every pool, or with ``cost.sku_prices`` its pool's device SKU's
list price (``sim/hardware/skus.py``); a spot pool's costs its own ``spot.price``. Cost-per-latency is what one
finished request cost times the mean end-to-end latency: lower is better, and a scheduler
that halves either the money or the latency halves it (the K-tier project reports its
improvement over a baseline as 1 − ours / baseline).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import pandas as pd

from sim.config import ClusterConfig, SimulationConfig
from sim.hardware.prices import gpu_hour_prices


def gpus_per_instance(cluster: ClusterConfig) -> int:
    """The tensor-parallel degree: the configured one, else the model's profiled layout."""
    if cluster.tensor_parallel is not None:
        return cluster.tensor_parallel
    from sim.hardware.catalog import UnknownHardwareError, find_layout

    try:
        return find_layout(cluster.model, cluster.device, None).tensor_parallel
    except UnknownHardwareError:  # a test double's made-up model: one GPU per instance
        return 1


def cost_summary(
    config: SimulationConfig,
    pool_seconds: dict[str, float],
    makespan: float,
    e2e_latency: pd.Series,
) -> dict[str, Any]:
    """The ``cost`` section of a run summary from the instance-seconds of each pool (each
    instance billed at its own pool's GPUs); ``e2e_latency`` holds finished requests only."""
    pools = config.instance_pools()
    gpus_of = {pool.name: gpus_per_instance(pool) for pool in pools}
    instance_seconds = sum(pool_seconds.values())
    gpu_hours = sum(seconds * gpus_of[name] for name, seconds in pool_seconds.items()) / 3600.0
    # one number for one pool (as every single-pool run has reported it), else per pool
    gpus: int | dict[str, int] = gpus_of[pools[0].name] if len(pools) == 1 else gpus_of
    price: float | dict[str, float] = config.cost.gpu_hour_price
    if config.cost.sku_prices or any(pool.spot is not None for pool in pools):  # a price per pool
        prices = gpu_hour_prices(config)
        price = prices[pools[0].name] if len(pools) == 1 else prices
        money = pool_money(pool_seconds, gpus_of, prices)
    else:
        money = gpu_hours * config.cost.gpu_hour_price
    latencies = e2e_latency.dropna()
    per_request = money / len(latencies) if len(latencies) else math.nan
    mean_e2e = float(latencies.mean()) if len(latencies) else math.nan
    return {
        "instance_seconds": instance_seconds,
        "average_instances": instance_seconds / makespan,
        "gpus_per_instance": gpus,
        "gpu_hours": gpu_hours,
        "gpu_hour_price": price,
        "cost": money,
        "cost_per_request": per_request,
        "cost_per_latency": per_request * mean_e2e,
    }


def pool_money(pool_seconds: Mapping[str, float], gpus_of: Mapping[str, int], prices: Mapping[str, float]) -> float:
    """Each pool's instance-seconds at its GPUs and its price per GPU-hour."""
    return sum(seconds * gpus_of[name] * prices[name] for name, seconds in pool_seconds.items()) / 3600.0


def average_gpus(cost: Mapping[str, Any]) -> float:
    """GPUs in use on average, from a summary's ``cost`` section. One pool reports one
    ``gpus_per_instance``; several report it per pool, and then only the GPU-hours say how
    the instance-seconds split between them."""
    gpus = cost["gpus_per_instance"]
    if isinstance(gpus, Mapping):
        return cost["average_instances"] * cost["gpu_hours"] * 3600.0 / cost["instance_seconds"]
    return cost["average_instances"] * gpus


def describe_price(config: SimulationConfig) -> str:
    """``1.29 per GPU-hour`` (one price for every pool), else each pool's."""
    prices = gpu_hour_prices(config)
    if len(set(prices.values())) == 1:
        return f"{next(iter(prices.values())):g} per GPU-hour"
    return "per GPU-hour " + ", ".join(f"{price:g} ({name})" for name, price in prices.items())


def describe_instances(config: SimulationConfig) -> str:
    """``2 x llama-7b (1 GPU each)``, a ``+`` between pools."""
    parts = []
    for pool in config.instance_pools():
        gpus = gpus_per_instance(pool)
        parts.append(f"{pool.instances} x {pool.model} ({gpus} GPU{'s' if gpus > 1 else ''} each)")
    return " + ".join(parts)
