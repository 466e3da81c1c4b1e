"""Urgency: where a request's targets lie along a contract's span (0 = tightest, 1 = loosest),
drawn once per request and independently of K, so a contract holds still while K varies.

The K-tier project's tier mixes become spreads over the span, shaped as the tier weights
(``sim.workload.priority``) are over K tiers:

* ``uniform``:    u ~ U[0, 1).
* ``gaussian``:   u ~ N(1/2, 1/4) truncated to [0, 1] (σ = a quarter of the span, as σ = K/4 tiers).
* ``enterprise``: 10% critical in the most urgent tenth, 10% background in the loosest tenth,
  80% standard spread over the rest (at K = 10 the critical tenth is exactly tier 0).
* ``share``:      ``high_share`` in the most urgent tenth, the rest in the loosest tenth.

K tiers see the span in K equal bands: tier = ⌊u·K⌋ (``bands``); the contract's own classes
are ``bands(u, classes)``, fixed whatever K is.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from sim.config import PriorityConfig
from sim.workload.priority import ENTERPRISE_BACKGROUND_SHARE, ENTERPRISE_CRITICAL_SHARE, GAUSSIAN_SIGMA_PER_TIER

EDGE = 0.1  # the critical and background parts of the span (enterprise, share): a tenth each


def sample_urgency(rng: np.random.Generator, n: int, cfg: PriorityConfig) -> np.ndarray:
    """An urgency in [0, 1) for each of ``n`` requests, spread as ``cfg.sampler`` says (K unused)."""
    if cfg.sampler == "uniform":
        return rng.random(n)
    if cfg.sampler == "gaussian":
        sigma = GAUSSIAN_SIGMA_PER_TIER
        low, high = (0 - 0.5) / sigma, (1 - 0.5) / sigma
        return np.minimum(stats.truncnorm.rvs(low, high, loc=0.5, scale=sigma, size=n, random_state=rng), np.nextafter(1, 0))
    if cfg.sampler in ("enterprise", "share"):
        critical = ENTERPRISE_CRITICAL_SHARE if cfg.sampler == "enterprise" else cfg.high_share
        background = ENTERPRISE_BACKGROUND_SHARE if cfg.sampler == "enterprise" else 1 - cfg.high_share
        part = rng.choice(3, size=n, p=[critical, 1 - critical - background, background])
        within = rng.random(n)
        starts = np.array([0.0, EDGE, 1 - EDGE])
        widths = np.array([EDGE, 1 - 2 * EDGE, EDGE])
        return starts[part] + widths[part] * within
    raise ValueError(f"unknown priority sampler {cfg.sampler!r}")


def bands(urgency: np.ndarray, parts: int) -> np.ndarray:
    """The equal band of the span each urgency falls in, 0..parts−1 (0 = the most urgent)."""
    return np.minimum((np.asarray(urgency) * parts).astype(np.int64), parts - 1)
