"""Runs that differ only in request labels share one simulation (sim.sweep.sharing): the
deduplicated sweep writes the same index, byte for byte, as running every run on its own."""

from __future__ import annotations

import pandas as pd
import pytest

from sim.config import config_hash, load_config
from sim.sweep import Execution, expand, load_grid, run_sweep
from sim.sweep.sharing import label_only, simulation_key
from tests.sweep_support import GRIDS

SMOKE = GRIDS / "k_sweep_smoke.yaml"
# k_sweep_smoke per (size, rate, seed): INFaaS++ at K = 1, 4 under both mixes is one
# simulation; K = 1 is one per priority mode; K = 4 of the two Llumnix modes is four
SMOKE_SIMULATIONS = 8 * (1 + 2 + 4)

LABELS_GRID = {  # tiers, sampler and share vary; two tier-blind schedulers; requests kept
    "base": str(GRIDS.parent / "configs" / "quickstart.yaml"),
    "set": {"cluster.instances": 2, "workload.num_requests": 120, "workload.arrival.rate": 1.5},
    "tables": ["requests"],
    "axes": {
        "workload.priority.tiers": [1, 3],
        "workload.priority.sampler": ["share", "gaussian"],
        "workload.priority.high_share": [0.1, 0.3],
    },
    "variants": {"scheduler": {"rr": {"scheduler.name": "round-robin"}, "infaas": {"scheduler.name": "infaas++"}}},
}


def brute_force(monkeypatch) -> None:
    """Every run its own simulation: the key of the simulation a run needs is its own."""
    monkeypatch.setattr("sim.sweep.runner.simulation_key", config_hash)


def assert_same_bytes(out, reference) -> None:
    for name in ("index.csv", "index.parquet", "aggregate.csv", "aggregate.parquet", "sweep.json"):
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name


def test_the_smoke_sweep_deduplicated_writes_the_brute_force_index(smoke_results, tmp_path, monkeypatch):
    shared = smoke_results("k_sweep_smoke")
    assert len({simulation_key(run.config) for run in load_grid(SMOKE).runs}) == SMOKE_SIMULATIONS
    brute_force(monkeypatch)
    outcome = run_sweep(load_grid(SMOKE), tmp_path / "brute", Execution(jobs=2))
    assert outcome.simulations == outcome.computed == 96
    assert_same_bytes(tmp_path / "brute", shared)


def test_relabelled_runs_keep_their_own_tiers_and_request_tables(tmp_path, monkeypatch):
    grid = expand(LABELS_GRID, "labels", GRIDS)
    shared = run_sweep(grid, tmp_path / "shared", Execution(jobs=2))
    assert (shared.computed, shared.simulations) == (16, 2)  # a schedule per scheduler, 8 labellings each
    index = pd.read_parquet(tmp_path / "shared" / "index.parquet")
    k3 = index[index["workload.priority.tiers"] == 3]
    # the share sampler puts requests in tiers 0 and 2 only, gaussian in all three
    assert k3.loc[k3["workload.priority.sampler"] == "share", "latency_by_tier.1.e2e_latency.count"].isna().all()
    assert (k3.loc[k3["workload.priority.sampler"] == "gaussian", "latency_by_tier.1.e2e_latency.count"] > 0).all()
    brute_force(monkeypatch)
    brute = run_sweep(grid, tmp_path / "brute", Execution(jobs=2))
    assert brute.simulations == 16
    assert_same_bytes(tmp_path / "brute", tmp_path / "shared")
    for run in grid.runs:
        tables = [pd.read_parquet(tmp_path / out / "runs" / run.key / "requests.parquet") for out in ("shared", "brute")]
        pd.testing.assert_frame_equal(*tables)


K4, K1 = {"tiers": 4}, {"tiers": 1}
ENTERPRISE = {"tiers": 4, "sampler": "enterprise"}


