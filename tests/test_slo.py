"""Per-tier SLOs: the config's two spellings, attainment from a request table, the TTFT/TPOT
predictor against the replica model, and the SLO-aware dispatch rule."""

from __future__ import annotations

import pytest

from sim.config import SimulationConfig, from_dict, to_dict


def test_a_ladder_expands_to_one_target_per_tier_growing_geometrically():
    config = from_dict(
        SimulationConfig,
        {"workload": {"priority": {"tiers": 3}}, "slo": {"ladder": {"ttft": 0.5, "tpot": 0.05, "growth": 4}}},
    )
    targets = config.slo.targets(config.workload.priority.tiers)
    assert [(t.ttft, t.tpot) for t in targets] == [(0.5, 0.05), (2.0, 0.2), (8.0, pytest.approx(0.8))]


def test_explicit_tiers_are_kept_as_written_and_a_config_without_slo_keeps_its_dict():
    explicit = from_dict(
        SimulationConfig,
        {"workload": {"priority": {"tiers": 2}}, "slo": {"tiers": [{"ttft": 1, "tpot": 0.1}, {"ttft": 3, "tpot": 0.2}]}},
    )
    assert [(t.ttft, t.tpot) for t in explicit.slo.targets(2)] == [(1, 0.1), (3, 0.2)]
    assert "slo" not in to_dict(SimulationConfig())  # old runs' hashes do not move
    assert to_dict(explicit)["slo"]["quantile"] == 0.99


def _table(rows):
    import pandas as pd

    columns = ["tier", "status", "prefill_latency", "decode_latency_per_token"]
    return pd.DataFrame(rows, columns=columns)


def test_attainment_from_a_hand_made_request_table():
    from sim.config import SloConfig, SloTargetConfig
    from sim.metrics.attainment import attainment_summary

    nan = float("nan")
    requests = _table(
        [
            (0, "finished", 0.4, 0.04),  # meets both
            (0, "finished", 0.6, 0.04),  # misses TTFT (0.5)
            (0, "finished", 0.3, 0.06),  # misses TPOT (0.05)
            (0, "aborted", nan, nan),  # never produced a token: misses both
            (1, "finished", 1.9, 0.09),  # meets both (2.0, 0.1)
            (1, "finished", 0.1, nan),  # one output token: no per-token time, meets
            (1, "unfinished", 0.5, nan),  # first token in time, never finished: TTFT only
        ]
    )
    slo = SloConfig(tiers=[SloTargetConfig(0.5, 0.05), SloTargetConfig(2.0, 0.1)], quantile=0.6)
    summary = attainment_summary(requests, slo, tiers=2, seconds=10.0, gpu_hours=2.0)
    tier0, tier1 = summary["by_tier"]["0"], summary["by_tier"]["1"]
    assert (tier0["ttft_attainment"], tier0["tpot_attainment"], tier0["attainment"]) == (0.5, 0.5, 0.25)
    assert (tier1["ttft_attainment"], tier1["tpot_attainment"], tier1["attainment"]) == (1.0, 2 / 3, 2 / 3)
    assert (tier0["met"], tier1["met"], summary["tiers_met"]) == (False, True, 1)
    overall = summary["overall"]
    assert overall["requests"] == 7 and overall["attainment"] == 3 / 7
    assert overall["goodput"] == pytest.approx(0.3)  # 3 requests met both in 10 s
    assert tier0["goodput"] == pytest.approx(0.1)
    assert overall["attainment_per_gpu_hour"] == pytest.approx(3 / 7 / 2)


def test_a_run_with_slos_prints_and_stores_per_tier_attainment_and_the_index_carries_it(tmp_path, capsys):
    import json

    import pandas as pd

    from sim.cli.main import main
    from sim.sweep.index import flatten

    config = tmp_path / "slo.yaml"
    config.write_text(
        "name: slo\ncluster: {instances: 2}\nscheduler: {name: llumnix}\n"
        "workload: {source: synthetic, num_requests: 200, arrival: {rate: 8.0}, priority: {tiers: 2, sampler: uniform}}\n"
        "slo: {ladder: {ttft: 0.3, tpot: 0.04, growth: 3}, quantile: 0.9}\n"
    )
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "SLO tier" in printed and "tiers attain 90% of their requests" in printed
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    requests = pd.read_csv(tmp_path / "out" / "requests.csv")
    for tier, ttft in ((0, 0.3), (1, 0.9)):
        rows = requests[requests["tier"] == tier]
        assert summary["slo"]["by_tier"][str(tier)]["ttft_attainment"] == pytest.approx(
            (rows["prefill_latency"] <= ttft).mean()
        )
    flat = flatten(summary)
    assert flat["slo.by_tier.1.attainment"] == summary["slo"]["by_tier"]["1"]["attainment"]
    assert "slo.overall.goodput" in flat
