"""The paper's claims table: each computation on a hand-built index (seeds paired, the
paper's own set-up graded, medians not maxima, both ends of a range, all three parts of
C30), notes free of typed numbers, and the command end to end on one smoke part."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sim.cli.main import main
from sim.config import load_config
from sim.config.loader import read_yaml
from sim.sweep.grid import load_grid
from sim.workload import build_workload
from sim.studies.paper import (
    E2E,
    PRE,
    Note,
    Runs,
    claims,
    claims_table,
    grade_claim,
    paired_values,
    saving_at_equal_tail,
    tier,
)

P99 = "latency.prefill_latency.p99"
GRIDS = Path(__file__).resolve().parents[1] / "experiments" / "grids"


def serving(part, scheduler, rate, seed, p99):
    return {"part": part, "scheduler": scheduler, "workload.arrival.rate": rate, "seed": seed, P99: p99}


def claim(id_, statistic_word=""):
    (found,) = [c for c in claims() if c.id == id_ and statistic_word in c.statistic]
    return found


def test_ratios_pair_the_runs_of_one_seed():
    rows = [
        serving("serving-M-M", "infaas++", 7.4, 0, 6.0),
        serving("serving-M-M", "infaas++", 7.4, 1, 2.0),
        serving("serving-M-M", "llumnix", 7.4, 0, 1.0),
        serving("serving-M-M", "llumnix", 7.4, 1, 2.0),
        serving("serving-M-M", "llumnix", 7.4, 2, 2.0),  # no INFaaS++ run of seed 2: not paired
        serving("serving-L-L", "infaas++", 2.6, 0, 4.0),  # no Llumnix point: ignored
    ]
    values = paired_values(pd.DataFrame(rows), ["serving-M-M", "serving-L-L"], P99, "infaas++", "ratio")
    assert list(values["seed"]) == [0, 1] and list(values["value"]) == [6.0, 1.0]
    row = grade_claim(claim("C20"), Runs(pd.DataFrame(rows)))
    # the geometric mean of the paired ratios, sqrt(6), not the ratio of means 4 / 1.67
    assert row["llumsim"].startswith("2.45×") and "to" in row["llumsim"]  # with its interval


def mm_and_ls(mm_ratios, ls_ratio=15.0, seeds=(0, 1, 2)):
    """An index where M-M's points have the given INFaaS++/Llumnix P99 ratios (the same at
    every seed, up to a seed's small wobble) and L-S has a far larger one."""
    rows = []
    for seed in seeds:
        wobble = 1 + 0.01 * seed
        for rate, ratio in zip([7.4, 7.5, 7.6, 7.7, 7.8], mm_ratios):
            rows += [serving("serving-M-M", "infaas++", rate, seed, 2.0 * ratio * wobble),
                     serving("serving-M-M", "llumnix", rate, seed, 2.0)]
        rows += [serving("serving-L-S", "infaas++", 18, seed, 2.0 * ls_ratio),
                 serving("serving-L-S", "llumnix", 18, seed, 2.0)]
    return pd.DataFrame(rows)


def test_an_up_to_claim_is_graded_on_the_papers_own_set_up_by_the_median_of_its_points():
    row = grade_claim(claim("C20"), Runs(mm_and_ls([1.2, 1.3, 15.0, 1.25, 1.4])))
    assert row["set-up"] == "serving-M-M"  # L-S's 15x is not the M-M headline
    assert row["llumsim"].startswith("1.31×")  # the median point, not the 15x maximum
    assert row["agreement"] == "differs"
    assert row["points"] == "1/5 match, 4 differs (3 seeds)"
    assert row["direction"] == "Llumnix 5/5 better"
    near = grade_claim(claim("C20"), Runs(mm_and_ls([9.0, 11.5, 12.0, 12.5, 13.0])))
    assert near["agreement"] == "match" and near["points"].startswith("4/5 match, 1 near")


def priorities(ratios, column, seeds=(0, 1)):
    """Llumnix-base / Llumnix of one tier statistic at the CVs 2, 4, 6, 8."""
    rows = []
    for seed in seeds:
        for cv, ratio in zip([2, 4, 6, 8], ratios):
            rows += [
                {"part": "priorities", "scheduler": "llumnix-base", "workload.arrival.cv": cv, "seed": seed,
                 column: ratio * (1 + 0.01 * seed)},
                {"part": "priorities", "scheduler": "llumnix", "workload.arrival.cv": cv, "seed": seed, column: 1.0},
            ]
    return pd.DataFrame(rows)


def test_a_range_checks_both_of_its_ends():
    column = tier(E2E, 0, "mean")
    good = grade_claim(claim("C26"), Runs(priorities([1.25, 1.3, 1.4, 1.5], column)))
    assert good["agreement"] == "match" and good["points"].startswith("4/4 match")
    low_off = grade_claim(claim("C26"), Runs(priorities([1.06, 1.3, 1.4, 1.5], column)))
    assert low_off["agreement"] == "differs"  # the top end matches; the bottom does not
    assert low_off["where"] == "lowest priorities at CV 2; highest priorities at CV 8"
    worse = grade_claim(claim("C27", "P99"), Runs(priorities([1 / 11, 4.0, 6.0, 9.0], tier(PRE, 0, "p99"))))
    assert worse["agreement"] == "differs" and worse["direction"] == "Llumnix 3/4 better, 1 worse"


