"""Arrival times: a renewal process at a target rate, or a trace's own clock (maybe rescaled)."""

from __future__ import annotations

import numpy as np

from sim.config import ConfigError


def renewal_arrivals(rng: np.random.Generator, n: int, rate: float, cv: float = 1.0) -> np.ndarray:
    """``n`` arrival times with Gamma gaps of mean ``1/rate`` and coefficient of variation ``cv``.

    Gamma(shape = 1/cv², scale = 1/(rate·shape)); cv = 1 is exactly the exponential, i.e. a
    Poisson process, so Poisson and Gamma arrivals share one code path. Times start after the
    first gap, as a renewal process observed from t = 0.
    """
    shape = 1.0 / cv**2
    return np.cumsum(rng.gamma(shape, 1.0 / (rate * shape), size=n))


def deterministic_arrivals(n: int, process: str, rate: float | None) -> np.ndarray:
    """``uniform``: gaps of exactly 1/``rate``, the first after one gap as for a renewal
    process; ``burst``: every request at t = 0 (``rate`` unused)."""
    if process == "burst":
        return np.zeros(n)
    if process == "uniform":
        return np.cumsum(np.full(n, 1.0 / rate))
    raise ValueError(f"{process!r} is not a deterministic arrival process")


def replay_arrivals(timestamps: np.ndarray, rate: float | None = None) -> np.ndarray:
    """A trace's timestamps (sorted) shifted to start at 0; with ``rate``, time-scaled.

    Time-scaling multiplies every inter-arrival gap by one factor, so the burst structure is
    kept while the mean rate, (n − 1) / (last − first), becomes ``rate``.
    """
    offsets = np.asarray(timestamps, dtype=np.float64) - timestamps[0]
    if rate is None or len(offsets) < 2:
        return offsets
    span = offsets[-1]
    if span <= 0:
        raise ConfigError(
            "workload.arrival.rate: cannot time-scale a trace whose selected requests all "
            "arrive at the same instant (set rate to null to replay it as recorded)"
        )
    return offsets * ((len(offsets) - 1) / span / rate)
