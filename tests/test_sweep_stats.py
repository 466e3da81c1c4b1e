"""Bootstrap intervals cover what they claim to, the aggregate is one row per cell, and paired
comparisons remove the noise two variants share through common random numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sim.sweep.stats import aggregate, bootstrap_ci, paired


def test_a_95_percent_interval_covers_a_known_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    samples = rng.exponential(scale=2.0, size=(400, 40))  # skewed, mean 2
    low, high = bootstrap_ci(samples)
    coverage = np.mean((low <= 2.0) & (2.0 <= high))
    assert 0.89 <= coverage <= 0.99, coverage
    assert np.all(low <= samples.mean(axis=1)) and np.all(samples.mean(axis=1) <= high)


def test_degenerate_samples_get_the_obvious_interval():
    low, high = bootstrap_ci(np.array([[3.0, 3.0, 3.0], [1.0, 2.0, 3.0]]))
    assert (low[0], high[0]) == (3.0, 3.0) and low[1] < 2.0 < high[1]
    low, high = bootstrap_ci(np.array([[1.0], [2.0]]))  # one seed: no interval
    assert np.isnan(low).all() and np.isnan(high).all()


def index_frame(values_a, values_b, extra=None):
    rows = []
    for seed, (a, b) in enumerate(zip(values_a, values_b)):
        rows.append(
            {
                "load": 1,
                "scheduler": "base",
                "seed": seed,
                "config_hash": f"a{seed}",
                "latency.e2e_latency.mean": a,
                **(extra or {}),
            }
        )
        rows.append(
            {
                "load": 1,
                "scheduler": "new",
                "seed": seed,
                "config_hash": f"b{seed}",
                "latency.e2e_latency.mean": b,
                **(extra or {}),
            }
        )
    return pd.DataFrame(rows)


def test_aggregate_has_one_row_per_cell_with_mean_and_interval():
    index = index_frame([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0])
    agg = aggregate(index)
    assert list(agg[["load", "scheduler", "seeds"]].itertuples(index=False, name=None)) == [
        (1, "base", 4),
        (1, "new", 4),
    ]
    assert agg["latency.e2e_latency.mean"].tolist() == [2.5, 5.0]
    assert (agg["latency.e2e_latency.mean.ci_low"] < agg["latency.e2e_latency.mean"]).all()
    assert (agg["latency.e2e_latency.mean"] < agg["latency.e2e_latency.mean.ci_high"]).all()


def test_pairing_by_seed_cancels_the_noise_both_variants_share():
    rng = np.random.default_rng(0)
    shared = rng.lognormal(mean=2.0, sigma=0.8, size=8)  # seed-to-seed variation (the requests)
    index = index_frame(shared, 2.0 * shared)
    agg = aggregate(index)
    unpaired_width = (
        agg["latency.e2e_latency.mean.ci_high"] - agg["latency.e2e_latency.mean.ci_low"]
    ).iloc[1]
    ratio = paired(index, "latency.e2e_latency.mean", "scheduler", "base")
    new = ratio[ratio["scheduler"] == "new"].iloc[0]
    assert new["ratio"] == pytest.approx(2.0) and new["seeds"] == 8
    assert new["ratio.ci_high"] - new["ratio.ci_low"] < 1e-9 < unpaired_width
    difference = paired(index, "latency.e2e_latency.mean", "scheduler", "base", how="difference")
    assert difference.loc[difference["scheduler"] == "base", "difference"].iloc[0] == 0.0


def test_missing_tiers_do_not_poison_the_other_cells():
    index = index_frame(
        [1.0, 2.0], [1.0, 2.0], extra={"latency_by_tier.1.prefill_latency.p99": np.nan}
    )
    index.loc[index["scheduler"] == "new", "latency_by_tier.1.prefill_latency.p99"] = [0.5, 0.7]
    agg = aggregate(index)
    assert np.isnan(agg.loc[0, "latency_by_tier.1.prefill_latency.p99"])
    assert agg.loc[1, "latency_by_tier.1.prefill_latency.p99"] == pytest.approx(0.6)
