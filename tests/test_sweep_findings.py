"""The K-tier claims on a hand-built k_sweep index: paired by cell and seed."""

from __future__ import annotations

import itertools

import pandas as pd

from sim.sweep.findings import CELL_METRICS, cells, figure, findings, speedups


def index() -> pd.DataFrame:
    """Llumnix halves INFaaS++'s mean prefill and cost-per-latency everywhere except at K = 4,
    where it divides them by four; its tail grows 10% from K = 1 to K = 10."""
    rows = []
    for k, rate, seed in itertools.product((1, 4, 10), (5.0, 7.5, 8.5), (0, 1)):
        base = {"workload.priority.tiers": k, "workload.priority.sampler": "uniform",
                "workload.num_requests": 1000, "workload.arrival.rate": rate}
        factor = 4.0 if k == 4 else 2.0
        noise = 1 + 0.01 * seed
        rows.append({**base, "scheduler": "infaas++", "seed": seed, "latency.prefill_latency.mean": 8.0 * noise,
                     "cost.cost_per_latency": 10.0 * noise, "latency.e2e_latency.p99": 50.0})
        for mode in ("llumnix", "llumnix-headroom"):
            rows.append({**base, "scheduler": mode, "seed": seed,
                         "latency.prefill_latency.mean": 8.0 * noise / factor,
                         "cost.cost_per_latency": 10.0 * noise / factor,
                         "latency.e2e_latency.p99": 40.0 * (1 + 0.01 * k)})
    frame = pd.DataFrame(rows)
    frame["config_hash"] = [f"h{i}" for i in range(len(frame))]
    return frame


def test_speedups_are_paired_baseline_over_llumnix():
    table = speedups(index(), "latency.prefill_latency.mean")
    at_k4 = table[table["workload.priority.tiers"] == 4]
    assert set(table["speedup"].round(6)) == {2.0, 4.0} and (at_k4["speedup"] == 4.0).all()


def test_the_claims_read_the_best_k_the_savings_and_the_tail():
    table = findings(index()).set_index("claim")
    best = table.loc["K = 4 is optimal (cost-per-latency), llumnix"]
    assert best["holds"] == "yes" and "K=4: 3" in best["llumsim"]
    assert table.loc["cost-per-latency better than INFaaS++, llumnix", "llumsim"].startswith("50% to 75%")
    assert table.loc["no tail-latency collapse up to K = 10, llumnix", "holds"] == "yes"


def test_the_figure_draws_each_load_with_intervals(tmp_path):
    frame = index()
    frame["workload.priority.sampler"] = "enterprise"
    frame["latency.prefill_latency.p99"] = frame["latency.prefill_latency.mean"] * 3
    frame["latency_by_tier.0.prefill_latency.p99"] = frame["latency.prefill_latency.mean"]
    path = figure(frame, tmp_path / "k_sweep.png")
    assert path.stat().st_size > 10_000  # three panels of six lines and bands, not a blank canvas


def test_the_committed_cell_table_keeps_coordinates_metrics_and_intervals_only():
    coordinates = {"workload.priority.tiers": [1, 4], "workload.priority.sampler": ["uniform"] * 2,
                   "workload.num_requests": [1000] * 2, "workload.arrival.rate": [5.0] * 2,
                   "scheduler": ["llumnix", "infaas++"], "seeds": [3, 3]}
    metrics = {f"{m}{s}": [1.0, 2.0] for m in CELL_METRICS for s in ("", ".ci_low", ".ci_high")}
    aggregated = pd.DataFrame({**coordinates, **metrics, "throughput.tokens_per_second": [9.0, 9.0]})
    table = cells(aggregated)
    assert list(table.columns) == [*coordinates, *metrics] and len(table) == 2
