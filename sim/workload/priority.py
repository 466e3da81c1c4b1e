"""Priority samplers: the probability of each tier 0..K−1 (0 = most critical), for any K.

Weights, with K tiers indexed p = 0..K−1:

* ``uniform``:    w_p = 1/K.
* ``gaussian``:   w_p ∝ exp(−(p − c)² / (2σ²)), c = (K−1)/2 (the middle), σ = K/4, so the
  middle tiers carry most traffic and the spread grows with K.
* ``enterprise``: few critical, most standard, a small background share. Tier 0 (critical)
  gets 10%, tier K−1 (background) gets 10%, and the standard tiers 1..K−2 split the other
  80% equally. With K = 2 the standard and background tiers coincide: [0.1, 0.9]. The
  background tier therefore never holds more than 10% for K ≥ 3 (the K-tier prototype's
  mix gave it 60% at K = 4).
* ``share``:      tier 0 with probability ``high_share``, otherwise tier K−1 (the paper's
  10%-high-priority experiment; for K = 2 that is tier 1).

With K = 1 every sampler puts every request in tier 0.
"""

from __future__ import annotations

import numpy as np

from sim.config import PriorityConfig

ENTERPRISE_CRITICAL_SHARE = 0.10
ENTERPRISE_BACKGROUND_SHARE = 0.10
GAUSSIAN_SIGMA_PER_TIER = 0.25  # σ = K/4


def tier_weights(sampler: str, tiers: int, high_share: float = 0.1) -> np.ndarray:
    """Probability of each tier under ``sampler`` (see the module docstring for the formulas)."""
    if tiers == 1:
        return np.ones(1)
    index = np.arange(tiers, dtype=np.float64)
    if sampler == "uniform":
        weights = np.ones(tiers)
    elif sampler == "gaussian":
        sigma = GAUSSIAN_SIGMA_PER_TIER * tiers
        weights = np.exp(-((index - (tiers - 1) / 2) ** 2) / (2 * sigma**2))
    elif sampler == "enterprise":
        if tiers == 2:  # the standard tier is also the background tier
            weights = np.array([ENTERPRISE_CRITICAL_SHARE, 1 - ENTERPRISE_CRITICAL_SHARE])
        else:
            standard = 1 - ENTERPRISE_CRITICAL_SHARE - ENTERPRISE_BACKGROUND_SHARE
            weights = np.full(tiers, standard / (tiers - 2))
            weights[0], weights[-1] = ENTERPRISE_CRITICAL_SHARE, ENTERPRISE_BACKGROUND_SHARE
    elif sampler == "share":
        weights = np.zeros(tiers)
        weights[0] = high_share
        weights[-1] = 1 - high_share
    else:
        raise ValueError(f"unknown priority sampler {sampler!r}")
    return weights / weights.sum()


def sample_tiers(rng: np.random.Generator, n: int, cfg: PriorityConfig) -> np.ndarray:
    """A tier for each of ``n`` requests, drawn independently from the sampler's weights."""
    weights = tier_weights(cfg.sampler, cfg.tiers, cfg.high_share)
    return rng.choice(cfg.tiers, size=n, p=weights).astype(np.int64)