@pytest.mark.parametrize(
    ("scheduler", "workload", "other_priority", "shares"),
    [
        ({"name": "infaas++"}, {"priority": K4}, {"tiers": 2, "sampler": "gaussian"}, True),
        ({"name": "llumnix"}, {"priority": K1}, {"tiers": 1, "sampler": "enterprise"}, True),
        ({"name": "llumnix"}, {"priority": K4}, ENTERPRISE, False),
        ({"name": "llumnix-base"}, {"priority": K4}, ENTERPRISE, False),  # migrates by tier
        ({"name": "infaas++", "ordering": "tier-first"}, {"priority": K4}, ENTERPRISE, False),
        ({"name": "infaas++", "priority": {"local": "tier"}}, {"priority": K4}, ENTERPRISE, False),
        (
            {"name": "infaas++"},  # the artifact's client draws tiers from its length generator
            {"client": "artifact", "source": "synthetic", "num_requests": 100, "priority": {"tiers": 2, "sampler": "share"}},
            {"tiers": 2, "sampler": "share", "high_share": 0.3},
            False,
        ),
        (  # a later turn arrives when the run says: the workload's arrival is not it
            {"name": "infaas++"},
            {"source": "sessions", "trace": "traces/sharegpt/sharegpt_v3_sessions.csv", "num_requests": 5, "priority": K4},
            ENTERPRISE,
            False,
        ),
    ],
    ids=["infaas++", "K=1", "llumnix K=4", "llumnix-base", "tier-first ordering", "tier-ordered llumlets", "artifact client",
         "conversations"],
)
def test_labels_are_left_out_of_the_simulation_key_only_where_nothing_reads_them(
    scheduler, workload, other_priority, shares
):
    config = load_config(base={"scheduler": scheduler, "workload": workload})
    other = load_config(base={"scheduler": scheduler, "workload": {**workload, "priority": other_priority}})
    assert label_only(config) == shares
    assert (simulation_key(config) == simulation_key(other)) == shares


def test_a_run_with_a_prefix_cache_keeps_its_own_simulation_for_its_per_tier_hits():
    config = load_config(base={"scheduler": {"name": "infaas++"}, "cluster": {"ledger": "prefix-caching"}, "workload": {"priority": K4}})
    assert not label_only(config)
    assert label_only(load_config(base={"scheduler": {"name": "infaas++"}, "workload": {"priority": K4}}))


def test_every_rule_and_mode_says_whether_it_reads_tiers_in_its_own_body():
    """What is shared rests on these declarations: each shipped dispatch rule, pairing rule
    and priority mode makes one in its own class body, and the orderings declared tier-blind
    exist."""
    from sim.cluster.dispatch import DISPATCH_RULES
    from sim.cluster.ordering import ARRIVAL_ORDERINGS, TIER_BLIND_ORDERINGS
    from sim.cluster.pairing import PAIRING_RULES
    from sim.cluster.priority import PRIORITY_MODES

    undeclared = [
        f"{registry.kind} {name}"
        for registry in (DISPATCH_RULES, PAIRING_RULES, PRIORITY_MODES)
        for name in registry.names()
        if registry.get(name).__module__.startswith("sim.") and "reads_tiers" not in vars(registry.get(name))
    ]
    assert undeclared == []
    assert TIER_BLIND_ORDERINGS <= set(ARRIVAL_ORDERINGS.names())


def test_a_new_rule_that_says_nothing_is_taken_to_read_tiers():
    """It inherits from a tier-blind rule, but may read request.tier itself: never shared."""
    from sim.cluster.dispatch import DISPATCH_RULES, ArtifactLoad

    if "test-undeclared-load" not in DISPATCH_RULES.names():
        DISPATCH_RULES.register("test-undeclared-load")(type("UndeclaredLoad", (ArtifactLoad,), {}))
    assert label_only(load_config(base={"scheduler": {"name": "infaas++"}, "workload": {"priority": K4}}))
    undeclared = {"name": "infaas++", "dispatch": "test-undeclared-load"}
    assert not label_only(load_config(base={"scheduler": undeclared, "workload": {"priority": K4}}))
