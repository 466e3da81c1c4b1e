"""Grids expand to the runs they describe, keys depend on what a run computes, and a bad grid
stops before anything runs with one line naming the cell and the key."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sim.config import ConfigError, load_config
from sim.sweep import expand, load_grid, run_key
from sim.sweep.runner import check_grid
from sim.workload import build_workload
from tests.sweep_support import GRIDS, REPO

BASE = {"workload": {"num_requests": 50}, "cluster": {"instances": 2}}


def grid(**spec):
    return expand({"base": BASE, **spec}, "test.yaml")


@pytest.mark.parametrize(
    ("name", "cells", "seeds"),
    [
        ("k_sweep_smoke", 2 * 2 * 2 * 2 * 3, 2),
        ("k_study", 2 * 4 * 10 * 3 * 3, 10),
        ("k_study_smoke", 2 * 2 * 3 * 2 * 3, 3),
        # Fig. 11: 2 datasets x 5 rates x 3 schedulers + 5 synthetic x 5 x 2; Fig. 13: 4 CVs x 2;
        # Figs. 14-15: (6 rates + 5 CVs + 5 thresholds) x 2; the diagnostic parts: artifact reports
        # 4 CVs x 2, LCFS-normal 4 CVs x 1
        ("paper", 2 * 5 * 3 + 5 * 5 * 2 + 4 * 2 + (6 + 5 + 5) * 2 + 4 * 2 + 4, 5),
        ("paper_smoke", 2 * 3 + 5 * 2 + 2 * 2 + (1 + 1 + 2) * 2 + 2, 1),
        ("scalability", 5 * 2, 2),
        ("scalability_smoke", 2 * 2, 1),
        ("slo_floor_smoke", 2 * 2, 1),
        ("stress", 2 * 2 * 2, 3),
        ("stress_smoke", 2 * 1 * 2, 2),
        ("pd_interference", 6 * 5, 3),  # (request shape, rate) pairs x layouts
        ("pd_interference_smoke", 2 * 2, 1),
    ],
)
def test_shipped_grids_expand_to_their_counts_and_pass_the_engine_checks(name, cells, seeds):
    loaded = load_grid(GRIDS / f"{name}.yaml")
    assert (len(loaded.cells), len(loaded.seeds), len(loaded.runs)) == (cells, seeds, cells * seeds)
    assert len({run.key for run in loaded.runs}) == len(loaded.runs)  # every run distinct
    check_grid(loaded)


def test_axes_multiply_zip_blocks_vary_together_and_variants_bundle_settings():
    g = grid(
        seeds=2,
        axes={"workload.arrival.rate": [2, 4, 8]},
        zip=[
            {
                "workload.priority.tiers": [1, 3],
                "workload.priority.sampler": ["uniform", "gaussian"],
            }
        ],
        variants={
            "scheduler": {
                "llumnix": {"scheduler.name": "llumnix", "scheduler.headroom.h_max": 0.3},
                "infaas": {"scheduler": {"name": "infaas++"}},
            }
        },
    )
    assert len(g.cells) == 3 * 2 * 2 and len(g.runs) == 24
    assert g.columns == [
        "workload.arrival.rate",
        "workload.priority.tiers",
        "workload.priority.sampler",
        "scheduler",
    ]
    pairs = {(r.config.workload.priority.tiers, r.config.workload.priority.sampler) for r in g.runs}
    assert pairs == {(1, "uniform"), (3, "gaussian")}
    llumnix = [r.config for r in g.runs if r.cell.coords["scheduler"] == "llumnix"]
    assert {c.scheduler.name for c in llumnix} == {"llumnix"} and {
        c.scheduler.headroom.h_max for c in llumnix
    } == {0.3}
    infaas = [r.config for r in g.runs if r.cell.coords["scheduler"] == "infaas"]
    assert {c.scheduler.headroom.h_max for c in infaas} == {0.2}  # a mapping merges into the base
    assert {c.cluster.instances for c in infaas} == {2}


def test_parts_are_a_union_and_seeds_replicate_every_cell():
    g = grid(
        seeds=[5, 9],
        axes={"workload.arrival.rate": [2, 4]},
        parts=[
            {"name": "a", "set": {"cluster.instances": 3}},
            {"name": "b", "axes": {"cluster.instances": [1, 4, 8]}},
        ],
    )
    assert len(g.cells) == 2 + 2 * 3 and {r.seed for r in g.runs} == {5, 9}
    assert g.columns[0] == "part"
    assert {r.config.cluster.instances for r in g.runs if r.cell.coords["part"] == "a"} == {3}


def test_the_key_is_what_the_run_computes_not_where_it_writes():
    config = load_config(base=BASE)
    renamed = load_config(
        base=BASE, overrides=["name=other", "output.dir=/elsewhere", "output.plots=false"]
    )
    assert run_key(config) == run_key(renamed)
    assert run_key(config) != run_key(load_config(base=BASE, overrides=["seed=1"]))
    assert run_key(config) != run_key(
        load_config(base=BASE, overrides=["output.timeseries_interval=2"])
    )


def test_variants_of_a_cell_see_the_same_requests_at_the_same_seed():
    g = grid(
        seeds=2,
        variants={
            "scheduler": {"a": {"scheduler.name": "llumnix"}, "b": {"scheduler.name": "infaas++"}}
        },
    )
    by_seed = {}
    for run in g.runs:
        workload = build_workload(run.config.workload, run.seed)
        by_seed.setdefault(run.seed, []).append(
            (workload.arrival.tolist(), workload.prompt_tokens.tolist())
        )
    for seed, (first, second) in by_seed.items():
        assert first == second
    assert by_seed[0][0] != by_seed[1][0]


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ({"axis": {}}, "axis: unknown grid key"),
        ({"axes": {"workload.arrival.rate": []}}, "axes.workload.arrival.rate: empty list"),
        (
            {"zip": [{"workload.arrival.rate": [1, 2], "cluster.instances": [1]}]},
            "zip[0]: lists of different lengths",
        ),
        (
            {
                "axes": {"scheduler.name": ["llumnix"]},
                "variants": {"s": {"x": {"scheduler": {"name": "infaas++"}}}},
            },
            "variants.s: sets scheduler.name, which axes.scheduler.name already varies",
        ),
        ({"axes": {"seed": [1, 2]}}, "vary seeds with 'seeds: N'"),
        ({"seeds": 0}, "seeds: must be >= 1"),
        ({"tables": ["batches"]}, "tables: unknown table 'batches'"),
        (
            {"axes": {"workload.arival.rate": [1]}},
            "cell [workload.arival.rate=1]: workload.arival: unknown key",
        ),
        (
            {"axes": {"workload.arrival.rate": [2, -1]}},
            "cell [workload.arrival.rate=-1]: workload.arrival.rate: must be >= 0.001",
        ),
        ({"parts": [{"name": "p", "axis": {}}]}, "parts.p.axis: unknown grid key"),
    ],
)
def test_a_bad_grid_names_the_cell_and_the_key(spec, named):
    with pytest.raises(ConfigError) as error:
        grid(**spec)
    message = str(error.value)
    assert message.startswith("test.yaml: ") and named in message and "\n" not in message


def test_names_the_engine_rejects_stop_the_grid_before_it_runs():
    g = grid(axes={"scheduler.name": ["llumnix", "fifo"]})
    with pytest.raises(
        ConfigError, match=r"cell \[scheduler.name=fifo\]: scheduler.name: unknown scheduler"
    ):
        check_grid(g)


def test_cli_exits_2_with_one_line_for_a_bad_grid(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        f"base: {REPO}/experiments/configs/quickstart.yaml\naxes:\n  cluster.instances: [4, 0]\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "sim", "sweep", str(path), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"llumsim: error: {path}: cell [cluster.instances=0]: cluster.instances: must be >= 1, got 0"
    )
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written
