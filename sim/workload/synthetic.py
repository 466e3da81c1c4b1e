"""Synthetic power-law request lengths, as the Llumnix paper generates its S/M/L workloads."""

from __future__ import annotations

import numpy as np

# Length class -> (target mean tokens, Zipf exponent alpha), Llumnix paper §6.1.
LENGTH_CLASSES: dict[str, tuple[int, float]] = {"S": (128, 2.0), "M": (256, 1.5), "L": (512, 1.15)}


def power_law_lengths(
    rng: np.random.Generator, n: int, mean: int, alpha: float, cap: int
) -> np.ndarray:
    """Zipf ranks 1..2·mean−1 with exponent ``alpha``, scaled to sample mean ``mean``, ceil, cap.

    Scaling uses the *sample* mean so that every draw hits the target before rounding up; the
    cap (6,144 tokens by default) can then pull the mean slightly below it, as in the paper.
    """
    from scipy import stats  # ~1 s to import: only for Zipf lengths

    ranks = np.arange(1, 2 * mean)
    draws = rng.choice(ranks, size=n, p=stats.zipfian.pmf(ranks, alpha, len(ranks)))
    return scale_to_mean(draws, mean, cap)


def scale_to_mean(draws: np.ndarray, mean: int, cap: int) -> np.ndarray:
    """Ranks times mean/sample-mean, rounded up, truncated at ``cap`` (Llumnix's client's rule)."""
    scaled = np.ceil(draws * (mean / draws.mean()))
    return np.minimum(scaled, cap).astype(np.int64)
