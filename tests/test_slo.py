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
