"""Seeds as replicates: means over seeds with 95% intervals, and paired comparisons between
variants.

Every variant of a cell runs on the same seeds, and a seed fixes the request stream (lengths,
arrivals, tiers: ``sim.workload``), so variant A at seed s and variant B at seed s serve the
*same requests* — common random numbers. A comparison is then made per seed (a log-ratio or a
difference) before averaging, which removes the between-seed noise both share.

Intervals are Student-t intervals of the mean over seeds (``scipy.stats.t``): mean ± t(n−1)·s/√n.
A sweep has 3–10 seeds, and with that few the t interval is the one whose coverage holds:
a normal (z) interval, a percentile bootstrap or the min–max of the seeds all assume the
sample's spread is the population's and come out too narrow (with n = 3, ~81%, ~74% and 75%
coverage for a nominal 95%; ``tests/test_sweep_stats.py`` measures it). The percentile
bootstrap (``scipy.stats.bootstrap``, fixed random state) is offered for rows with at least
``BOOTSTRAP_MIN_POINTS`` values, where it no longer under-covers and does not assume the mean is
normally distributed; below that a row gets the t interval whatever was asked.

Ratios are averaged on the log scale: ``paired(..., how="ratio")`` is the geometric mean of the
per-seed ratios, exp(mean log(value / baseline)), with the t interval of the log-ratios mapped
back. A log-ratio is symmetric (A/B is exactly the inverse of B/A, intervals included), and a
latency ratio is closer to log-normal than to normal.
"""

from __future__ import annotations

import math
import re
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

LEVEL = 0.95
RESAMPLES = 2000
RANDOM_STATE = 0
# fewest values a percentile bootstrap is used on: below ~20 its intervals are too narrow (a
# resample of n values holds on average 63% of them, so it sees less spread than there is)
BOOTSTRAP_MIN_POINTS = 20
METHODS = ("t", "bootstrap")
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


