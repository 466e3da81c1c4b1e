"""SLO attainment: the share of each tier's requests that met its first-token and per-token
targets, the requests meeting both per second (goodput) and per GPU-hour.

A request meets its TTFT target when its first token came within it (a request aborted or
still running after its first token is judged on that token), and its TPOT target when it
finished with a mean time per output token after the first within it (a one-token request
has no such time and meets it). Every request that arrived counts in the denominator: an
aborted or unfinished request that never produced a token meets neither.

Under an SLO contract (``slo.contract``) each request is judged by its own targets (at its
urgency on the contract's span), and the ``contract`` section judges each request's
*lateness* — the worse of its TTFT / its TTFT target and its TPOT / its TPOT target (∞ for a
request with no first token, or unfinished) — over the contract's own classes, which do not
move with K: a tail contract reads a class's P99 lateness, an attainment contract its P90 or
P95 (≤ 1: that share met both targets), a mean contract its mean. One run thus answers every
contract on that span and mix, and a contract twice as tight is the same lateness ≤ 0.5.

A request no instance can hold (aborted ``exceeds_instance_limits``: its prompt, or prompt
and output, past the instance's limits) is left out of the classes and counted apart
(``unservable``): it is aborted at any load under any scheduler, so counting it would make
a mean contract unmeetable for every scheme at every rate (its lateness is ∞) and measure
the trace against the hardware, not the scheduler. Its share is the contract's floor.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from sim.config import SloConfig, SloContractConfig, SloTargetConfig
from sim.workload.urgency import bands

LATENESS_STATS = {"mean": None, "p50": 50, "p90": 90, "p95": 95, "p99": 99}
UNSERVABLE = "exceeds_instance_limits"  # the abort reason of a request no instance can hold


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
    if slo.contract is not None:  # each request's own targets
        ttft, tpot = slo.contract.targets_at(requests["urgency"].to_numpy(dtype=float))
    else:
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
    section = {
        "quantile": slo.quantile,
        "overall": _shares(met_ttft, met_tpot, seconds, gpu_hours),
        "by_tier": by_tier,
        "tiers_met": sum(t["met"] for t in by_tier.values()),
    }
    if slo.contract is not None:
        section["contract"] = contract_summary(requests, slo.contract, ttft, tpot)
    return section


def lateness(requests: pd.DataFrame, ttft: np.ndarray, tpot: np.ndarray) -> np.ndarray:
    """Per request, the worse of its TTFT and TPOT over its targets (∞: never a first token,
    or not finished; a one-token request is judged on its TTFT alone)."""
    first_token = requests["prefill_latency"].to_numpy(dtype=float) / ttft
    per_token = requests["decode_latency_per_token"].to_numpy(dtype=float) / tpot
    finished = (requests["status"] == "finished").to_numpy()
    late = np.fmax(np.nan_to_num(first_token, nan=np.inf), np.nan_to_num(per_token, nan=0.0))
    return np.where(finished, late, np.inf)


def _quantile(lateness: np.ndarray, q: float) -> float:
    """The empirical q-th percentile: the least lateness that q% of the class is within, so
    "P90 <= 1" holds exactly when 90% met both targets. Interpolating would read NaN between
    a finite lateness and an infinite one (a request never served)."""
    return float(np.percentile(lateness, q, method="inverted_cdf"))


def contract_summary(
    requests: pd.DataFrame, contract: SloContractConfig, ttft: np.ndarray, tpot: np.ndarray
) -> dict[str, Any]:
    """Per class of the contract (its span in ``classes`` equal parts): requests, the share
    late by at most 1 (``attainment``), and the lateness's mean and percentiles, over the
    requests an instance can hold; ``unservable`` counts the others."""
    late = lateness(requests, ttft, tpot)
    class_of = bands(requests["urgency"].to_numpy(dtype=float), contract.classes)
    servable = (requests["abort_reason"] != UNSERVABLE).to_numpy()
    classes = {}
    for part in range(contract.classes):
        mine = late[(class_of == part) & servable]
        stats = {
            name: (float(np.mean(mine)) if q is None else _quantile(mine, q)) if mine.size else float("nan")
            for name, q in LATENESS_STATS.items()
        }
        classes[str(part)] = {
            "requests": int(mine.size),
            "attainment": float((mine <= 1).mean()) if mine.size else float("nan"),
            "lateness": stats,
        }
    return {"classes": classes, "unservable": int((~servable).sum())}
