"""What prefill/decode disaggregation did in a run: its hand-offs (how many, refused, how long
they took and waited, the bytes and the links they kept busy), each role's instances (GPU
busy share, KV in use) and adaptive PD's swaps of role (``sim.engine.handoffs``)."""

from __future__ import annotations

import math
from typing import Any, Optional

import pandas as pd

from sim.engine.result import SimulationResult
from sim.instance.migration import HANDOFF
from sim.metrics.distribution import describe


def pd_summary(
    result: SimulationResult, requests: pd.DataFrame, migrations: pd.DataFrame, instances: pd.DataFrame
) -> Optional[dict[str, Any]]:
    """The ``pd`` section of ``summary.json`` (None for a run without pool roles)."""
    if set(result.pool_roles.values()) <= {"mixed"}:
        return None
    role_of = {i: result.pool_roles[pool] for i, pool in result.instance_pools.items()}
    handoffs = migrations[migrations["kind"] == HANDOFF]
    committed = handoffs[handoffs["outcome"] == "committed"]
    aborted = handoffs[handoffs["outcome"] == "aborted"]
    first_token = requests.set_index("id")["first_token"] if len(requests) else pd.Series(dtype=float)
    waited = committed["committed_at"] - committed["request_id"].map(first_token)
    block_bytes = committed["source"].map(lambda i: result.pool_block_bytes.get(result.instance_pools[i], 0))
    makespan = max(result.end_time - (float(requests["arrival"].min()) if len(requests) else 0.0), 1e-9)
    in_flight = float((handoffs["end"].fillna(result.end_time) - handoffs["start"]).sum())
    prefills = [i for i, role in role_of.items() if role == "prefill"]
    carried = sum(result.link_busy_seconds.get(i, 0.0) for i in prefills)
    lifetime = sum(end - begin for begin, end in (result.instance_lifetimes[i] for i in prefills))
    return {
        "handoffs": {
            "committed": int(len(committed)),
            "refused": int((aborted["abort_reason"] == "destination_out_of_memory").sum()),
            "aborted": int(len(aborted)),
            "abort_reasons": {str(k): int(v) for k, v in aborted["abort_reason"].value_counts().items()},
            "seconds": describe(committed["end"] - committed["start"]),
            # first token to the decode instance holding the KV: what the second token waits
            "first_token_to_commit": describe(waited),
            "gigabytes": float((committed["blocks"] * block_bytes).sum()) / 1e9,
            # hand-offs in flight on average (waits for a link or a boundary included), and the
            # share of the prefill instances' lifetime their links carried a copy
            "mean_in_flight": in_flight / makespan,
            "link_utilisation": carried / lifetime if lifetime > 0 else math.nan,
        },
        "roles": _role_figures(result, role_of, instances),
        "role_swaps": dict(result.role_swaps),
    }


def _role_figures(result: SimulationResult, role_of: dict[int, str], instances: pd.DataFrame) -> dict[str, Any]:
    """Per role: instances, the share of their lifetime spent running iterations, KV in use."""
    figures = {}
    for role in sorted(set(role_of.values())):
        members = [i for i, r in role_of.items() if r == role]
        lifetime = sum(end - begin for begin, end in (result.instance_lifetimes[i] for i in members))
        busy = sum(result.instance_busy_seconds.get(i, 0.0) for i in members)
        samples = instances[instances["instance"].isin(members)] if len(instances) else instances
        capacity = samples["used_blocks"] + samples["reserved_blocks"] + samples["free_blocks"] if len(samples) else None
        figures[role] = {
            "instances": len(members),
            "busy_fraction": busy / lifetime if lifetime > 0 else 0.0,
            "kv_in_use": float(((capacity - samples["free_blocks"]) / capacity).mean()) if len(samples) else math.nan,
        }
    return figures
