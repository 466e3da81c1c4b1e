"""Arrival processes: Poisson/Gamma statistics, uniform and burst, trace replay and time-scaling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.config import ConfigError
from sim.workload import deterministic_arrivals, renewal_arrivals, replay_arrivals

N = 50_000


@pytest.mark.parametrize(("rate", "cv"), [(7.5, 1.0), (26.0, 2.0), (2.0, 4.0), (0.5, 0.5)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_renewal_mean_rate_and_cv(rate, cv, seed):
    arrivals = renewal_arrivals(np.random.default_rng(seed), N, rate, cv)
    gaps = np.diff(np.concatenate([[0.0], arrivals]))
    # Standard error of the mean gap is cv/sqrt(N) relative: <= 1.8% here; allow ~3-5 of them.
    assert N / arrivals[-1] == pytest.approx(rate, rel=0.06)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.10)
    assert np.all(gaps >= 0) and arrivals[0] > 0


def test_uniform_spaces_requests_exactly_and_burst_sends_them_at_once():
    uniform = deterministic_arrivals(5, "uniform", 4.0)
    assert uniform.tolist() == [0.25, 0.5, 0.75, 1.0, 1.25]  # the first after one gap
    assert deterministic_arrivals(5, "burst", None).tolist() == [0.0] * 5
    with pytest.raises(ValueError, match="'gamma' is not a deterministic"):
        deterministic_arrivals(5, "gamma", 1.0)


def test_poisson_gaps_are_exponential():
    gaps = np.diff(renewal_arrivals(np.random.default_rng(3), N, 4.0))
    # Memorylessness: P(gap > 2/rate) = e^-2 for an exponential.
    assert np.mean(gaps > 0.5) == pytest.approx(np.exp(-2), abs=0.01)


def test_renewal_is_deterministic_per_seed():
    one = renewal_arrivals(np.random.default_rng(7), 100, 3.0, 2.0)
    two = renewal_arrivals(np.random.default_rng(7), 100, 3.0, 2.0)
    assert np.array_equal(one, two)


def test_replay_as_recorded_shifts_to_zero():
    assert replay_arrivals(np.array([10.0, 10.5, 13.0])).tolist() == [0.0, 0.5, 3.0]


@given(
    gaps=st.lists(st.floats(0.0, 100.0), min_size=1, max_size=50).filter(lambda g: sum(g) > 1e-3),
    start=st.floats(0.0, 1e6),
    rate=st.floats(0.01, 1000.0),
)
@settings(max_examples=200, deadline=None)
def test_time_scaling_hits_the_rate_and_keeps_the_gap_pattern(gaps, start, rate):
    stamps = start + np.concatenate([[0.0], np.cumsum(gaps)])
    scaled = replay_arrivals(stamps, rate)
    assert scaled[0] == 0.0
    assert (len(scaled) - 1) / scaled[-1] == pytest.approx(rate, rel=1e-6)
    assert np.all(np.diff(scaled) >= 0)
    recorded = stamps - stamps[0]
    # Every gap is multiplied by the same factor.
    assert scaled == pytest.approx(recorded * (scaled[-1] / recorded[-1]), rel=1e-6, abs=1e-9)


def test_time_scaling_a_single_instant_is_refused():
    with pytest.raises(ConfigError, match="workload.arrival.rate"):
        replay_arrivals(np.array([5.0, 5.0, 5.0]), 2.0)
    assert replay_arrivals(np.array([5.0]), 2.0).tolist() == [0.0]
