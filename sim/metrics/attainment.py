"""SLO attainment: the share of each tier's requests that met its first-token and per-token
targets, the requests meeting both per second (goodput) and per GPU-hour.

A request meets its TTFT target when its first token came within it (a request aborted or
still running after its first token is judged on that token), and its TPOT target when it
finished with a mean time per output token after the first within it (a one-token request
has no such time and meets it). Every request that arrived counts in the denominator: an
aborted or unfinished request that never produced a token meets neither.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from sim.config import SloConfig, SloTargetConfig


def meets_targets(requests: pd.DataFrame, ttft: np.ndarray, tpot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per request (row), whether it met ``ttft`` and ``tpot`` (arrays aligned with the rows)."""
    first_token = requests["prefill_latency"].to_numpy(dtype=float)
    per_token = requests["decode_latency_per_token"].to_numpy(dtype=float)
    finished = (requests["status"] == "finished").to_numpy()
    met_ttft = first_token <= ttft  # NaN (no first token) compares False
    met_tpot = finished & (np.isnan(per_token) | (per_token <= tpot))
    return met_ttft, met_tpot


def _shares(met_ttft: np.ndarray, met_tpot: np.ndarray, seconds: float, gpu_hours: float) -> dict[str, Any]:
    count = int(met_ttft.size)
    both = int((met_ttft & met_tpot).sum())
    attainment = both / count if count else float("nan")
    return {
        "requests": count,
        "ttft_attainment": float(met_ttft.mean()) if count else float("nan"),
        "tpot_attainment": float(met_tpot.mean()) if count else float("nan"),
        "attainment": attainment,
        "goodput": both / seconds,
        "attainment_per_gpu_hour": attainment / gpu_hours if gpu_hours > 0 else float("nan"),
    }


def attainment_summary(
    requests: pd.DataFrame, slo: SloConfig, tiers: int, seconds: float, gpu_hours: float
) -> dict[str, Any]:
    """The ``slo`` section of a run summary: overall and per tier, the shares meeting TTFT,
    TPOT and both (``attainment``), goodput over ``seconds``, attainment per GPU-hour, and
    whether each tier's attainment reaches ``slo.quantile`` (``met``)."""
    targets: Sequence[SloTargetConfig] = slo.targets(tiers)
    tier_of = requests["tier"].to_numpy(dtype=int)
    ttft = np.array([targets[t].ttft for t in tier_of], dtype=float)
    tpot = np.array([targets[t].tpot for t in tier_of], dtype=float)
    met_ttft, met_tpot = meets_targets(requests, ttft, tpot)
    by_tier = {}
    for tier, target in enumerate(targets):
        rows = tier_of == tier
        shares = _shares(met_ttft[rows], met_tpot[rows], seconds, gpu_hours)
        by_tier[str(tier)] = {
            "ttft_target": target.ttft,
            "tpot_target": target.tpot,
            **shares,
            "met": bool(shares["attainment"] >= slo.quantile),  # NaN (no requests) is not met
        }
    return {
        "quantile": slo.quantile,
        "overall": _shares(met_ttft, met_tpot, seconds, gpu_hours),
        "by_tier": by_tier,
        "tiers_met": sum(t["met"] for t in by_tier.values()),
    }
