"""Prefix caching and conversations in the summary (its ``prefix_cache`` and ``sessions``
sections and their lines): what the caches found, and what the first token cost by turn.

Hit rates are the ledgers' (``sim.instance.prefix_cache``): prompt tokens (blocks) found
cached over prompt tokens (full prompt blocks) looked up at admission, recompute prefills
included; a tier's rate is over its requests' prefills. ``prefill_tokens_saved`` is the
tokens found, which no prefill computed. ``transfer``: the blocks of committed migrations
and hand-offs into caching instances, and (``not_copied``) those the destination already
held.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd

from sim.engine.prefix_result import PREFIX_CACHE, SHARING
from sim.engine.result import SimulationResult
from sim.metrics.distribution import describe
from sim.metrics.sections import SUMMARY_SECTIONS, SummarySection
from sim.metrics.text import fmt

TURN_GROUPS = (1, 2, 3, 4, 5)  # turns reported one by one; later ones together as "6+"


def _rate(found: float, looked_up: float) -> float:
    return found / looked_up if looked_up else float("nan")


def prefix_cache_summary(result: SimulationResult) -> Optional[dict[str, Any]]:
    """The caches' hits, evictions and transfers, in all, per instance and per tier (None:
    no instance caches)."""
    counters = PREFIX_CACHE.of(result)
    if counters is None:
        return None

    def total(key: str) -> int:
        return sum(int(c[key]) for c in counters.values())

    tiers: dict[int, list[int]] = {}
    for c in counters.values():
        for tier, counts in c["by_tier"].items():
            summed = tiers.setdefault(int(tier), [0, 0, 0, 0])
            for position, count in enumerate(counts):
                summed[position] += count
    return {
        "tokens": {"looked_up": total("prompt_tokens"), "hit": total("hit_tokens"),
                   "hit_rate": _rate(total("hit_tokens"), total("prompt_tokens"))},
        "blocks": {"looked_up": total("prompt_blocks"), "hit": total("hit_blocks"),
                   "hit_rate": _rate(total("hit_blocks"), total("prompt_blocks"))},
        "prefill_tokens_saved": total("hit_tokens"),
        "evictions": total("evictions"),
        "transfer": {"blocks": total("transfer_blocks"), "not_copied": total("transfer_hits")},
        "by_instance": {
            str(i): {
                "token_hit_rate": _rate(c["hit_tokens"], c["prompt_tokens"]),
                "block_hit_rate": _rate(c["hit_blocks"], c["prompt_blocks"]),
                "evictions": int(c["evictions"]),
            }
            for i, c in sorted(counters.items())
        },
        "by_tier": {
            str(tier): {"token_hit_rate": _rate(found, looked_up), "block_hit_rate": _rate(blocks_found, blocks)}
            for tier, (looked_up, found, blocks, blocks_found) in sorted(tiers.items())
        },
    }


def sessions_summary(result: SimulationResult, requests: pd.DataFrame) -> Optional[dict[str, Any]]:
    """Conversations: how many, and the first token's latency by turn over finished requests
    (None: the workload has no conversations)."""
    sharing = SHARING.of(result)
    if sharing is None or not (sharing.conversation >= 0).any():
        return None
    turn = sharing.turn[requests["id"].to_numpy(dtype=int)] if len(requests) else np.zeros(0, dtype=int)
    finished = requests["status"].to_numpy() == "finished"
    ttft = requests["prefill_latency"].to_numpy()
    by_turn: dict[str, dict[str, float]] = {}
    for label, chosen in [(str(t), turn == t) for t in TURN_GROUPS] + [(f"{TURN_GROUPS[-1] + 1}+", turn > TURN_GROUPS[-1])]:
        rows = chosen & finished
        if rows.any():
            by_turn[label] = {"requests": int(rows.sum()), **describe(pd.Series(ttft[rows]))}
    return {
        "conversations": int(len(np.unique(sharing.conversation[sharing.conversation >= 0]))),
        "turns": int((sharing.conversation >= 0).sum()),
        "ttft_by_turn": by_turn,
    }


def _cache_lines(cache: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """Prompt tokens and blocks found cached, evictions, transfers; by tier when there are several."""
    tokens, blocks, transfer = cache["tokens"], cache["blocks"], cache["transfer"]
    tiers = cache["by_tier"]
    per_tier = (
        "; by tier " + ", ".join(f"{tier} {row['token_hit_rate'] * 100:.1f}%" for tier, row in tiers.items())
        if len(tiers) > 1
        else ""
    )
    return [
        f"prefix cache: {tokens['hit_rate'] * 100:.1f}% of prompt tokens hit ({tokens['hit']:,} of "
        f"{tokens['looked_up']:,}: prefill tokens saved), {blocks['hit_rate'] * 100:.1f}% of full blocks; "
        f"{cache['evictions']:,} evictions; transfers found {transfer['not_copied']:,} of "
        f"{transfer['blocks']:,} blocks cached" + per_tier
    ]


def _sessions_lines(sessions: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """Conversations, turns, and the first token's latency by turn."""
    turns = ", ".join(
        f"{turn}: {fmt(row['mean'])} (p99 {fmt(row['p99'])})" for turn, row in sessions["ttft_by_turn"].items()
    )
    return [f"conversations: {sessions['conversations']} ({sessions['turns']} turns); TTFT by turn {turns}"]


SUMMARY_SECTIONS.add(SummarySection(
    "prefix_cache", after="pd", summarize=lambda result, tables: prefix_cache_summary(result), report_lines=_cache_lines
))
SUMMARY_SECTIONS.add(SummarySection(
    "sessions", after="prefix_cache", summarize=lambda result, tables: sessions_summary(result, tables.requests),
    report_lines=_sessions_lines,
))
