"""``llumsim capacity --fleet``: the cheapest count of each pool's GPU meeting a contract.

Known answers: the search against brute force over every fleet, on monotone toy contracts
(hypothesis) and on the real simulator's two-SKU case; the cost/latency frontier by hand.
And the physics a fleet rests on: an A100 pool carries more load than an A10 pool under the
same contract.
"""

from __future__ import annotations

import json
from itertools import product
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cli.main import main
from sim.config import ConfigError, load_config
from sim.sweep.capacity import parse_slo, search_capacity
from sim.sweep.fleet import (
    FleetPool,
    FleetEvaluator,
    cheapest_fleet,
    fewest_last,
    fleet_pools,
    frontier,
    hourly_cost,
    search_fleet,
)
from sim.progress import Progress
from sim.sweep.execution import Execution
from sim.sweep.store import RunStore
from tests.hardware_support import fitted_cache
from tests.sweep_support import REPO

pytestmark = pytest.mark.usefixtures("fitted_llumsim_cache")


@pytest.fixture
def fitted_llumsim_cache(monkeypatch):
    monkeypatch.setenv("LLUMSIM_CACHE_DIR", fitted_cache()[0])


def brute_force(pools, meets):
    """Every fleet within the bounds; the cheapest (ties: fewer instances) that meets the
    contract and whose every neighbour one instance larger in a pool it uses (within the
    bounds) meets it too."""

    def stable(c):
        bigger = [c[:i] + (n + 1,) + c[i + 1:] for i, (p, n) in enumerate(zip(pools, c)) if 0 < n < p.most]
        return meets(c) and all(meets(b) for b in bigger)

    fleets = [c for c in product(*(range(p.most + 1) for p in pools)) if any(c) and stable(c)]
    return min(fleets, key=lambda c: (hourly_cost(pools, c), sum(c)), default=None)