def test_normal_degradation_checks_request_prefill_and_decode():
    rows = []
    for seed in (0, 1):
        for cv in (2, 4):
            for scheduler, scale in (("llumnix-base", 1.0), ("llumnix", 1.0)):
                rows.append({
                    "part": "priorities", "scheduler": scheduler, "workload.arrival.cv": cv, "seed": seed,
                    tier(E2E, 1, "mean"): 10.0 * (1.03 if scheduler == "llumnix" else 1.0) * scale,
                    tier(PRE, 1, "mean"): 0.1 * (2.0 if scheduler == "llumnix" else 1.0),  # +100%
                    tier("decode_latency_per_token", 1, "mean"): 0.05,
                })
    table, _ = claims_table(Runs(pd.DataFrame(rows)))
    c30 = table[table["id"] == "C30"].set_index("statistic")["agreement"]
    assert len(c30) == 3
    assert c30[[s for s in c30.index if "request" in s][0]] == "match"  # +3% under the paper's +4.5%
    assert c30[[s for s in c30.index if "prefill" in s][0]] == "differs"  # +100% against +13%
    assert c30[[s for s in c30.index if "decode" in s][0]] == "match"  # unchanged


def test_cost_saving_is_read_at_equal_p99_prefill_on_the_llumnix_line_of_the_same_seed():
    rows = []
    for t, (p99, cost) in {5: (20.0, 8.0), 45: (5.0, 10.0)}.items():
        rows.append({"part": "autoscaling", "scheduler": "llumnix", "autoscale.low": t, "seed": 0,
                     P99: p99, "cost.average_instances": cost})
    rows.append({"part": "autoscaling", "scheduler": "infaas++", "autoscale.low": 45, "seed": 0,
                 P99: 12.5, "cost.average_instances": 15.0})
    rows.append({"part": "autoscaling", "scheduler": "infaas++", "autoscale.low": 85, "seed": 0,
                 P99: 30.0, "cost.average_instances": 15.0})  # outside Llumnix's line: no figure
    values = saving_at_equal_tail(Runs(pd.DataFrame(rows)))
    assert values["value"].iloc[0] == pytest.approx(0.4)  # Llumnix at P99 12.5 s: 9 instances, against 15
    assert math.isnan(values["value"].iloc[1])
    row = grade_claim(claim("C35"), Runs(pd.DataFrame(rows)))
    assert row["llumsim"] == "40.0%" and row["agreement"] == "match" and row["points"] == "1/1 match (1 seed)"


# a note may name percentiles (P99), claim ids (C32) and invariants (INV-4); any other digit
# is a typed number
NAMES = re.compile(r"\bP\d+\b|\bC\d+[a-z]?\b|\bINV-\d+\b")


def typed_digits(note: Note) -> list[str]:
    return re.findall(r"\d+", NAMES.sub("", note.literal_text()))


def test_no_note_holds_a_number_that_is_not_formatted_from_the_runs():
    assert typed_digits(Note("with 783 blocks the ratio is 4.5x")) == ["783", "4", "5"]
    assert typed_digits(Note("", "with {blocks} blocks, P99 {p99:.3g}x", lambda runs: {})) == []
    assert typed_digits(Note("", "the cold start of 5 s is {value:g}")) == ["5"]
    notes = [c.note for c in claims() if c.note]
    assert len(notes) > 10
    assert {c.id: typed_digits(c.note) for c in claims() if c.note and typed_digits(c.note)} == {}


def test_a_note_without_its_runs_leaves_its_numbers_out():
    note = Note("why", "at CV {cv:g}", lambda runs: None)
    assert note.render(Runs(pd.DataFrame())) == "why"
    assert Note("why", "at CV {cv:g}", lambda runs: {"cv": 2.0}).render(Runs(pd.DataFrame())) == "why; at CV 2"


