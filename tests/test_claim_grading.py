"""The claims table's grading rules (sim.studies.agreement): known answers on both sides of
each band, cases that must come out ``differs``, and the interval's coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from sim.studies.agreement import (
    bound_grade,
    direction,
    effect_grade,
    estimate,
    range_grade,
    ratio_grade,
    reduction_grade,
    worst,
)


@pytest.mark.parametrize(
    ("ratio", "paper", "grade"),
    [
        (1.06, 1.5, "differs"),  # a 6% gain is no 50% one (the old rule called it close)
        (1.2, 1.5, "differs"),  # gain 0.2 of 0.5: under half
        (1.3, 1.5, "near"),  # gain 0.6 of the paper's
        (1.36, 1.5, "match"),  # gain 0.72 of it, inside the band
        (1.7, 1.5, "near"),  # too large is off too: gain 1.4 of it
        (2.1, 1.5, "differs"),  # gain 2.2 of it
        (0.9, 1.5, "differs"),  # Llumnix slower
        (1.0, 1.3, "differs"),  # parity
        (12.0, 14.8, "match"),
        (21.3, 14.8, "near"),
        (3.03, 14.8, "differs"),
        (40.0, 14.8, "differs"),
    ],
)
def test_a_ratio_is_graded_two_sided_on_its_gain(ratio, paper, grade):
    assert ratio_grade(ratio, paper) == grade


def test_without_a_figure_the_grade_is_not_available():
    assert ratio_grade(math.nan, 2.0) == "n/a" and reduction_grade(math.nan, 0.5) == "n/a"
    with pytest.raises(ValueError):
        effect_grade(1.0, 0.0)


@pytest.mark.parametrize(
    ("reduction", "paper", "grade"),
    [
        (0.84, 0.84, "match"),
        (0.77, 0.84, "near"),  # a 4.3× ratio against 6.25×: gain 3.35 of 5.25
        (0.5, 0.84, "differs"),  # 2× against 6.25×
        (0.95, 0.84, "differs"),  # 20× against 6.25×: too good is off as well
        (1.0, 0.84, "differs"),  # no loss left at all: an infinite ratio
        (-0.1, 0.16, "differs"),  # more instances, not fewer
        (0.14, 0.16, "match"),
        (0.077, 0.16, "differs"),  # under half the saving
    ],
)
def test_a_reduction_is_graded_as_the_ratio_it_stands_for(reduction, paper, grade):
    assert reduction_grade(reduction, paper) == grade
    assert reduction_grade(reduction, paper) == ratio_grade(1 / (1 - reduction) if reduction < 1 else math.inf, 1 / (1 - paper))


def test_a_share_is_graded_on_its_value():
    assert effect_grade(0.079, 0.079) == "match"
    assert effect_grade(0.255, 0.079) == "differs"  # INFaaS++'s fragmentation, 3x the paper's
    assert effect_grade(0.05, 0.10) == "near" and effect_grade(0.04, 0.10) == "differs"


def test_a_range_checks_both_ends():
    # gains of the paper's 1.2-1.5x range: 0.2-0.5
    assert range_grade(0.3, 0.2, 0.5) == "match"  # inside
    assert range_grade(0.15, 0.2, 0.5) == "match"  # 0.75 of the low end
    assert range_grade(0.06, 0.2, 0.5) == "differs"  # a low end that is off
    assert range_grade(0.68, 0.2, 0.5) == "near"  # 1.36 of the high end
    assert range_grade(-10.0, 2.0, 9.6) == "differs"  # 11x worse at one CV
    assert range_grade(30.0, 2.0, 9.6) == "differs"
    with pytest.raises(ValueError):
        range_grade(1.0, 0.5, 0.2)


def test_an_upper_bound_holds_improvements_and_grades_excess():
    assert bound_grade(0.04, 0.045) == "match" and bound_grade(-0.2, 0.045) == "match"
    assert bound_grade(0.058, 0.045) == "match"  # within 1.3x the bound
    assert bound_grade(0.08, 0.045) == "near"
    assert bound_grade(0.124, 0.045) == "differs"
    assert bound_grade(1.175, 0.13) == "differs"


def test_the_worst_grade_wins_and_unknown_grades_do_not_count():
    assert worst(["match", "near", "match"]) == "near"
    assert worst(["match", "differs", "n/a"]) == "differs"
    assert worst(["n/a"]) == "n/a" and worst([]) == "n/a"


def test_the_estimate_is_the_mean_with_a_student_t_interval():
    found = estimate([1.0, 2.0, 3.0], geometric=False)
    half = stats.t.ppf(0.975, 2) * 1.0 / math.sqrt(3)  # sd 1, n 3
    assert found.value == pytest.approx(2.0) and found.seeds == 3
    assert (found.low, found.high) == pytest.approx((2 - half, 2 + half))
    ratio = estimate([2.0, 8.0], geometric=True)
    assert ratio.value == pytest.approx(4.0)  # the geometric mean
    assert ratio.low * ratio.high == pytest.approx(16.0)  # symmetric in the logs
    one = estimate([3.0], geometric=True)
    assert one.value == pytest.approx(3.0) and math.isnan(one.low) and not one.has_interval
    assert math.isnan(estimate([2.0, math.inf], geometric=True).value)  # no dropped seeds
    assert math.isnan(estimate([2.0, 0.0], geometric=True).value)


@pytest.mark.parametrize("geometric", [False, True])
def test_the_interval_covers_the_true_mean_about_95_percent_of_the_time(geometric):
    rng = np.random.default_rng(23)
    trials, seeds, centre = 4000, 5, 0.4
    samples = rng.normal(centre, 0.3, size=(trials, seeds))
    truth = math.exp(centre) if geometric else centre  # a log-normal ratio's median
    samples = np.exp(samples) if geometric else samples
    covered = 0
    for sample in samples:
        found = estimate(sample, geometric)
        covered += found.low <= truth <= found.high
    assert 0.935 <= covered / trials <= 0.965


def test_direction_needs_the_interval_on_one_side_of_parity():
    assert direction(estimate([1.2, 1.3, 1.25], True), 1.0) == "better"
    assert direction(estimate([0.8, 1.3, 1.1], True), 1.0) == "even"
    assert direction(estimate([0.8, 0.85, 0.9], True), 1.0) == "worse"
    assert direction(estimate([0.05, 0.06, 0.07], False), 0.0, higher_is_better=False) == "worse"  # an increase
    assert direction(estimate([1.1], True), 1.0) == "better"  # one seed: its side
