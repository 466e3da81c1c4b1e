"""How one of llumsim's figures is graded against the paper's, and its interval over seeds.

The grading is fixed before any result is read, and it is two-sided: a figure too large is
as far off as one too small. It compares *effects*, the part of a figure that says how much
better one scheduler is than another:

- a ratio r (baseline ÷ Llumnix, > 1 when Llumnix is faster): its gain r − 1. A band on the
  ratio itself would be loose near parity — ±30% of the paper's 1.5× would accept anything
  from 1.05× up, so a 6% gain would "match" a 50% one — while on the gain it is the
  band the ratio would have if the ratio were far from 1 (for large ratios gain ≈ ratio);
- a reduction or saving s = 1 − Llumnix / baseline: the ratio it is, 1 / (1 − s), graded as
  above, so a percentage is exactly as strict as the ratio it stands for (the paper's −84%
  is a 6.25× ratio, gain 5.25);
- a share (a fraction of memory or time, a downtime) that compares no two schedulers: the
  value itself.

With q = llumsim's effect ÷ the paper's: ``match`` when 0.7 ≤ q ≤ 1.3 (within ±30%),
``near`` when 0.5 ≤ q ≤ 2 (within a factor 2), else ``differs`` — an effect of the opposite
sign (Llumnix worse where the paper has it better) always differs. A range a–b (the
paper's spread over CVs) grades each end against its own end; a point inside the range, or
within the same bands of its nearer end, agrees. An upper bound ("at most +4.5%") is
one-sided by its nature: a point agrees while its increase stays under the bound (match:
up to 1.3 × the bound, near: up to 2 ×), and an improvement is within it.

Intervals (``estimate``): each point's statistic is computed seed by seed, on paired runs
(the same seed's request stream under both schedulers), and averaged over seeds — ratios
as the geometric mean (the mean of the log-ratios), other figures as the arithmetic mean —
with a Student-t 95% interval of that mean (``sim.sweep.stats.t_interval``, n − 1 degrees
of freedom), mapped back through exp for ratios; with one seed there is none (the bounds
are NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from sim.sweep.stats import LEVEL, t_interval

MATCH_BAND = 0.30  # within ±30% of the paper's effect (issue 23's rule)
NEAR_FACTOR = 2.0  # within a factor 2
CONFIDENCE = LEVEL  # the intervals' level, as every other interval of the sweeps
GRADES = ("match", "near", "differs")  # best first
NOT_AVAILABLE = "n/a"


@dataclass(frozen=True)
class Estimate:
    """The mean of a per-seed statistic and its Student-t interval (NaN with one seed)."""

    value: float
    low: float
    high: float
    seeds: int

    @property
    def has_interval(self) -> bool:
        return self.seeds > 1 and math.isfinite(self.low) and math.isfinite(self.high)


def estimate(values: Sequence[float], geometric: bool) -> Estimate:
    """The mean over seeds of ``values`` (geometric: of their logs, for ratios) with its
    Student-t 95% interval. Non-finite values (a ratio with a zero) make the estimate NaN
    rather than being dropped, so no point is averaged over a chosen subset of its seeds."""
    array = np.asarray(values, dtype=float)
    n = len(array)
    if n == 0 or not np.all(np.isfinite(array)) or (geometric and np.any(array <= 0)):
        return Estimate(math.nan, math.nan, math.nan, n)
    sample = np.log(array) if geometric else array
    mean = float(sample.mean())
    bounds = t_interval(sample.reshape(1, -1), CONFIDENCE)
    low, high = float(bounds[0][0]), float(bounds[1][0])
    if geometric:
        return Estimate(math.exp(mean), math.exp(low), math.exp(high), n)
    return Estimate(mean, low, high, n)


def _band(q: float) -> str:
    if not math.isfinite(q) or q <= 0:
        return "differs"
    if 1 - MATCH_BAND <= q <= 1 + MATCH_BAND:
        return "match"
    if 1 / NEAR_FACTOR <= q <= NEAR_FACTOR:
        return "near"
    return "differs"


def effect_grade(effect: float, paper: float) -> str:
    """``match`` / ``near`` / ``differs`` for an effect against the paper's (both > 0 when
    Llumnix is better); ``n/a`` when llumsim has no figure."""
    if effect is None or math.isnan(effect):
        return NOT_AVAILABLE
    if paper <= 0:
        raise ValueError(f"the paper's effect must be positive, got {paper}")
    return _band(effect / paper)


def ratio_gain(ratio: float) -> float:
    return ratio - 1.0


def reduction_gain(reduction: float) -> float:
    """The gain of the ratio a reduction 1 − L/B stands for: B/L − 1 = s / (1 − s)."""
    if reduction is None or math.isnan(reduction):
        return math.nan
    return math.inf if reduction >= 1 else reduction / (1.0 - reduction)


def ratio_grade(ratio: float, paper: float) -> str:
    return effect_grade(ratio_gain(ratio), ratio_gain(paper))


def reduction_grade(reduction: float, paper: float) -> str:
    return effect_grade(reduction_gain(reduction), reduction_gain(paper))


def range_grade(effect: float, low: float, high: float) -> str:
    """An effect against the paper's range of effects [low, high]: inside it, or within
    the bands of its nearer end."""
    if effect is None or math.isnan(effect):
        return NOT_AVAILABLE
    if not 0 < low <= high:
        raise ValueError(f"a range needs 0 < low <= high, got {low}-{high}")
    if effect < low:
        return _band(effect / low)
    if effect > high:
        return _band(effect / high)
    return "match"


def bound_grade(increase: float, bound: float) -> str:
    """An increase (Llumnix ÷ baseline − 1) against the paper's upper bound on it."""
    if increase is None or math.isnan(increase):
        return NOT_AVAILABLE
    if bound <= 0:
        raise ValueError(f"a bound on an increase must be positive, got {bound}")
    if increase <= bound * (1 + MATCH_BAND):
        return "match"
    return "near" if increase <= bound * NEAR_FACTOR else "differs"


def worst(grades: Iterable[str]) -> str:
    """The worst of some grades (``n/a`` only when none is known)."""
    known = [g for g in grades if g in GRADES]
    return max(known, key=GRADES.index) if known else NOT_AVAILABLE


def direction(estimate_: Estimate, parity: float, higher_is_better: bool = True) -> str:
    """``better`` / ``worse`` when the interval lies on one side of parity (with one seed,
    the value's side), else ``even``; ``n/a`` without a figure."""
    if math.isnan(estimate_.value):
        return NOT_AVAILABLE
    low, high = (estimate_.low, estimate_.high) if estimate_.has_interval else (estimate_.value,) * 2
    if not higher_is_better:
        low, high = 2 * parity - high, 2 * parity - low  # mirror about parity
    if low > parity:
        return "better"
    if high < parity:
        return "worse"
    return "even"