def test_notes_format_their_numbers_from_the_runs_and_their_configs():
    rows = []
    for seed in (0, 1):
        rows += [
            {"part": "priorities", "scheduler": "llumnix-base", "workload.arrival.cv": 2, "seed": seed,
             "config_hash": f"base{seed}", tier(PRE, 0, "mean"): 4.0},
            {"part": "priorities", "scheduler": "llumnix", "workload.arrival.cv": 2, "seed": seed,
             "config_hash": f"mine{seed}", tier(PRE, 0, "mean"): 2.0},  # 2x: a range's low end, near
            {"part": "diagnostic-priorities-lcfs-normal", "scheduler": "llumnix", "workload.arrival.cv": 2,
             "seed": seed, "config_hash": f"diag{seed}", tier(PRE, 0, "mean"): 1.0},
        ]
    migrations = pd.DataFrame({"outcome": ["committed", "committed", "committed", "aborted"],
                               "request_tier": [0, 1, 1, 0]})
    runs = Runs(pd.DataFrame(rows), table=lambda key, name: migrations)
    row = grade_claim(claim("C27", "mean"), runs)
    assert row["agreement"] != "match"
    # a third of the committed migrations moved a high-priority request; the diagnostic part's
    # ratio is base / lcfs-normal = 4x at the one CV
    assert row["why it differs"].endswith("at CV 2 33% of Llumnix's committed migrations moved such a request; with "
                                          "migration.candidate=lcfs-normal (grid part "
                                          "diagnostic-priorities-lcfs-normal) this ratio is 4–4× over the CVs")
    serving_rows = [{"part": "serving-sharegpt", "scheduler": "llumnix", "workload.arrival.rate": 7.0, "seed": 0,
                     "config_hash": "k", "migration.migrating_fraction.mean": 0.01}]
    configured = Runs(pd.DataFrame(serving_rows), config=lambda key: {"scheduler": {"pairing_every": 7}})
    assert "every 7 × instances reports" in grade_claim(claim("C11"), configured)["why it differs"]
    assert "every" not in grade_claim(claim("C11"), Runs(pd.DataFrame(serving_rows)))["why it differs"].split(";")[-1]


def test_fragmentation_reads_each_seeds_busiest_infaas_window_for_both_schedulers():
    times = [float(t) for t in range(0, 3000, 100)]
    def cluster(queued_from, fragmented):
        return pd.DataFrame({"time": times, "queued": [5 if t >= queued_from else 0 for t in times],
                             "fragmented_fraction": [fragmented if t >= queued_from else 0.9 for t in times]})
    tables = {"inf0": cluster(2000, 0.2), "ll0": cluster(2000, 0.01), "inf1": cluster(2000, 0.3), "ll1": cluster(0, 0.02)}
    rows = [{"part": "serving-M-M", "scheduler": s, "workload.arrival.rate": 7.5, "seed": seed, "config_hash": f"{k}{seed}"}
            for seed in (0, 1) for s, k in (("infaas++", "inf"), ("llumnix", "ll"))]
    runs = Runs(pd.DataFrame(rows), table=lambda key, name: tables[key])
    infaas = grade_claim(claim("C25", "INFaaS++"), runs)
    assert infaas["llumsim"].startswith("25.0%")  # 20% and 30%: the queued window of each seed
    llumnix = grade_claim(claim("C25", "Llumnix"), runs)
    assert llumnix["llumsim"].startswith("1.5%")  # 1% and 2%, over INFaaS++'s window


def test_the_paper_grids_seeds_are_distinct_streams_and_seed_0_is_the_presets_own():
    """Each part's first cell at each of the grid's seeds: five different request streams,
    seed 0's the one the preset itself gives (the artifact's, for the client's traces)."""
    grid = load_grid(GRIDS / "paper.yaml")
    assert grid.seeds == [0, 1, 2, 3, 4]
    first_cell = {}
    for run in grid.runs:
        first_cell.setdefault(run.cell.coords["part"], run.cell.label)
    for part, label in first_cell.items():
        runs = [run for run in grid.runs if run.cell.label == label]
        streams = [
            build_workload(dataclasses.replace(run.config.workload, num_requests=300), run.seed) for run in runs
        ]
        keys = {(s.prompt_tokens.tobytes(), s.arrival.tobytes()) for s in streams}
        assert len(keys) == len(runs) == 5, part
        preset = load_config(GRIDS / grid_part(part)["base"]).workload
        own = build_workload(dataclasses.replace(preset, num_requests=300), 0)
        assert np.array_equal(own.prompt_tokens, streams[0].prompt_tokens), part


def grid_part(name):
    (part,) = [p for p in read_yaml(GRIDS / "paper.yaml")["parts"] if p["name"] == name]
    return part


def test_the_command_runs_parts_and_rewrites_the_claims_block(tmp_path, capsys):
    readme = tmp_path / "paper.md"
    readme.write_text("before\n<!-- paper-claims:begin -->\nSTALE TABLE\n<!-- paper-claims:end -->\nafter\n")
    args = ["paper", "--smoke", "--only", "serving-S-S", "--jobs", "1", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "paper_smoke"), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "STALE TABLE" not in text
    assert "| C20 | 11 |" in text and "not run" in text  # priorities etc. were not run
    assert "agreement over" in capsys.readouterr().out
    runs = (tmp_path / "paper_smoke" / "runs.md").read_text()
    assert runs.count("serving-S-S") == 2
    points = pd.read_csv(tmp_path / "paper_smoke" / "claim_points.csv")
    assert set(points["part"]) == {"serving-S-S"} and set(points["grade"]) <= {"match", "near", "differs"}
    assert (tmp_path / "paper_smoke" / "serving.png").stat().st_size > 10_000  # a drawn panel
    with pytest.raises(SystemExit):
        main(["paper", "--only"])
    assert main(["paper", "--smoke", "--only", "nope"]) == 2
