"""Seeds as replicates: means over seeds with bootstrap confidence intervals, and paired
comparisons between variants.

Every variant of a cell runs on the same seeds, and a seed fixes the request stream (lengths,
arrivals, tiers: ``sim.workload``), so variant A at seed s and variant B at seed s serve the
*same requests* — common random numbers. A comparison is then made per seed (a ratio or a
difference) before averaging, which removes the between-seed noise both share.

Intervals are percentile bootstrap intervals of the mean over seeds
(``scipy.stats.bootstrap``), with a fixed random state so an aggregate is reproducible.
With one seed there is no interval (NaN); with few seeds it is wide and optimistic —
read it as a hint, and add seeds before claiming a difference.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

LEVEL = 0.95
RESAMPLES = 2000
RANDOM_STATE = 0
_CHUNK = 500  # rows bootstrapped per vectorised call (memory: rows x resamples x seeds)

# the index columns the aggregate summarises: latency mean/P50/P99 (overall and per tier),
# cost, throughput, SLO attainment and goodput (overall and per tier), request and migration
# counts, fragmentation, scaling, fault losses
AGGREGATED = tuple(
    re.compile(pattern)
    for pattern in (
        r"latency(_by_tier\.\d+)?\.[a-z0-9_]+\.(mean|p50|p99)",
        r"cost\.(instance_seconds|average_instances|gpu_hours|cost|cost_per_request|cost_per_latency)",
        r"throughput\.[a-z_]+",
        r"slo\.(overall|by_tier\.\d+)\.(ttft_attainment|tpot_attainment|attainment|goodput|attainment_per_gpu_hour)",
        r"slo\.tiers_met",
        r"requests\.(finished|aborted|unfinished|preempted|preemptions|migrated|migrations)",
        r"migration\.(committed|aborted|mean_stages|downtime\.(mean|p50|p99))",
        r"migration\.churn\.[a-z_0-9]+",
        r"migration\.migrating_fraction\.mean",
        r"fragmentation\.mean_fraction",
        r"scaling\.(min_instances|max_instances|actions\.scale_out|actions\.scale_in)",
        r"faults\.(lost_requests|retried_requests|leaked_blocks)",
        r"faults\.faults\.\d+\.(p99_prefill_before|p99_prefill_during|recovery_seconds)",
    )
)


def coordinate_columns(index: pd.DataFrame) -> list[str]:
    """The columns that name a cell: those before ``seed`` in an index."""
    return list(index.columns[: index.columns.get_loc("seed")])


def metric_columns(index: pd.DataFrame) -> list[str]:
    """The index columns ``aggregate`` summarises, in index order."""
    return [c for c in index.columns if any(p.fullmatch(c) for p in AGGREGATED)]


def bootstrap_ci(
    samples: np.ndarray,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    random_state: int = RANDOM_STATE,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of the mean of each row of ``samples`` (rows x n, finite).

    Rows with fewer than two values, or all equal, get the degenerate answer directly
    (NaN, or the value itself), which the bootstrap cannot compute.
    """
    samples = np.atleast_2d(np.asarray(samples, dtype=float))
    rows, n = samples.shape
    low = np.full(rows, np.nan)
    high = np.full(rows, np.nan)
    if n < 2 or rows == 0:
        return low, high
    constant = np.all(samples == samples[:, :1], axis=1)
    low[constant] = high[constant] = samples[constant, 0]
    varying = np.flatnonzero(~constant)
    rng = np.random.default_rng(random_state)
    for start in range(0, len(varying), _CHUNK):
        chunk = varying[start : start + _CHUNK]
        result = scipy_stats.bootstrap(
            (samples[chunk],),
            np.mean,
            axis=-1,
            vectorized=True,
            n_resamples=resamples,
            confidence_level=level,
            method="percentile",
            rng=rng,
        )
        low[chunk] = result.confidence_interval.low
        high[chunk] = result.confidence_interval.high
    return low, high


def _summarise(
    groups: list[tuple[tuple, pd.DataFrame]], metrics: Sequence[str]
) -> dict[str, np.ndarray]:
    """Mean and interval per (group, metric), bootstrapping rows of equal sample size together."""
    out = {}
    for metric in metrics:
        series = [frame[metric].to_numpy(dtype=float) for _, frame in groups]
        finite = [values[np.isfinite(values)] for values in series]
        mean = np.array([values.mean() if values.size else np.nan for values in finite])
        low = np.full(len(groups), np.nan)
        high = np.full(len(groups), np.nan)
        for size in {values.size for values in finite}:
            rows = [i for i, values in enumerate(finite) if values.size == size]
            if size >= 2:
                low[rows], high[rows] = bootstrap_ci(np.stack([finite[i] for i in rows]))
        out[metric], out[f"{metric}.ci_low"], out[f"{metric}.ci_high"] = mean, low, high
    return out


def _groups(frame: pd.DataFrame, by: list[str]) -> list[tuple[tuple, pd.DataFrame]]:
    if not by:
        return [((), frame)]
    return [
        (key if isinstance(key, tuple) else (key,), part)
        for key, part in frame.groupby(by, sort=False, dropna=False)
    ]


def aggregate(index: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per cell: its coordinates, ``seeds`` (runs), and for each metric the mean over
    seeds with its bootstrap interval (``<metric>``, ``<metric>.ci_low``, ``<metric>.ci_high``)."""
    columns = coordinate_columns(index)
    metrics = list(metrics) if metrics is not None else metric_columns(index)
    groups = _groups(index, columns)
    frame = pd.DataFrame([dict(zip(columns, key)) for key, _ in groups], columns=columns)
    frame["seeds"] = [len(part) for _, part in groups]
    summary = _summarise(groups, metrics)
    return pd.concat([frame, pd.DataFrame(summary)], axis=1)


def paired(
    index: pd.DataFrame, metric: str, group: str, baseline: str, how: str = "ratio"
) -> pd.DataFrame:
    """Each variant of ``group`` against ``baseline`` on the same cell and seed (same
    requests), then averaged over seeds with a bootstrap interval.

    ``how="ratio"``: value / baseline (below 1 = lower than the baseline; a latency speed-up
    is its inverse); ``how="difference"``: value − baseline. Returns one row per cell and
    variant: coordinates, ``seeds``, ``<how>``, ``<how>.ci_low``, ``<how>.ci_high``.
    """
    if how not in ("ratio", "difference"):
        raise ValueError(f"how: 'ratio' or 'difference', got {how!r}")
    columns = coordinate_columns(index)
    if group not in columns:
        raise KeyError(f"{group!r} is not a coordinate of this index ({', '.join(columns)})")
    others = [c for c in columns if c != group]
    key = [*others, "seed"]
    reference = index.loc[index[group] == baseline, [*key, metric]].rename(
        columns={metric: "_base"}
    )
    if reference.empty:
        raise KeyError(f"no runs with {group} = {baseline!r}")
    merged = index[[*columns, "seed", metric]].merge(reference, on=key, how="inner")
    value = merged[metric].astype(float)
    merged[how] = value / merged["_base"] if how == "ratio" else value - merged["_base"]
    order = [*others, group]
    groups = _groups(merged, order)
    frame = pd.DataFrame([dict(zip(order, k)) for k, _ in groups], columns=order)
    frame["seeds"] = [len(part) for _, part in groups]
    return pd.concat([frame, pd.DataFrame(_summarise(groups, [how]))], axis=1)