@given(
    prices=st.lists(st.floats(0.5, 8.0), min_size=1, max_size=3),
    throughputs=st.lists(st.integers(1, 6), min_size=3, max_size=3),
    most=st.lists(st.integers(1, 6), min_size=3, max_size=3),
    demand=st.integers(1, 40),
    monotone=st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_both_searches_find_what_brute_force_finds_on_monotone_contracts(prices, throughputs, most, demand, monotone):
    """A contract met once the fleet's summed throughput reaches the demand (adding an
    instance never hurts): either search's cheapest fleet costs what brute force's does."""
    pools = [FleetPool(f"p{i}", price, most[i]) for i, price in enumerate(prices)]

    def meets(counts):
        return sum(n * t for n, t in zip(counts, throughputs)) >= demand

    found, expected = cheapest_fleet(pools, meets, monotone), brute_force(pools, meets)
    assert (found is None) == (expected is None)
    if expected is not None:
        assert meets(found)
        assert hourly_cost(pools, found) == pytest.approx(hourly_cost(pools, expected))


@given(
    prices=st.lists(st.floats(0.5, 8.0), min_size=2, max_size=2),
    most=st.lists(st.integers(1, 5), min_size=2, max_size=2),
    met=st.sets(st.tuples(st.integers(0, 5), st.integers(0, 5))),
)
@settings(max_examples=300, deadline=None)
def test_the_default_search_is_exact_on_any_contract(prices, most, met):
    """Any set of fleets may meet the contract (a slow GPU added can break it): the default
    search returns brute force's answer exactly."""
    pools = [FleetPool(f"p{i}", price, most[i]) for i, price in enumerate(prices)]
    assert cheapest_fleet(pools, met.__contains__) == brute_force(pools, met.__contains__)


def test_bisection_misses_a_mixed_fleet_where_slow_instances_break_the_contract():
    """Five fast instances meet it; adding a slow one breaks it (its tail): the monotone
    search gives up on that count of fast ones; the default finds the cheapest stable fleet."""
    pools = [FleetPool("fast", 2.79, 6), FleetPool("slow", 1.29, 8)]

    def meets(counts):
        fast, slow = counts
        return fast >= 5 and slow <= 1  # a second slow instance breaks the tail

    assert cheapest_fleet(pools, meets, monotone=True) is None  # (5, 8) fails: no bisection
    assert cheapest_fleet(pools, meets) == (5, 0)  # it and (6, 0) meet


def test_a_first_slow_instance_that_breaks_the_tail_does_not_disqualify_the_fast_fleet():
    """Five fast instances meet the contract, six too; any slow one added breaks it: the fast
    fleet is the answer (the guard looks along the pools a fleet uses)."""
    pools = [FleetPool("fast", 2.79, 6), FleetPool("slow", 1.29, 8)]
    assert cheapest_fleet(pools, lambda c: c[0] >= 5 and c[1] == 0) == (5, 0)


def test_a_lucky_count_is_not_the_answer():
    """A noisy tail: 16 slips under the bound, 17 does not, 20 and up do."""
    pools = [FleetPool("a10s", 1.29, 40)]
    met = {(16,)} | {(n,) for n in range(20, 41)}
    assert cheapest_fleet(pools, met.__contains__) == (20,)


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
    result = search_fleet(config, slos, most, tmp_path / "search", monotone=True)
    # brute force: every fleet within the bounds, each simulated (the same runs, its own store)
    pools = fleet_pools(config, most)
    evaluate = FleetEvaluator(config, slos, [0], RunStore(tmp_path / "brute"), Execution(), Progress("brute", 0, show=False))
    expected = brute_force(pools, evaluate)
    assert expected is not None and result.best == expected
    # the answer is a real trade-off: neither GPU alone is the cheapest
    assert all(expected) and len(evaluate.points) == 14
    assert len(result.evaluated) < len(evaluate.points)  # the search skipped fleets
    exact = search_fleet(config, slos, most, tmp_path / "search")  # the same runs, in cost order
    assert exact.best == expected
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


# -- the fleet study (sim.studies.fleet) ------------------------------------------------------

def fleet_grid(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "fleet_grid.yaml"
    path.write_text(
        f"""
name: tiny
base: {REPO / "experiments" / "configs" / "mixed_a10_a100.yaml"}
set: {{workload.num_requests: 600, workload.arrival.rate: 1.0}}
seeds: 1
pools:
  a10s: {{model: llama-7b, device: a10}}
  a100s: {{model: llama-7b, device: a100_80gb}}
fleets:
  A10: {{a10s: 3}}
  A10+A100: {{a100s: 1, a10s: 2}}
schedulers:
  llumnix: {{scheduler.name: llumnix}}
contracts:
  loose: [prefill_latency.p99<=20]
  tight: [prefill_latency.p99<=0.001]
{extra}"""
    )
    return path


def test_the_study_writes_a_row_per_fleet_scheduler_and_contract_and_the_readme_table(tmp_path, capsys):
    from sim.studies import fleet as study

    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{study.README_BEGIN}\nold\n{study.README_END}\nafter\n")
    code = study.main([str(fleet_grid(tmp_path)), "--out", str(tmp_path / "out"), "--readme", str(readme), "--quiet"])
    assert code == 0
    table = pd.read_csv(tmp_path / "out" / "fleet.csv", keep_default_na=False)
    assert list(zip(table["fleet"], table["contract"])) == [("A10", "loose"), ("A10", "tight"),
                                                             ("A10+A100", "loose"), ("A10+A100", "tight")]
    tight = table[table["contract"] == "tight"]
    assert (tight["counts"] == "").all()  # no fleet answers in a millisecond
    loose = table[table["contract"] == "loose"]
    assert (loose["counts"] != "").all()  # twenty seconds: some fleet of each kind answers
    a10 = loose.iloc[0]
    n = int(a10["counts"].split()[0])
    assert float(a10["hourly_cost"]) == pytest.approx(1.29 * n)  # the A10's list price per instance
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    bound = " at its bound" if a10["at_bound"] else ""  # (3 a10s is this grid's bound)
    assert f"| A10 | llumnix | ${1.29 * n:.2f}/h ({n} a10s{bound}) | none within the bounds |" in text
    assert (tmp_path / "out" / "fleet.png").read_bytes()[:4] == b"\x89PNG"


def test_the_committed_page_table_is_the_committed_studys():
    from sim.studies import fleet as study

    grid = study.load_fleet_grid(REPO / "experiments" / "grids" / "fleet.yaml")
    table = pd.read_csv(REPO / "results" / "fleet" / "fleet.csv", keep_default_na=False)
    table["hourly_cost"] = pd.to_numeric(table["hourly_cost"])
    block = study.markdown(table, grid.contracts)
    assert f"{study.README_BEGIN}\n{block}\n{study.README_END}" in (REPO / "docs" / "fleet.md").read_text()


@pytest.mark.parametrize(
    "extra, message",
    [
        ("colour: blue", "unknown key colour"),
        ("", None),
    ],
)
def test_a_bad_fleet_grid_names_the_key(tmp_path, extra, message):
    from sim.studies import fleet as study

    if message is None:
        path = fleet_grid(tmp_path)
        path.write_text(path.read_text().replace("A10: {a10s: 3}", "A10: {h100s: 3}"))
        message = "fleets.A10.h100s: no such pool"
    else:
        path = fleet_grid(tmp_path, extra)
    with pytest.raises(ConfigError, match=message):
        study.load_fleet_grid(path)


@pytest.mark.parametrize(
    "overrides, slos, seeds, message",
    [
        ([], ["tier3.prefill_latency.p99<=2"], 1, "no tier 3"),
        ([], CONTRACT, 0, "--seeds: must be in 1"),
        (["cost.sku_prices=false"], CONTRACT, 1, "set cost.sku_prices: true"),
    ],
)
def test_a_fleet_search_checks_what_it_needs_before_its_first_run(tmp_path, overrides, slos, seeds, message):
    config = load_config(two_sku_config(tmp_path), overrides)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        search_fleet(config, [parse_slo(t) for t in slos], {"a10s": 2, "a100s": 1}, tmp_path / "x", seeds)
    assert not (tmp_path / "x" / "runs").exists() or not any((tmp_path / "x" / "runs").iterdir())


def test_an_answer_at_a_bound_says_no_larger_fleet_confirmed_it(tmp_path, capsys):
    code = main(["capacity", str(two_sku_config(tmp_path)), "--fleet", "a10s=1", "a100s=1", "--quiet",
                 "--out", str(tmp_path / "out"), "--slo", "prefill_latency.p99<=20"])
    out = capsys.readouterr().out
    assert code == 0 and "at the bound of" in out


# -- fleets the search makes up: checked apart from the user's config -----------------------

SMALL = """
name: made_up
workload: {{source: synthetic, num_requests: 30, arrival: {{process: poisson, rate: 2.0}}}}
{rest}
"""


@pytest.mark.parametrize(
    ("rest", "most", "best", "skipped", "reason"),
    [
        (
            "pools:\n  - {name: p, instances: 1, role: prefill}\n  - {name: d, instances: 1, role: decode}\n",
            {"p": 1, "d": 1}, (1, 1), [(0, 1), (1, 0)], "pools[*].role: ",
        ),
        (
            "cluster: {instances: 3}\nfaults: [{kind: instance_failure, at: 1.0, instance: 2, on_failure: retry}]\n",
            {"cluster": 3}, (3,), [(1,), (2,)], "faults[0].instance: no instance 2 at start",
        ),
    ],
    ids=["role pools", "a fault on instance 2"],
)
def test_a_fleet_that_cannot_exist_is_skipped_and_counted_not_the_users_error(tmp_path, rest, most, best, skipped, reason):
    """A PD fleet without its decode (or prefill) pool, and a fleet smaller than the instance
    a fault fails, are fleets the search made up: each was reported as the user's config
    breaking a rule, and ended the search."""
    path = tmp_path / "c.yaml"
    path.write_text(SMALL.format(rest=rest))
    config = load_config(path)
    result = search_fleet(config, [parse_slo("e2e_latency.mean<=1000")], most, tmp_path / "search")
    assert result.best == best
    assert sorted(result.skipped) == skipped
    assert all(text.startswith(reason) or reason in text for text in result.skipped.values())
    written = json.loads((tmp_path / "search" / "fleet.json").read_text())["skipped"]
    assert len(written) == len(skipped)


SPOT_CONTRACT = ["prefill_latency.p99<=5", "decode_latency_per_token.p99<=0.15"]


def spot_fleet_config(tmp_path: Path) -> Path:
    """A10s on spot (a notice a minute each, 30 s of grace, replaced after 30 s) beside
    on-demand A10s at a flat price: the spot ones cost 0.3 of it."""
    path = tmp_path / "spot_fleet.yaml"
    path.write_text(
        """
name: spot_fleet_case
seed: 0
pools:
  - {name: spot, model: llama-7b, device: a10, instances: 1,
     spot: {price: 0.3, preemption: {rate_per_hour: 60}, grace: 30, cold_start: 30}}
  - {name: od, model: llama-7b, device: a10, instances: 1}
workload:
  source: lengths
  trace: traces/sharegpt/sharegpt_v3_first_turn.csv
  num_requests: 300
  shape: {preset: sharegpt-gpt4}
  arrival: {process: poisson, rate: 1.0}
scheduler: {name: llumnix}
"""
    )
    return path


def test_fleet_search_with_a_spot_pool_gives_the_brute_force_answer_met_on_every_seed(tmp_path):
    from sim.sweep.capacity import judge
    from sim.sweep.grid import run_key
    from sim.sweep.fleet import with_counts

    config = load_config(spot_fleet_config(tmp_path))
    slos = [parse_slo(text) for text in SPOT_CONTRACT]
    most = {"spot": 3, "od": 2}
    pools = fleet_pools(config, most)
    assert [pool.hourly_price for pool in pools] == [0.3, 1.0]  # spot at its own price
    result = search_fleet(config, slos, most, tmp_path / "search", seeds=2)
    store = RunStore(tmp_path / "brute")
    evaluate = FleetEvaluator(config, slos, [0, 1], store, Execution(), Progress("brute", 0, show=False))
    expected = brute_force(pools, evaluate)
    assert expected is not None and result.best == expected
    # the answer meets the contract under each seed's notices alone, and every cheaper fleet
    # misses it under at least one
    for counts, point in evaluate.points.items():
        each = [judge(1.0, slos, [store.summary(run_key(with_counts(config, counts, seed)))]).meets for seed in (0, 1)]
        assert point.meets == all(each)
        if hourly_cost(pools, counts) < hourly_cost(pools, expected):
            assert not all(each)