def _degenerate(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NaN bounds for every row, the value itself for rows all equal; and which rows vary."""
    rows, n = samples.shape
    low = np.full(rows, np.nan)
    high = np.full(rows, np.nan)
    if n < 2 or rows == 0:
        return low, high, np.zeros(rows, dtype=bool)
    constant = np.all(samples == samples[:, :1], axis=1)
    low[constant] = high[constant] = samples[constant, 0]
    return low, high, ~constant


def t_interval(samples: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Student-t interval of the mean of each row of ``samples`` (rows x n, finite):
    mean ± t(level, n−1)·s/√n. Rows with fewer than two values get NaN, rows all equal the
    value itself."""
    samples = np.atleast_2d(np.asarray(samples, dtype=float))
    low, high, varying = _degenerate(samples)
    n = samples.shape[1]
    if varying.any():
        part = samples[varying]
        mean = part.mean(axis=1)
        half = scipy_stats.t.ppf(0.5 + level / 2, n - 1) * part.std(axis=1, ddof=1) / np.sqrt(n)
        low[varying], high[varying] = mean - half, mean + half
    return low, high


def bootstrap_ci(
    samples: np.ndarray,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    random_state: int = RANDOM_STATE,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of the mean of each row of ``samples`` (rows x n, finite).
    Too narrow below ``BOOTSTRAP_MIN_POINTS`` values (``row_mean_intervals`` does not use it there).

    Rows with fewer than two values, or all equal, get the degenerate answer directly
    (NaN, or the value itself), which the bootstrap cannot compute.
    """
    samples = np.atleast_2d(np.asarray(samples, dtype=float))
    low, high, varying = _degenerate(samples)
    varying = np.flatnonzero(varying)
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


def row_mean_intervals(
    samples: np.ndarray, method: str = "t", level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """The interval of each row's mean by ``method``: ``t`` (Student-t), or ``bootstrap``
    (percentile bootstrap), which falls back to ``t`` for rows of fewer than
    ``BOOTSTRAP_MIN_POINTS`` values, where it would be too narrow."""
    if method not in METHODS:
        raise ValueError(f"method: one of {', '.join(METHODS)}, got {method!r}")
    samples = np.atleast_2d(np.asarray(samples, dtype=float))
    if method == "bootstrap" and samples.shape[1] >= BOOTSTRAP_MIN_POINTS:
        return bootstrap_ci(samples, level)
    return t_interval(samples, level)


def mean_and_t_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """One sample's mean and its Student-t interval (NaN bounds with fewer than two values),
    as plain numbers for tables built row by row (``row_mean_intervals`` takes many rows)."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean()) if values.size else math.nan
    low, high = t_interval(values.reshape(1, -1), level)
    return mean, float(low[0]), float(high[0])


def _summarise(
    groups: list[tuple[tuple, pd.DataFrame]],
    metrics: Sequence[str],
    method: str = "t",
    log: bool = False,
) -> dict[str, np.ndarray]:
    """Mean and interval per (group, metric), intervals of rows of equal sample size computed
    together. ``log``: average log(value) and map the mean and the interval back with exp
    (the geometric mean; values must be positive)."""
    out = {}
    for metric in metrics:
        series = [frame[metric].to_numpy(dtype=float) for _, frame in groups]
        if log:
            with np.errstate(divide="ignore", invalid="ignore"):
                series = [np.log(np.where(values > 0, values, np.nan)) for values in series]
        finite = [values[np.isfinite(values)] for values in series]
        mean = np.array([values.mean() if values.size else np.nan for values in finite])
        low = np.full(len(groups), np.nan)
        high = np.full(len(groups), np.nan)
        for size in {values.size for values in finite}:
            rows = [i for i, values in enumerate(finite) if values.size == size]
            if size >= 2:
                low[rows], high[rows] = row_mean_intervals(np.stack([finite[i] for i in rows]), method)
        if log:
            mean, low, high = np.exp(mean), np.exp(low), np.exp(high)
        out[metric], out[f"{metric}.ci_low"], out[f"{metric}.ci_high"] = mean, low, high
    return out


def _groups(frame: pd.DataFrame, by: list[str]) -> list[tuple[tuple, pd.DataFrame]]:
    if not by:
        return [((), frame)]
    return [
        (key if isinstance(key, tuple) else (key,), part)
        for key, part in frame.groupby(by, sort=False, dropna=False)
    ]


def ratio_interval(
    ratios: np.ndarray, method: str = "t", level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Geometric mean of each row of positive ``ratios`` (rows x n) and its interval: the
    interval of the mean log-ratio, mapped back with exp."""
    logs = np.log(np.atleast_2d(np.asarray(ratios, dtype=float)))
    low, high = row_mean_intervals(logs, method, level)
    return np.exp(logs.mean(axis=1)), np.exp(low), np.exp(high)


def aggregate(
    index: pd.DataFrame, metrics: Sequence[str] | None = None, method: str = "t", log: bool = False
) -> pd.DataFrame:
    """One row per cell: its coordinates, ``seeds`` (runs), and for each metric the mean over
    seeds with its interval (``<metric>``, ``<metric>.ci_low``, ``<metric>.ci_high``; Student-t
    unless ``method="bootstrap"`` and a cell has enough seeds).

    ``log``: the geometric mean, with the interval of the mean log mapped back, for a log
    axis: it is never below zero (an arithmetic t interval of a heavy tail often is) and is
    symmetric on that axis. Values ≤ 0, which a log axis cannot show, are left out as in
    ``paired`` ratios."""
    columns = coordinate_columns(index)
    metrics = list(metrics) if metrics is not None else metric_columns(index)
    groups = _groups(index, columns)
    frame = pd.DataFrame([dict(zip(columns, key)) for key, _ in groups], columns=columns)
    frame["seeds"] = [len(part) for _, part in groups]
    summary = _summarise(groups, metrics, method, log=log)
    return pd.concat([frame, pd.DataFrame(summary)], axis=1)


def paired(
    index: pd.DataFrame,
    metric: str,
    group: str,
    baseline: str,
    how: str = "ratio",
    method: str = "t",
) -> pd.DataFrame:
    """Each variant of ``group`` against ``baseline`` on the same cell and seed (same
    requests), then averaged over seeds with a Student-t interval (``method``: see
    ``row_mean_intervals``).

    ``how="ratio"``: value / baseline, averaged as log-ratios (the geometric mean; below 1 =
    lower than the baseline; a latency speed-up is exactly its inverse); ``how="difference"``:
    value − baseline, averaged as is. Returns one row per cell and variant: coordinates,
    ``seeds``, ``<how>``, ``<how>.ci_low``, ``<how>.ci_high``.
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
    summary = _summarise(groups, [how], method, log=how == "ratio")
    return pd.concat([frame, pd.DataFrame(summary)], axis=1)


# --------------------------------------------------------------------------- verdicts
# A paired ratio's interval answers one of four ways. "Equivalent" is an answer a planner can
# use (the two carry the same load within ±delta), so "unsettled" is left only to intervals too
# wide to say either. Each study states its delta; this is the default.
EQUIVALENCE_DELTA = 0.05


def ratio_verdict(low: float, high: float, delta: float = EQUIVALENCE_DELTA) -> str:
    """Where a ratio's interval ``[low, high]`` lies: ``above`` or ``below`` 1 (it excludes
    1), ``equivalent`` (it straddles 1 and lies wholly inside ``[1 - delta, 1 + delta]``),
    ``unsettled`` (it straddles 1 and is wider than that), or ``none`` (no interval).

    A side that excludes 1 wins over equivalence: the interval then says which way the
    difference goes, however small. The interval's coverage makes the verdict's error rate:
    it names a wrong side or a false equivalence only when the interval misses the true ratio
    (``tests/test_sweep_stats.py`` measures it under the sequential-seed rule)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "none"
    if low > 1:
        return "above"
    if high < 1:
        return "below"
    return "equivalent" if 1 - delta <= low and high <= 1 + delta else "unsettled"


# --------------------------------------------------------------------------- sequential seeds
# A comparison starts with SEED_LOOKS[0] seeds and gets the next look's seeds only while it is
# unsettled: its interval straddles 1 and is wider than ±EQUIVALENCE_DELTA (``ratio_verdict``).
SEED_LOOKS = (5, 10, 15, 20)


def look_level(level: float = LEVEL, looks: Sequence[int] = SEED_LOOKS) -> float:
    """The level each look's interval is computed at so that the interval reported, at
    whichever look the rule stopped, covers at ``level``.

    Why: the rule looks at the data to decide whether to look again, so the interval at the
    look it stops at is not a fixed-n interval (stopping where it happens to exclude 1 favours
    intervals that missed). But the reported interval is always one of the ``len(looks)``
    intervals the comparison would have had at each look, so it misses the truth only if one
    of those does: with each at 1 − (1 − level)/len(looks), the union bound keeps the miss
    rate within 1 − level whatever the stopping rule (Bonferroni over looks; conservative, as
    the looks share seeds). ``tests/test_sweep_stats.py`` measures the coverage."""
    return 1 - (1 - level) / len(looks)


def sequential_ratio(ratios: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """The geometric mean of positive per-seed ``ratios`` and its interval at ``look_level``."""
    (ratio,), (low,), (high,) = ratio_interval(np.asarray(ratios, dtype=float).reshape(1, -1), level=look_level(level))
    return float(ratio), float(low), float(high)


def unsettled(ratios: Sequence[float], level: float = LEVEL, delta: float = EQUIVALENCE_DELTA) -> bool:
    """Whether a comparison with these per-seed ratios gets the next look's seeds: it has not
    had the last look and its interval is ``unsettled`` (``ratio_verdict``: straddling 1,
    wider than ±``delta``). Seeds stop once the interval excludes 1 or shows the two
    equivalent, the two answers a planner can act on."""
    if len(ratios) >= SEED_LOOKS[-1]:
        return False
    _, low, high = sequential_ratio(ratios, level)
    return ratio_verdict(low, high, delta) == "unsettled"

