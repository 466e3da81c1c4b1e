"""``llumsim capacity --grid``: one capacity search per cell and seed, run in step.

Known answers from fake runs whose attainment is a known function of the rate (the tier*
bound is K bounds; a bound no rate meets answers ``none``; the paired ratio to the baseline
cancels what the seeds share); the smoke grid on the real simulator (K = 1 cells of
different mixes are one simulation and give one answer; every answer agrees with its
points; a resumed grid computes nothing and writes the same bytes); bad keys exit 2. And
the same question with auto-scaling on: the k_autoscale smoke grid scales.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cli.main import main
from sim.config import ConfigError
from sim.sweep.capacity import rate_search
from sim.sweep.capacity_grid import load_capacity_grid, run_capacity_grid
from sim.sweep.execution import Execution
from sim.sweep.stats import SEED_LOOKS, sequential_ratio, unsettled
from tests.sweep_support import GRIDS, fake_summary
from tests.test_bad_inputs import exits_2_with_one_line

SMOKE = GRIDS / "k_capacity_smoke.yaml"
TABLES = ("index.csv", "index.parquet", "searches.csv", "searches.parquet", "capacity_grid.json")


def fake_attainment(share):
    """Fake runs (both entry points of sim.sweep.cell) whose tier t attains
    ``share(config, t)`` of its requests."""

    def summary(config):
        result = fake_summary(config, 0.1, config.workload.priority.tiers)
        by_tier = {str(t): {"attainment": share(config, t)} for t in range(config.workload.priority.tiers)}
        result["slo"] = {"overall": {"attainment": 1.0}, "by_tier": by_tier}
        return result

    def run_cell(config, tables=()):
        return summary(config)

    def run_shared(configs, tables=()):
        return [summary(c) for c in configs]

    return run_cell, run_shared


def patch_runs(monkeypatch, share) -> None:
    run_cell, run_shared = fake_attainment(share)
    monkeypatch.setattr("sim.sweep.cell.run_cell", run_cell)
    monkeypatch.setattr("sim.sweep.cell.run_shared", run_shared)


def grid_file(tmp_path, body: str):
    path = tmp_path / "g.yaml"
    path.write_text(
        "name: g\nbase: {workload: {num_requests: 10, arrival: {rate: 3.0}}, cluster: {instances: 2},"
        " slo: {ladder: {ttft: 1.0, tpot: 0.1}}}\n" + body
    )
    return path


def test_every_tier_bound_is_k_bounds_and_the_strictest_sets_the_capacity(tmp_path, monkeypatch):
    # tier t attains 1 - rate (t + 1) / 100: >= 0.9 up to 10 / (t + 1) req/s, so with K tiers
    # the last one binds and the capacity is 10 / K
    patch_runs(monkeypatch, lambda c, t: 1 - c.workload.arrival.rate * (t + 1) / 100)
    path = grid_file(
        tmp_path,
        "axes: {workload.priority.tiers: [1, 2, 5]}\ncapacity: {slo: ['tier*.attainment>=0.9'], tolerance: 0.01}\n",
    )
    outcome, index = run_capacity_grid(load_capacity_grid(path), tmp_path / "out", Execution(jobs=1))
    assert list(index["answer"]) == ["bracketed"] * 3 and outcome.failed == 0
    for tiers, rate, high in zip(index["workload.priority.tiers"], index["rate"], index["bracket_high"]):
        assert rate <= 10 / tiers < high and (high - rate) / rate <= 0.01
    assert list(index["rate_per_gpu"]) == pytest.approx(list(index["rate"] / 2))


def test_a_bound_no_rate_meets_answers_none_from_the_lowest_rate(tmp_path, monkeypatch):
    patch_runs(monkeypatch, lambda c, t: 1 - c.workload.arrival.rate / 100)  # 0.995 at 0.5 req/s
    path = grid_file(tmp_path, "seeds: 2\ncapacity: {slo: ['tier*.attainment>=0.999'], low: 0.5}\n")
    _, index = run_capacity_grid(load_capacity_grid(path), tmp_path / "out", Execution(jobs=1))
    row = index.iloc[0]
    assert row["answer"] == "none" and row["answers"] == "none 2"
    assert math.isnan(row["rate"]) and (row["bracket_low"], row["bracket_high"]) == (0.0, 0.5)
    searches = pd.read_csv(tmp_path / "out" / "searches.csv")
    assert list(searches["rates_tried"]) == [1, 1]  # the lowest rate missed: nothing below is tried


@settings(max_examples=300, deadline=None)
@given(
    capacity=st.floats(0.05, 500.0),
    near_low=st.floats(0.02, 800.0),
    width=st.floats(0.01, 3.0),
)
def test_a_search_started_near_another_seeds_bracket_still_brackets_its_own_capacity(capacity, near_low, width):
    # wherever the other seeds' bracket lies (around, above or below this seed's capacity),
    # the search ends with a rate that meets just below one that misses, within tolerance
    search = rate_search(None, None, 7.5, 0.0625, near=(near_low, near_low * (1 + width)))
    tried = []
    try:
        rate, _ = next(search)
        while True:
            tried.append(rate)
            rate, _ = search.send(rate <= capacity)
    except StopIteration as stop:
        lo, hi = stop.value
    assert lo <= capacity < hi and (hi - lo) / lo <= 0.0625
    assert len(tried) <= 2 * 40  # widening, then bisecting: MAX_STEPS each at most


def test_later_seeds_search_from_the_first_seeds_bracket_and_try_fewer_rates(tmp_path, monkeypatch):
    # seed s carries (1 + s/50) x 10 req/s: seed 0 halves down from 40 req/s to its bracket,
    # the others start at the brackets found before them, and every answer is still its own
    patch_runs(monkeypatch, lambda c, t: 1 - c.workload.arrival.rate / (1 + c.seed / 50) / 100)
    path = grid_file(tmp_path, "seeds: 5\ncapacity: {slo: ['tier*.attainment>=0.9'], tolerance: 0.0625}\n")
    path.write_text(path.read_text().replace("rate: 3.0", "rate: 40.0"))
    _, index = run_capacity_grid(load_capacity_grid(path), tmp_path / "out", Execution(jobs=1))
    searches = pd.read_csv(tmp_path / "out" / "searches.csv").sort_values("seed")
    for seed, rate, high in zip(searches["seed"], searches["rate"], searches["bracket_high"]):
        assert rate <= 10 * (1 + seed / 50) < high and (high - rate) / rate <= 0.0625
    first, *later = searches["rates_tried"]
    assert max(later) < first, list(searches["rates_tried"])


def test_the_paired_ratio_cancels_what_the_seeds_share(tmp_path, monkeypatch):
    # the seed scales every scheduler's capacity alike (x1, x1/3, x2); llumnix carries twice
    # INFaaS++'s load: the unpaired means scatter, the paired ratio is 2 within the tolerance
    scale = {0: 1.0, 1: 3.0, 2: 0.5}

    def share(config, tier):
        carried = 0.5 if config.scheduler.name == "llumnix" else 1.0
        return 1 - config.workload.arrival.rate * scale[config.seed] * carried / 100

    patch_runs(monkeypatch, share)
    path = grid_file(
        tmp_path,
        "seeds: 3\nvariants: {scheduler: {infaas++: {scheduler.name: infaas++}, llumnix: {scheduler.name: llumnix}}}\n"
        "capacity: {slo: ['tier*.attainment>=0.9'], tolerance: 0.01, baseline: {scheduler: infaas++}}\n",
    )
    _, index = run_capacity_grid(load_capacity_grid(path), tmp_path / "out", Execution(jobs=1))
    base, llumnix = index.iloc[0], index.iloc[1]
    assert base["vs_baseline"] == pytest.approx(1.0)
    assert llumnix["vs_baseline"] == pytest.approx(2.0, rel=0.03)
    assert llumnix["vs_baseline.ci_high"] - llumnix["vs_baseline.ci_low"] < 0.1
    assert base["rate_per_gpu.ci_high"] - base["rate_per_gpu.ci_low"] > base["rate_per_gpu"]  # unpaired: wide


def test_a_failed_run_ends_its_search_not_the_grid(tmp_path, monkeypatch, capsys):
    def share(config, tier):
        if config.seed == 1:
            raise ConfigError("workload.trace: row 7: a bad row")
        return 1 - config.workload.arrival.rate / 100

    patch_runs(monkeypatch, share)
    path = grid_file(tmp_path, "seeds: 2\ncapacity: {slo: ['tier*.attainment>=0.9'], tolerance: 0.05}\n")
    assert main(["capacity", "--grid", str(path), "--out", str(tmp_path / "out"), "--jobs", "1", "--quiet"]) == 1
    assert "1 FAILED" in capsys.readouterr().out
    searches = pd.read_csv(tmp_path / "out" / "searches.csv")
    assert list(searches["answer"]) == ["bracketed", "failed"]
    assert "a bad row" in searches["error"][1]
    assert pd.read_csv(tmp_path / "out" / "index.csv")["answer"][0] == "mixed"


# ------------------------------------------------------------------ the smoke grid, real runs
@pytest.fixture(scope="module")
def smoke(smoke_results):
    out = smoke_results(SMOKE.stem)
    outcome, index = smoke_results.outcomes[SMOKE.stem]
    return out, outcome, index


def test_the_smoke_grid_answers_every_search_consistently_with_its_points(smoke):
    out, outcome, index = smoke
    searches = pd.read_csv(out / "searches.csv")
    assert len(index) == 8 and len(searches) == 16 and outcome.failed == 0
    assert set(searches["answer"]) == {"bracketed"}
    assert ((searches["bracket_high"] - searches["rate"]) / searches["rate"] <= 0.25).all()
    assert (searches["rate"] == searches["bracket_low"]).all()
    # K = 1: every request is tier 0 whatever the mix, so both mixes are one simulation
    k1 = searches[searches["workload.priority.tiers"] == 1]
    by_mix = k1.pivot_table(index=["scheduler", "seed"], columns="workload.priority.sampler", values="rate")
    assert (by_mix["uniform"] == by_mix["enterprise"]).all()
    assert outcome.simulations < outcome.runs  # INFaaS++ and K = 1 shared theirs
    assert (index.loc[index["scheduler"] == "infaas++", "vs_baseline"] == 1.0).all()


def test_a_resumed_smoke_grid_computes_nothing_and_writes_the_same_bytes(smoke):
    out, first, _ = smoke
    before = {name: (out / name).read_bytes() for name in TABLES}
    again, _ = run_capacity_grid(load_capacity_grid(SMOKE), out, Execution(jobs=1))
    assert again.computed == 0 and again.reused == first.runs == again.runs
    assert {name: (out / name).read_bytes() for name in TABLES} == before


# ------------------------------------------------------------------ bad input
BAD = {
    "no capacity section": ("", "capacity: a capacity grid needs a capacity section"),
    "unknown key": ("capacity: {slo: ['attainment>=0.9'], slos: 1}\n", "g.yaml: capacity.slos: unknown key (known: slo,"),
    "no bounds": ("capacity: {slo: []}\n", "capacity.slo: expected a list of bounds"),
    "a bad bound": ("capacity: {slo: ['tier*.attainment<=0.9']}\n", "capacity.slo 'tier*.attainment<=0.9': expected"),
    "a tier a cell lacks": (
        "axes: {workload.priority.tiers: [1, 4]}\ncapacity: {slo: ['tier3.attainment>=0.9']}\n",
        "cell [workload.priority.tiers=1]: capacity.slo tier3.attainment: no tier 3",
    ),
    "a text tolerance": ("capacity: {slo: ['attainment>=0.9'], tolerance: fine}\n", "capacity.tolerance: expected a number"),
    "a bracket upside down": ("capacity: {slo: ['attainment>=0.9'], low: 4, high: 2}\n", "capacity.low: 4 req/s is not below"),
    "a baseline column it lacks": (
        "capacity: {slo: ['attainment>=0.9'], baseline: {scheduler: infaas++}}\n",
        "capacity.baseline.scheduler: not a column of this grid",
    ),
    "a baseline no cell has": (
        "variants: {scheduler: {a: {scheduler.name: llumnix}}}\ncapacity: {slo: ['attainment>=0.9'], baseline: {scheduler: b}}\n",
        "capacity.baseline.scheduler: no cell has 'b'",
    ),
}


@pytest.mark.parametrize(("body", "expected"), BAD.values(), ids=BAD.keys())
def test_a_bad_capacity_grid_exits_2_naming_the_key(body, expected, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sim.sweep.execution.execute", lambda *a, **k: pytest.fail("a run started"))
    argv = ["capacity", "--grid", str(grid_file(tmp_path, body)), "--out", str(tmp_path / "out")]
    assert expected in exits_2_with_one_line(argv, capsys)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--slo", "attainment>=0.5"], "--slo: a capacity grid sets it itself"),
        (["--seeds", "3"], "--seeds: a capacity grid sets it itself"),
        (["experiments/configs/slo_tiers.yaml"], "capacity: give a run config or --grid GRID (one of them)"),
    ],
)
def test_flags_a_capacity_grid_sets_itself_exit_2(argv, expected, capsys):
    assert expected in exits_2_with_one_line(["capacity", "--grid", str(SMOKE), *argv], capsys)


def test_a_capacity_grid_given_to_sweep_says_how_to_run_it(tmp_path, capsys):
    err = exits_2_with_one_line(["sweep", str(SMOKE), "--out", str(tmp_path / "out")], capsys)
    assert "capacity: a capacity grid; run it with llumsim capacity --grid" in err


# ------------------------------------------------------------------ with auto-scaling
def test_the_autoscale_smoke_grid_scales_and_judges_attainment_per_gpu_hour(tmp_path):
    from sim.sweep import load_grid, run_sweep

    run_sweep(load_grid(GRIDS / "k_autoscale_smoke.yaml"), tmp_path, Execution(jobs=1))
    index = pd.read_csv(tmp_path / "index.csv")
    assert len(index) == 2 * 2 * 2 and (index["status"] == "ok").all()
    # the bursts make every scheme scale out, so its GPU-hours are its own
    assert (index["scaling.actions.scale_out"] > 0).all()
    assert (index["cost.average_instances"] != 2).all()
    per_gpu_hour = index["slo.overall.attainment"] / index["cost.gpu_hours"]
    assert list(index["slo.overall.attainment_per_gpu_hour"]) == pytest.approx(list(per_gpu_hour))


def test_the_report_counts_k1_once_and_pairs_the_best_with_the_runner_up(smoke):
    from sim.studies.capacity_report import report

    out, _, index = smoke
    text = report(out)
    # K = 1 and K = 3 x two mixes: three distinct configurations per scheme, not four
    row = next(line for line in text.splitlines() if line.startswith("| llumnix | "))
    configurations, above, below, across, missing = (int(f) for f in row.split("|")[2:7])
    assert configurations == 3 == above + below + across + missing
    assert "in 3 distinct (K, mix) configurations" in text
    assert "**uniform**" in text and "**enterprise**" in text


def _floor_folders(tmp_path, floors, answers):
    """A fake slo_floor index (tier attainments per (mix, K, seed)) and a fake capacity grid
    whose searches answer ``answers[(mix, K, seed)]`` for both schemes."""
    import json

    floor, grid = tmp_path / "slo_floor", tmp_path / "k_capacity"
    floor.mkdir(), grid.mkdir()
    rows = []
    for (mix, k, seed), shares in floors.items():
        row = {"workload.priority.sampler": mix, "workload.priority.tiers": k, "seed": seed, "status": "ok",
               "slo.overall.attainment": shares[0]}
        row.update({f"slo.by_tier.{t}.attainment": share for t, share in enumerate(shares)})
        rows.append(row)
    pd.DataFrame(rows).to_parquet(floor / "index.parquet")
    (floor / "sweep.json").write_text("{}")  # a sweep's results, as the report checks
    searches = [
        {"workload.priority.sampler": mix, "workload.priority.tiers": k, "seed": seed, "scheduler": scheme, "answer": answer}
        for (mix, k, seed), answer in answers.items() for scheme in ("infaas++", "llumnix")
    ]
    pd.DataFrame(searches).to_parquet(grid / "searches.parquet")
    (grid / "capacity_grid.json").write_text(json.dumps({"name": "k_capacity", "slos": ["tier*.attainment>=0.9"]}))
    return floor, grid


def test_the_floor_report_matches_no_rate_searches_to_floors_below_the_bound(tmp_path):
    from sim.studies.capacity_report import floor_report

    floors = {("gaussian", 1, 0): [0.97], ("gaussian", 1, 1): [0.96],
              ("gaussian", 3, 0): [0.97, 0.95, 0.96], ("gaussian", 3, 1): [0.97, 0.85, 0.96]}
    answers = {key: "bracketed" for key in floors} | {("gaussian", 3, 1): "none"}
    text = floor_report(*_floor_folders(tmp_path, floors, answers), [0.9, 0.95])
    # the worst tier per seed: K = 3 has 0.95 and 0.85 (mean 0.90), one seed below 0.9, one below 0.95
    assert "| gaussian | 3 | 0.900 | 0.850 | 1 | 1 |" in text
    assert "| gaussian | 1 | 0.965 | 0.960 | 0 | 0 |" in text
    assert "with no load: 0.965 (seeds 0.960–0.970)" in text
    assert "no rate found: 1 (every scheme in 1); no-load floor below the bound: 1; in both: 1" in text


def test_the_floor_report_shows_a_no_rate_search_physics_does_not_explain(tmp_path):
    from sim.studies.capacity_report import floor_report

    floors = {("uniform", 2, 0): [0.97, 0.96], ("uniform", 2, 1): [0.97, 0.88]}
    # the seed that misses at no load found a rate, and the one that meets it found none
    answers = {("uniform", 2, 0): "none", ("uniform", 2, 1): "bracketed"}
    text = floor_report(*_floor_folders(tmp_path, floors, answers), [0.9])
    assert "no rate found: 1 (every scheme in 1); no-load floor below the bound: 1; in both: 0" in text


def test_a_grid_without_one_per_tier_attainment_share_has_no_floor_bound():
    from sim.studies.capacity_report import attainment_bound

    assert attainment_bound(["tier*.attainment>=0.9", "e2e_latency.mean<=20"]) == 0.9
    with pytest.raises(ValueError, match="no single per-tier attainment share"):
        attainment_bound(["tier0.prefill_latency.p99<=0.5"])


def test_the_autoscale_report_pairs_each_configuration_with_infaas_seed_by_seed(tmp_path):
    from sim.studies.capacity_report import autoscale_report

    rows = []
    for mix in ("uniform", "enterprise"):
        for k in (1, 4):
            for seed in range(5):
                base = 0.4 + 0.01 * seed  # what the seeds share cancels in the pairing
                for scheme, gain in (("infaas++", 1.0), ("llumnix", 1.1 if k == 4 else 1.0 + 0.02 * (seed % 2 * 2 - 1))):
                    rows.append({"workload.priority.tiers": k, "workload.priority.sampler": mix, "seed": seed,
                                 "status": "ok", "scheduler": scheme, "slo.overall.attainment": 0.8,
                                 "slo.tiers_met": 1, "cost.gpu_hours": 2.0,
                                 "slo.overall.attainment_per_gpu_hour": base * gain})
    (tmp_path / "k_autoscale").mkdir()
    pd.DataFrame(rows).to_parquet(tmp_path / "k_autoscale" / "index.parquet")
    (tmp_path / "k_autoscale" / "sweep.json").write_text("{}")
    text = autoscale_report(tmp_path / "k_autoscale")
    # K = 1 is one configuration whatever the mix: 3 distinct, two 1.1x above 1, K = 1 across
    row = next(line for line in text.splitlines() if line.startswith("| llumnix |"))
    assert row.split(" | ")[6:10] == ["3", "2", "0", "1"]
    assert row.endswith("| 1.100 (0.996–1.100) |")
    assert "| infaas++ | 15 | 0.800 |" in text  # 3 configurations x 5 seeds


def test_mixes_that_split_the_tiers_alike_are_one_configuration():
    from sim.studies.capacity_report import distinct

    cells = pd.DataFrame(
        [(k, mix, "llumnix") for k in (1, 2, 3, 10) for mix in ("uniform", "gaussian", "enterprise")],
        columns=["workload.priority.tiers", "workload.priority.sampler", "scheduler"],
    )
    kept = distinct(cells)
    by_k = kept.groupby("workload.priority.tiers")["workload.priority.sampler"].apply(list).to_dict()
    # K = 1: one tier; K = 2: Gaussian = uniform (1/2 each); K = 10: enterprise = uniform (10% each)
    assert by_k == {1: ["uniform"], 2: ["uniform", "enterprise"], 3: ["uniform", "gaussian", "enterprise"],
                    10: ["uniform", "gaussian"]}


@pytest.mark.parametrize(
    ("gain", "noise", "verdict"),
    [(1.3, 0.02, "yes"), (1.0, 0.05, "not separated"), (0.7, 0.02, "no: one tier is best")],
)
def test_more_tiers_help_only_where_the_widened_interval_clears_one_tier(gain, noise, verdict):
    """With gain 1.0 the best of nine equal K >= 2 (here K = 4) beats one tier by luck: its
    plain 95% interval lies above 1, the widened one does not."""
    import numpy as np

    from sim.sweep.capacity_grid import paired_ratio
    from sim.studies.capacity_report import best_k

    rng = np.random.default_rng(3)
    rows = []
    for seed in range(10):
        shared = rng.lognormal(0, 0.1)  # what K's runs of one seed share: its requests
        for k in range(1, 11):
            scale = gain if k >= 2 else 1.0
            rows.append({"scheduler": "llumnix", "workload.priority.sampler": "uniform", "workload.priority.tiers": k,
                         "seed": seed, "rate_per_gpu": 0.5 * shared * scale * rng.lognormal(0, noise)})
    searches = pd.DataFrame(rows)
    line = best_k(searches, ["llumnix"]).splitlines()[-1]
    assert line.endswith(f"| {verdict} |"), line
    if gain == 1.0:
        per_seed = searches.pivot_table(index="seed", columns="workload.priority.tiers", values="rate_per_gpu")
        assert paired_ratio(per_seed[4], per_seed[1])[1] > 1  # unwidened, luck would pass for a gain


# ------------------------------------------------------------------ contracts that share runs
CONTRACTS = GRIDS / "k_contract_smoke.yaml"


def test_contracts_search_every_cell_each_and_share_the_runs_they_have_in_common(smoke_results):
    out = smoke_results(CONTRACTS.stem)
    outcome, index = smoke_results.outcomes[CONTRACTS.stem]
    searches = pd.read_csv(out / "searches.csv")
    assert set(index["contract"]) == set(searches["contract"]) == {"attainment-90", "mean"}
    assert len(index) == 8 and len(searches) == 16 and outcome.failed == 0
    # one run answers both contracts: fewer distinct runs than the searches' rates tried
    assert outcome.runs < searches["rates_tried"].sum()
    # a tier-blind baseline under a held-still contract: the same capacity at K = 1 and K = 4
    infaas = searches[searches["scheduler"] == "infaas++"].pivot_table(
        index=["contract", "seed"], columns="workload.priority.tiers", values="rate"
    )
    assert (infaas[1] == infaas[4]).all()
    # each contract's cells are paired with that contract's baseline
    assert (index.loc[index["scheduler"] == "infaas++", "vs_baseline"] == 1.0).all()


def test_a_capacity_section_with_both_slo_and_contracts_or_a_bad_contract_is_refused(tmp_path):
    text = CONTRACTS.read_text().replace("base: ../configs/", f"base: {GRIDS.parent}/configs/")
    both = tmp_path / "both.yaml"
    both.write_text(text.replace("  contracts:", "  slo: ['class*.lateness.p90<=1']\n  contracts:"))
    with pytest.raises(ConfigError, match="give slo or contracts, not both"):
        load_capacity_grid(both)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace('mean: ["class*.lateness.mean<=1"]', 'mean: ["class*.lateness.mode<=1"]'))
    with pytest.raises(ConfigError, match=r"capacity\.contracts\.mean"):
        load_capacity_grid(bad)


# ------------------------------------------------------------------ the floor and sequential seeds
SCHEMES = (
    "variants: {scheduler: {infaas++: {scheduler.name: infaas++}, llumnix: {scheduler.name: llumnix},"
    " round-robin: {scheduler.name: round-robin}}}\n"
)


def test_a_bound_the_floor_fails_answers_floor_without_a_search_and_the_floor_table_says_why(tmp_path, monkeypatch):
    # tier 0 attains 0.97 at any light load and less as the rate grows: >= 0.9 is searched,
    # >= 0.99 fails at the floor and is never searched
    patch_runs(monkeypatch, lambda c, t: 0.97 - c.workload.arrival.rate / 100)
    path = grid_file(
        tmp_path,
        "seeds: 2\n" + SCHEMES + "capacity: {contracts: {loose: ['tier*.attainment>=0.9'], tight: "
        "['tier*.attainment>=0.99']}, floor: 0.05, tolerance: 0.05, baseline: {scheduler: infaas++}}\n",
    )
    outcome, index = run_capacity_grid(load_capacity_grid(path), tmp_path / "out", Execution(jobs=1))
    searches = pd.read_csv(tmp_path / "out" / "searches.csv")
    tight = searches[searches["contract"] == "tight"]
    assert (tight["answer"] == "floor").all() and (tight["rates_tried"] == 0).all()
    assert (searches.loc[searches["contract"] == "loose", "answer"] == "bracketed").all()
    floor = pd.read_csv(tmp_path / "out" / "floor.csv")
    # one check per baseline cell, contract and seed (every scheme's floor is INFaaS++'s)
    assert len(floor) == 4 and set(floor["scheduler"]) == {"infaas++"} and (floor["rate"] == 0.1).all()
    assert floor.groupby("contract")["meets"].all().to_dict() == {"loose": True, "tight": False}
    assert floor["tier0.attainment"].tolist() == pytest.approx([0.969] * 4)
    assert set(index.loc[index["contract"] == "tight", "answer"]) == {"floor"}


def _seeded_noise(config) -> float:
    return float(np.random.default_rng(config.seed + 4).lognormal(0, 0.1))


def test_sequential_seeds_go_on_only_where_the_ratio_is_unsettled(tmp_path, monkeypatch):
    # llumnix carries 1/0.5 = 2x INFaaS++'s load (settled at 5 seeds); round-robin the same
    # load with independent 20% noise per seed (its true ratio 1.15: unsettled for two looks)
    def share(config, tier):
        carried = {"infaas++": 1.0, "llumnix": 0.5, "round-robin": 1 / 1.15 * _seeded_noise(config) ** 2}
        return 1 - config.workload.arrival.rate * carried[config.scheduler.name] / 100

    patch_runs(monkeypatch, share)
    path = grid_file(
        tmp_path,
        "seeds: 20\n" + SCHEMES + "capacity: {slo: ['tier*.attainment>=0.9'], tolerance: 0.01,"
        " baseline: {scheduler: infaas++}, sequential: true}\n",
    )
    _, index = run_capacity_grid(load_capacity_grid(path), tmp_path / "out", Execution(jobs=1))
    seeds = dict(zip(index["scheduler"], index["seeds"]))
    assert seeds["llumnix"] == 5
    assert 5 < seeds["round-robin"] < 20 and seeds["infaas++"] == seeds["round-robin"]
    searches = pd.read_csv(tmp_path / "out" / "searches.csv")
    ratios = (
        searches.pivot_table(index="seed", columns="scheduler", values="rate_per_gpu")
        .pipe(lambda t: t["round-robin"] / t["infaas++"])
        .dropna()
    )
    for look in SEED_LOOKS:  # each look the rule took was unsettled before it, the last one settled
        if look < seeds["round-robin"]:
            assert unsettled(ratios.iloc[:look].to_numpy())
    assert not unsettled(ratios.to_numpy())
    row = index[index["scheduler"] == "round-robin"].iloc[0]
    assert (row["vs_baseline"], row["vs_baseline.ci_low"], row["vs_baseline.ci_high"]) == pytest.approx(
        sequential_ratio(ratios.to_numpy())
    )


def test_sequential_seeds_need_a_baseline_and_enough_seeds(tmp_path):
    path = grid_file(tmp_path, "seeds: 20\ncapacity: {slo: ['tier*.attainment>=0.9'], sequential: true}\n")
    with pytest.raises(ConfigError, match="sequential: needs a baseline"):
        load_capacity_grid(path)
    path = grid_file(
        tmp_path,
        "seeds: 5\n" + SCHEMES + "capacity: {slo: ['tier*.attainment>=0.9'], sequential: true,"
        " baseline: {scheduler: infaas++}}\n",
    )
    with pytest.raises(ConfigError, match="at least 20"):
        load_capacity_grid(path)
    path = grid_file(tmp_path, "capacity: {slo: ['tier*.attainment>=0.9'], floor: 0}\n")
    with pytest.raises(ConfigError, match="capacity.floor"):
        load_capacity_grid(path)


def _seed_1_below_the_floor(tmp_path, monkeypatch, seeds: int, sequential: bool):
    """A grid whose seed 1's requests miss 0.9 at any load; llumnix carries 2x INFaaS++'s
    load, round-robin 1.15x with 20% noise per seed. Returns the index."""
    def share(config, tier):
        carried = {"infaas++": 1.0, "llumnix": 0.5, "round-robin": 1 / 1.15 * _seeded_noise(config) ** 2}
        floor = 0.85 if config.seed == 1 else 0.97
        return floor - config.workload.arrival.rate * carried[config.scheduler.name] / 100

    patch_runs(monkeypatch, share)
    path = grid_file(
        tmp_path,
        f"seeds: {seeds}\n" + SCHEMES + "capacity: {slo: ['tier*.attainment>=0.9'], tolerance: 0.01, floor: 0.05,"
        f" baseline: {{scheduler: infaas++}}, sequential: {str(sequential).lower()}}}\n",
    )
    return run_capacity_grid(load_capacity_grid(path), tmp_path / "out", Execution(jobs=1))[1]


def test_a_seed_whose_requests_fail_the_floor_is_left_out_of_the_comparison_not_the_cell(tmp_path, monkeypatch):
    index = _seed_1_below_the_floor(tmp_path, monkeypatch, 3, sequential=False)
    llumnix = index[index["scheduler"] == "llumnix"].iloc[0]
    assert llumnix["answers"] == "bracketed 2, floor 1" and llumnix["floored"] == 1
    assert llumnix["vs_baseline"] == pytest.approx(2.0, rel=0.03) and llumnix["rate_per_gpu"] > 0


def test_a_floored_seed_counts_as_searched_so_an_unsettled_cell_still_gets_its_next_look(tmp_path, monkeypatch):
    row = _seed_1_below_the_floor(tmp_path, monkeypatch, 20, sequential=True)
    row = row[row["scheduler"] == "round-robin"].iloc[0]
    assert row["floored"] == 1 and row["seeds"] > 5
