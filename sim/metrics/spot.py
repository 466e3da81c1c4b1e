"""What spot pools cost and lost in a run (the summary's ``spot`` section and its line): notices,
requests moved, recomputed or lost, the KV the evacuations copied, the extra latency of the
requests a notice touched, and the bill at spot prices beside the same instance-seconds at
on-demand prices (``sim.engine.spot``)."""

from __future__ import annotations

import math
from typing import Any, Optional

from sim.engine.migrations import MIGRATIONS
from sim.engine.spot import LOST, MOVED_OFF, NOTICE, RECOMPUTED, REPLACED, SPOT_LOG
from sim.hardware.prices import gpu_hour_prices
from sim.instance.migration import EVACUATION, MigrationOutcome
from sim.metrics.cost import gpus_per_instance, pool_money
from sim.metrics.sections import SUMMARY_SECTIONS, SummarySection, Tables
from sim.metrics.text import fmt


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def spot_summary(tables: Tables) -> Optional[dict[str, Any]]:
    """None: the run has no spot pool."""
    result = tables.result
    log = SPOT_LOG.of(result)
    if log is None:
        return None
    counts = {kind: sum(event.event == kind for event in log) for kind in (NOTICE, MOVED_OFF, RECOMPUTED, LOST, REPLACED)}
    evacuations = [m for m in MIGRATIONS.of(result) or () if m.kind == EVACUATION]
    moved = [m for m in evacuations if m.outcome is MigrationOutcome.COMMITTED]
    touched = {event.detail for event in log if event.event in (MOVED_OFF, RECOMPUTED, LOST)}
    touched |= {m.request_id for m in evacuations}
    requests = tables.requests
    finished = requests[requests["status"] == "finished"]
    hit = finished["id"].isin(touched)
    evacuated_e2e = float(finished.loc[hit, "e2e_latency"].mean()) if hit.any() else math.nan
    others_e2e = float(finished.loc[~hit, "e2e_latency"].mean()) if (~hit).any() else math.nan

    config = result.config
    pool_seconds = dict.fromkeys((pool.name for pool in config.instance_pools()), 0.0)
    for instance_id, (begin, end) in result.instance_lifetimes.items():
        pool_seconds[result.instance_pools[instance_id]] += end - begin
    gpus_of = {pool.name: gpus_per_instance(pool) for pool in config.instance_pools()}
    at_spot = pool_money(pool_seconds, gpus_of, gpu_hour_prices(config))
    on_demand = pool_money(pool_seconds, gpus_of, gpu_hour_prices(config, on_demand=True))
    per_thousand = 1000.0 / len(finished) if len(finished) else math.nan
    return {
        "notices": counts[NOTICE],
        "replacements": counts[REPLACED],
        "moved": len(moved),
        "evacuations_aborted": len(evacuations) - len(moved),
        "redispatched": counts[MOVED_OFF],  # queued requests sent elsewhere at a live notice
        "recomputed": counts[RECOMPUTED],
        "lost": counts[LOST],
        "kv_blocks_copied": sum(m.blocks for m in evacuations),  # aborted evacuations' copies too
        "moved_downtime_mean": _mean([m.downtime for m in moved]),
        "e2e_latency_mean_touched": evacuated_e2e,  # finished requests a notice touched
        "e2e_latency_mean_others": others_e2e,
        "extra_e2e_latency_touched": evacuated_e2e - others_e2e,
        "cost_at_spot_prices": at_spot,
        "cost_at_on_demand_prices": on_demand,
        "cost_per_1000_requests_at_spot_prices": at_spot * per_thousand,
        "cost_per_1000_requests_at_on_demand_prices": on_demand * per_thousand,
    }


def _lines(spot: Optional[dict[str, Any]], summary: dict[str, Any]) -> list[str]:
    if spot is None:
        return []
    return [
        f"spot: {spot['notices']} notices; {spot['moved']} requests moved "
        f"({spot['kv_blocks_copied']} KV blocks copied, downtime {fmt(spot['moved_downtime_mean'])} mean), "
        f"{spot['recomputed']} recomputed, {spot['redispatched']} queued sent elsewhere, {spot['lost']} lost; "
        f"touched requests' mean e2e {fmt(spot['extra_e2e_latency_touched'])} longer; cost "
        f"{spot['cost_at_spot_prices']:.4g} at spot prices, {spot['cost_at_on_demand_prices']:.4g} on demand"
    ]


SUMMARY_SECTIONS.add(SummarySection(
    "spot", after="cost", summarize=lambda result, tables: spot_summary(tables), report_lines=_lines
))
