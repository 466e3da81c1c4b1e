"""Priority samplers: documented weights, shape properties, and sampling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.config import PriorityConfig
from sim.workload import sample_tiers, tier_weights

SAMPLERS = ("uniform", "gaussian", "enterprise", "share")
tiers = st.integers(1, 64)


@given(sampler=st.sampled_from(SAMPLERS), k=tiers, high_share=st.floats(0.0, 1.0))
def test_weights_are_a_distribution_over_k_tiers(sampler, k, high_share):
    weights = tier_weights(sampler, k, high_share)
    assert weights.shape == (k,)
    assert np.all(weights >= 0)
    assert weights.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_one_tier_takes_everything(sampler):
    assert tier_weights(sampler, 1).tolist() == [1.0]


@pytest.mark.parametrize(
    ("sampler", "k", "expected"),
    [
        ("uniform", 4, [0.25, 0.25, 0.25, 0.25]),
        ("gaussian", 2, [0.5, 0.5]),
        ("gaussian", 4, [0.1345, 0.3655, 0.3655, 0.1345]),
        ("enterprise", 2, [0.1, 0.9]),
        ("enterprise", 3, [0.1, 0.8, 0.1]),
        ("enterprise", 4, [0.1, 0.4, 0.4, 0.1]),
        ("enterprise", 5, [0.1, 0.8 / 3, 0.8 / 3, 0.8 / 3, 0.1]),
        ("share", 2, [0.1, 0.9]),
        ("share", 4, [0.1, 0.0, 0.0, 0.9]),
    ],
)
def test_documented_weights(sampler, k, expected):
    assert tier_weights(sampler, k, 0.1) == pytest.approx(expected, abs=1e-4)


@given(k=tiers)
def test_uniform_is_flat(k):
    assert np.allclose(tier_weights("uniform", k), 1 / k)


@given(k=tiers)
def test_gaussian_is_symmetric_and_peaks_in_the_middle(k):
    weights = tier_weights("gaussian", k)
    assert np.allclose(weights, weights[::-1])
    middle = (k - 1) // 2
    assert np.all(np.diff(weights[: middle + 1]) >= -1e-12)  # rises to the middle
    assert np.all(np.diff(weights[k // 2 :]) <= 1e-12)  # falls after it


@given(k=st.integers(3, 64))
def test_enterprise_few_critical_most_standard_small_background(k):
    weights = tier_weights("enterprise", k)
    assert weights[-1] == pytest.approx(0.1)  # never a majority (the prototype gave it 60% at K=4)
    assert weights[0] == pytest.approx(0.1)
    assert weights[1:-1].sum() == pytest.approx(0.8)
    assert np.allclose(weights[1:-1], weights[1])


@given(k=st.integers(2, 64), high_share=st.floats(0.0, 1.0))
def test_share_splits_between_first_and_last_tier(k, high_share):
    weights = tier_weights("share", k, high_share)
    assert weights[0] == pytest.approx(high_share)
    assert weights[-1] == pytest.approx(1 - high_share)
    assert weights[1:-1].sum() == 0


def test_sampled_tiers_follow_the_weights_and_the_seed():
    cfg = PriorityConfig(sampler="enterprise", tiers=4)
    drawn = sample_tiers(np.random.default_rng(0), 40_000, cfg)
    assert drawn.dtype == np.int64 and drawn.min() >= 0 and drawn.max() <= 3
    frequencies = np.bincount(drawn, minlength=4) / len(drawn)
    assert frequencies == pytest.approx(tier_weights("enterprise", 4), abs=0.01)
    again = sample_tiers(np.random.default_rng(0), 40_000, cfg)
    assert np.array_equal(drawn, again)


def test_share_sampler_gives_the_papers_ten_percent():
    cfg = PriorityConfig(sampler="share", tiers=2, high_share=0.1)
    drawn = sample_tiers(np.random.default_rng(1), 50_000, cfg)
    assert np.mean(drawn == 0) == pytest.approx(0.1, abs=0.005)
