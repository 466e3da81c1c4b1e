"""``llumsim capacity --fleet``: the cheapest count of each pool's GPU meeting a contract.

Known answers: the search against brute force over every fleet, on monotone toy contracts
(hypothesis) and on the real simulator's two-SKU case; the cost/latency frontier by hand.
And the physics a fleet rests on: an A100 pool carries more load than an A10 pool under the
same contract.
"""

from __future__ import annotations

from itertools import product
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cli.main import main
from sim.config import ConfigError, load_config
from sim.sweep.capacity import parse_slo, search_capacity
from sim.sweep.fleet import (
    FleetPool,
    _FleetEvaluator,
    cheapest_fleet,
    fewest_last,
    fleet_pools,
    frontier,
    hourly_cost,
    search_fleet,
)
from sim.progress import Progress
from sim.sweep.store import RunStore
from tests.hardware_support import fitted_cache

pytestmark = pytest.mark.usefixtures("fitted_llumsim_cache")


@pytest.fixture
def fitted_llumsim_cache(monkeypatch):
    monkeypatch.setenv("LLUMSIM_CACHE_DIR", fitted_cache()[0])


def brute_force(pools, meets):
    """Every fleet within the bounds; the cheapest that meets (ties: fewer instances)."""
    fleets = [c for c in product(*(range(p.most + 1) for p in pools)) if any(c) and meets(c)]
    return min(fleets, key=lambda c: (hourly_cost(pools, c), sum(c)), default=None)


@given(
    prices=st.lists(st.floats(0.5, 8.0), min_size=1, max_size=3),
    throughputs=st.lists(st.integers(1, 6), min_size=3, max_size=3),
    most=st.lists(st.integers(1, 6), min_size=3, max_size=3),
    demand=st.integers(1, 40),
)
@settings(max_examples=300, deadline=None)
def test_the_search_finds_what_brute_force_finds_on_monotone_contracts(prices, throughputs, most, demand):
    """A contract met once the fleet's summed throughput reaches the demand (adding an
    instance never hurts): the search's cheapest fleet costs what brute force's does."""
    pools = [FleetPool(f"p{i}", price, most[i]) for i, price in enumerate(prices)]

    def meets(counts):
        return sum(n * t for n, t in zip(counts, throughputs)) >= demand

    found, expected = cheapest_fleet(pools, meets), brute_force(pools, meets)
    assert (found is None) == (expected is None)
    if expected is not None:
        assert meets(found)
        assert hourly_cost(pools, found) == pytest.approx(hourly_cost(pools, expected))


def test_fewest_last_bisects_and_an_empty_fleet_never_meets():
    asked = []

    def meets(counts):
        asked.append(counts)
        return counts[-1] >= 3

    assert fewest_last((0,), 8, meets) == 3
    assert len(asked) <= 5  # bisection over 1..8, not a scan
    assert fewest_last((0,), 2, meets) is None
    assert fewest_last((0,), 8, lambda c: True) == 1  # (0, 0) is no fleet
    assert fewest_last((1,), 8, lambda c: True) == 0


def test_frontier_keeps_the_fleets_nothing_beats_on_both_cost_and_latency():
    points = [(4.0, 0.9), (1.0, 3.0), (2.0, 3.5), (3.0, 1.0), (5.0, 0.9), (6.0, 0.2)]
    assert frontier(points) == [(1.0, 3.0), (3.0, 1.0), (4.0, 0.9), (6.0, 0.2)]


def two_sku_config(tmp_path: Path, scheduler: str = "llumnix") -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        f"""
name: fleet_case
seed: 0
pools:
  - {{name: a10s, model: llama-7b, device: a10, instances: 1}}
  - {{name: a100s, model: llama-7b, device: a100_80gb, instances: 1}}
workload:
  source: lengths
  trace: traces/sharegpt/sharegpt_v3_first_turn.csv
  num_requests: 300
  shape: {{preset: sharegpt-gpt4}}
  arrival: {{process: poisson, rate: 2.0}}
scheduler: {{name: {scheduler}}}
cost: {{sku_prices: true}}
"""
    )
    return path


CONTRACT = ["prefill_latency.p99<=2", "decode_latency_per_token.p99<=0.1"]


def test_fleet_search_on_the_simulator_gives_the_brute_force_answer(tmp_path):
    config = load_config(two_sku_config(tmp_path))
    slos = [parse_slo(text) for text in CONTRACT]
    most = {"a10s": 4, "a100s": 2}
    result = search_fleet(config, slos, most, tmp_path / "search")
    # brute force: every fleet within the bounds, each simulated (the same runs, its own store)
    pools = fleet_pools(config, most)
    evaluate = _FleetEvaluator(config, slos, [0], RunStore(tmp_path / "brute"), None, "local", None,
                               Progress("brute", 0, show=False))
    expected = brute_force(pools, evaluate)
    assert expected is not None and result.best == expected
    # the answer is a real trade-off: neither GPU alone is the cheapest
    assert all(expected) and len(evaluate.points) == 14
    assert len(result.evaluated) < len(evaluate.points)  # the search skipped fleets
    assert (tmp_path / "search" / "fleet.json").is_file()


def test_an_a100_pool_carries_more_load_than_an_a10_pool_under_the_same_contract(tmp_path):
    capacities = {}
    for pool in ("a10s", "a100s"):
        config = load_config(two_sku_config(tmp_path), [f"pools={_only(pool)}"])
        result = search_capacity(config, [parse_slo(t) for t in CONTRACT], tmp_path / pool, tolerance=0.1)
        assert result.answer == "bracketed"
        capacities[pool] = result.rate
    assert capacities["a100s"] > 2 * capacities["a10s"]


def _only(pool: str) -> str:
    device = {"a10s": "a10", "a100s": "a100_80gb"}[pool]
    return f"[{{name: {pool}, model: llama-7b, device: {device}, instances: 1}}]"


def test_the_fleet_cli_prints_the_cheapest_fleet_and_the_frontier(tmp_path, capsys):
    code = main(["capacity", str(two_sku_config(tmp_path)), "--fleet", "a10s=4", "a100s=2", "--quiet",
                 "--out", str(tmp_path / "out"), *[arg for slo in CONTRACT for arg in ("--slo", slo)]])
    out = capsys.readouterr().out
    assert code == 0
    assert "cheapest fleet at 2 req/s:" in out and "× a10s" in out and "$/hour" in out
    assert "cost/latency frontier" in out


@pytest.mark.parametrize(
    "fleet, message",
    [
        (["a10s=4"], "give the largest count of every pool (a100s: POOL=N)"),
        (["a10s=4", "a100s=2", "h100s=1"], "no pool named h100s"),
        (["a10s=four", "a100s=2"], "write POOL=N"),
        (["a10s=0", "a100s=2"], "must be in 1..64"),
    ],
)
def test_bad_fleet_bounds_are_refused_naming_what_to_write(tmp_path, fleet, message):
    config = load_config(two_sku_config(tmp_path))
    from sim.cli.capacity import fleet_bounds

    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        search_fleet(config, [parse_slo(CONTRACT[0])], fleet_bounds(fleet), tmp_path / "x")
