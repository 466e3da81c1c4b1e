"""What prefill/decode disaggregation did in a run (the summary's ``pd`` section and its
lines): its hand-offs (how many, refused, how long they took and waited, the bytes and the
links they kept busy), each role's instances (GPU busy share, KV in use) and adaptive PD's
swaps of role (``sim.engine.handoffs``)."""

from __future__ import annotations

import math
from typing import Any, Optional

import pandas as pd

from sim.engine.handoffs import PD
from sim.engine.result import SimulationResult
from sim.instance.migration import HANDOFF
from sim.metrics.distribution import describe
from sim.metrics.sections import SUMMARY_SECTIONS, SummarySection, Tables
from sim.metrics.text import counts, fmt


def pd_summary(result: SimulationResult, tables: Tables) -> Optional[dict[str, Any]]:
    """The ``pd`` section of ``summary.json`` (None for a run without pool roles)."""
    disaggregated = PD.of(result)
    if disaggregated is None:
        return None
    requests, migrations = tables.requests, tables.migrations
    role_of = {i: disaggregated.pool_roles[pool] for i, pool in result.instance_pools.items()}
    handoffs = migrations[migrations["kind"] == HANDOFF]
    committed = handoffs[handoffs["outcome"] == "committed"]
    aborted = handoffs[handoffs["outcome"] == "aborted"]
    first_token = requests.set_index("id")["first_token"] if len(requests) else pd.Series(dtype=float)
    waited = committed["committed_at"] - committed["request_id"].map(first_token)
    block_bytes = committed["source"].map(lambda i: disaggregated.pool_block_bytes.get(result.instance_pools[i], 0))
    makespan = max(result.end_time - (float(requests["arrival"].min()) if len(requests) else 0.0), 1e-9)
    in_flight = float((handoffs["end"].fillna(result.end_time) - handoffs["start"]).sum())
    prefills = [i for i, role in role_of.items() if role == "prefill"]
    carried = sum(disaggregated.link_busy_seconds.get(i, 0.0) for i in prefills)
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
        "roles": _role_figures(result, role_of, tables.instances),
        "role_swaps": dict(disaggregated.role_swaps),
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


def _lines(pd_section: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """Hand-offs, then each role's instances, then adaptive PD's swaps when it made any."""
    handoffs = pd_section["handoffs"]
    others = {k: n for k, n in handoffs["abort_reasons"].items() if k != "destination_out_of_memory"}
    lines = [
        f"hand-offs: {handoffs['committed']} committed, {handoffs['refused']} refused by a full decode "
        f"instance" + (f", {sum(others.values())} aborted otherwise ({counts(others)})" if others else "")
        + f"; copy mean {fmt(handoffs['seconds']['mean'])} p99 {fmt(handoffs['seconds']['p99'])}; "
        f"first token to decode instance mean {fmt(handoffs['first_token_to_commit']['mean'])} "
        f"p99 {fmt(handoffs['first_token_to_commit']['p99'])}; {handoffs['gigabytes']:.1f} GB; "
        f"{handoffs['mean_in_flight']:.2f} in flight on average; "
        f"prefill instances' links busy {handoffs['link_utilisation'] * 100:.1f}%"
    ]
    roles = "; ".join(
        f"{role} {row['instances']} instances, GPU busy {row['busy_fraction'] * 100:.0f}%, "
        f"KV in use {row['kv_in_use'] * 100:.0f}%"
        for role, row in pd_section["roles"].items()
    )
    lines.append(f"roles: {roles}")
    swaps = pd_section["role_swaps"]
    if any(swaps.values()):
        lines.append(
            f"adaptive PD: {swaps['prefilled_on_decode']} requests served by a decode instance "
            f"(every prefill instance busy), {swaps['decoded_on_prefill']} decoded on their prefill instance, "
            f"{swaps.get('aggregated_on_prefill', 0)} moves packing decodes onto fewer prefill instances, "
            f"{swaps.get('eased_to_prefill', 0)} from busy decode instances to idle prefill instances"
        )
    return lines


SUMMARY_SECTIONS.add(SummarySection("pd", after="migration", summarize=pd_summary, report_lines=_lines))
