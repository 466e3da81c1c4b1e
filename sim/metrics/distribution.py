"""The statistics every summary gives of a latency or duration: mean, P50, P90, P99, count."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

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
