"""The power-law length generator against the paper's specification."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sim.workload import LENGTH_CLASSES, power_law_lengths


def test_length_classes_are_the_papers():
    assert LENGTH_CLASSES == {"S": (128, 2.0), "M": (256, 1.5), "L": (512, 1.15)}


@pytest.mark.parametrize("name", ["S", "M", "L"])
@pytest.mark.parametrize("seed", [0, 1])
def test_mean_hits_target_after_rounding_up_and_cap(name, seed):
    mean, alpha = LENGTH_CLASSES[name]
    lengths = power_law_lengths(np.random.default_rng(seed), 10_000, mean, alpha, 6144)
    assert lengths.dtype == np.int64
    assert lengths.min() >= 1 and lengths.max() <= 6144
    # Scaled to the sample mean, then ceil (+ < 1 token) and the cap (pulls a few % off S/M).
    assert mean * 0.97 <= lengths.mean() <= mean + 1


@given(
    mean=st.integers(2, 600),
    alpha=st.floats(1.0, 3.0),
    seed=st.integers(0, 2**32 - 1),
)
@settings(max_examples=60, deadline=None)
def test_without_cap_mean_is_target_rounded_up(mean, alpha, seed):
    lengths = power_law_lengths(np.random.default_rng(seed), 500, mean, alpha, cap=10**9)
    assert mean <= lengths.mean() <= mean + 1


@given(cap=st.integers(1, 400), seed=st.integers(0, 1000))
@settings(max_examples=40, deadline=None)
def test_cap_is_respected(cap, seed):
    assert power_law_lengths(np.random.default_rng(seed), 300, 256, 1.5, cap).max() <= cap


@pytest.mark.parametrize("name", ["S", "M", "L"])
def test_rank_one_frequency_follows_the_class_alpha(name):
    """The smallest length comes from rank 1, whose Zipf probability depends on alpha."""
    mean, alpha = LENGTH_CLASSES[name]
    lengths = power_law_lengths(np.random.default_rng(5), 40_000, mean, alpha, 6144)
    expected = stats.zipfian.pmf(1, alpha, 2 * mean - 1)
    assert np.mean(lengths == lengths.min()) == pytest.approx(expected, abs=0.01)


def test_same_seed_same_lengths():
    one = power_law_lengths(np.random.default_rng(9), 1000, 128, 2.0, 6144)
    two = power_law_lengths(np.random.default_rng(9), 1000, 128, 2.0, 6144)
    assert np.array_equal(one, two)
