"""The K map's conclusions (``sim.studies.k_map``): each label comes from the verdicts by its
rule and can come out against a claim; a claim's verdict per condition reads its
comparisons' intervals; K-over-K ratios are paired seed by seed; the committed table is the
one docs/k-map.md shows."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sim.studies.k_map import (
    CLAIMS,
    NOMINAL,
    README_BEGIN,
    README_END,
    TIERS,
    Claim,
    LABELS,
    KMap,
    conclusions,
    label,
    load_map,
    main,
    side_of,
    versus_baseline,
    versus_k,
)

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "results" / "k_map"


def verdicts(*rows):
    """Verdict rows: (part, model, instances, contract, verdict)."""
    return pd.DataFrame(rows, columns=["part", "model", "instances", "contract", "verdict"])


@pytest.mark.parametrize(
    "rows, expected",
    [
        ([], "outside the map"),
        ([("main", NOMINAL, 16, "tail", "holds"), ("main", NOMINAL, 16, "mean", "fails")], "contract-dependent"),
        ([("main", NOMINAL, 16, "tail", "holds"), ("scale", NOMINAL, 4, "tail", "holds"),
          ("scale", NOMINAL, 32, "tail", "fails")], "scale-dependent"),
        ([("main", NOMINAL, 16, "tail", "holds"), ("bands", "step-1.1", 16, "tail", "fails")], "model-dependent"),
        ([("main", NOMINAL, 16, "tail", "fails"), ("bands", "kv-0.95", 16, "tail", "fails")], "robust"),
        ([("main", NOMINAL, 16, "tail", "holds"), ("main", NOMINAL, 16, "mean", "unsettled")], "unsettled"),
        # a flip across sizes under different contracts is not a scale dependence
        ([("scale", NOMINAL, 4, "tail", "holds"), ("scale", NOMINAL, 32, "mean", "fails")], "unsettled"),
        ([("main", NOMINAL, 16, "tail", "equivalent"), ("bands", "kv-0.95", 16, "tail", "equivalent")], "equivalent"),
        ([("main", NOMINAL, 16, "tail", "holds"), ("main", NOMINAL, 16, "mean", "equivalent")], "holds or equivalent"),
        ([("main", NOMINAL, 16, "tail", "fails"), ("main", NOMINAL, 16, "mean", "equivalent")], "fails or equivalent"),
        # one condition left unsettled keeps the claim unsettled, equivalences or not
        ([("main", NOMINAL, 16, "tail", "equivalent"), ("main", NOMINAL, 16, "mean", "unsettled")], "unsettled"),
    ],
)
def test_each_label_follows_its_rule(rows, expected):
    assert label(verdicts(*rows)) == expected


def _kmap(rows) -> KMap:
    """Ratios rows: (part, model, instances, contract, scheduler, K, ratio, low, high)."""
    columns = ["part", "model", "instances", "contract", "scheduler", TIERS, "vs_baseline",
               "vs_baseline.ci_low", "vs_baseline.ci_high"]
    ratios = pd.DataFrame(rows, columns=columns)
    contracts = {"tail": {"family": "tail"}, "mean": {"family": "mean"}}
    return KMap(ratios, pd.DataFrame(columns=["part", "model", "instances", "contract", "scheduler", TIERS, "seed",
                                              "answer", "rate_per_gpu"]), contracts, {})


def test_a_claim_holds_fails_or_is_unsettled_per_condition_from_its_intervals():
    kmap = _kmap([
        ("main", NOMINAL, 16, "tail", "llumnix", 2, 1.3, 1.1, 1.5),  # above
        ("main", NOMINAL, 16, "tail", "llumnix", 4, 1.2, 1.05, 1.4),  # above
        ("main", NOMINAL, 16, "mean", "llumnix", 2, 0.8, 0.7, 0.9),  # below: against
        ("main", NOMINAL, 16, "mean", "llumnix", 4, 1.3, 1.1, 1.5),
        ("bands", "step-0.9", 16, "tail", "llumnix", 2, 1.0, 0.9, 1.1),  # across: unsettled
        ("bands", "step-0.9", 16, "tail", "llumnix", 4, 1.2, 1.1, 1.3),
    ])
    claim = Claim("load target beats INFaaS++", "test", "above", lambda k: versus_baseline(k, "llumnix", (2, 4)))
    out = claim.verdicts(kmap).set_index(["model", "contract"])["verdict"].to_dict()
    assert out == {(NOMINAL, "tail"): "holds", (NOMINAL, "mean"): "fails", ("step-0.9", "tail"): "unsettled"}
    assert label(claim.verdicts(kmap)) == "contract-dependent"
    row = conclusions(kmap, [claim]).iloc[0]
    assert (row["holds"], row["fails"], row["unsettled"]) == (1, 1, 1) and row["cells"] == "mean: llumnix K=2"
    against = Claim("load target loses to INFaaS++", "test", "below", claim.comparisons)
    assert conclusions(kmap, [against]).iloc[0]["fails"] == 3  # the same data comes out against it


def test_a_claim_is_equivalent_where_its_intervals_lie_within_delta_and_unsettled_only_where_wider():
    kmap = _kmap([
        ("main", NOMINAL, 16, "tail", "llumnix", 1, 1.00, 0.97, 1.03),  # within ±5%
        ("main", NOMINAL, 16, "mean", "llumnix", 1, 1.00, 0.90, 1.10),  # wider: unsettled
        ("main", NOMINAL, 16, "attainment", "llumnix", 1, 1.20, 1.10, 1.30),  # above
    ])
    comparisons = lambda k: versus_baseline(k, "llumnix", (1,))  # noqa: E731
    gain = Claim("Llumnix-base beats INFaaS++", "t", "above", comparisons)
    assert gain.verdicts(kmap).set_index("contract")["verdict"].to_dict() == {
        "tail": "equivalent", "mean": "unsettled", "attainment": "holds"}
    row = conclusions(kmap, [gain]).iloc[0]
    assert (row["holds"], row["fails"], row["equivalent"], row["unsettled"]) == (1, 0, 1, 1)
    # the study's delta decides: at ±15% the wider interval is an equivalence too
    wide = KMap(kmap.ratios, kmap.searches, kmap.contracts, {}, delta=0.15)
    assert label(gain.verdicts(wide)) == "holds or equivalent"
    # "no difference" is borne out by an equivalence
    same = Claim("no difference", "t", "across", comparisons)
    assert same.verdicts(kmap).set_index("contract")["verdict"]["tail"] == "holds"


def test_no_difference_and_no_loss_claims_read_their_sides():
    assert side_of(0.9, 1.1) == "across" and side_of(1.01, 1.2) == "above" and side_of(math.nan, 1) == "none"
    assert side_of(0.97, 1.04) == "equivalent" and side_of(0.9, 1.1, delta=0.1) == "equivalent"
    kmap = _kmap([("main", NOMINAL, 16, "tail", "llumnix", 10, 2.0, 1.5, 2.5)])
    comparisons = lambda k: versus_baseline(k, "llumnix", (10,))  # noqa: E731
    assert Claim("no loss", "t", "not below", comparisons).verdicts(kmap)["verdict"].tolist() == ["holds"]
    assert Claim("no difference", "t", "across", comparisons).verdicts(kmap)["verdict"].tolist() == ["fails"]


def test_more_tiers_are_paired_seed_by_seed_on_the_seeds_both_answered():
    rng = np.random.default_rng(0)
    rows = []
    for seed in range(6):
        shared = rng.lognormal(0, 0.5)  # what both K share on a seed: cancels in the ratio
        for k, scale in ((1, 1.0), (4, 2.0)):
            answer = "floor" if seed == 5 else "bracketed"
            rows.append(("main", NOMINAL, 16, "tail", "llumnix", k, seed, answer, shared * scale))
    searches = pd.DataFrame(rows, columns=["part", "model", "instances", "contract", "scheduler", TIERS, "seed",
                                           "answer", "rate_per_gpu"])
    kmap = KMap(pd.DataFrame(), searches, {}, {})
    row = versus_k(kmap, "llumnix", 4, 1).iloc[0]
    assert row["seeds"] == 5 and row["vs_baseline"] == pytest.approx(2.0) and row["side"] == "above"


def test_every_claim_gets_a_row_with_a_label_and_the_committed_table_is_its_pages():
    kmap = load_map(COMMITTED)
    table = conclusions(kmap)
    assert len(table) == len(CLAIMS) and set(table["label"]) <= set(LABELS)
    committed = pd.read_csv(COMMITTED / "conclusions.csv").fillna("")
    assert committed.drop(columns="cells").equals(table.drop(columns="cells"))
    readme = (REPO / "docs" / "k-map.md").read_text(encoding="utf-8")
    block = readme.split(README_BEGIN + "\n", 1)[1].split("\n" + README_END, 1)[0]
    assert block + "\n" == (COMMITTED / "conclusions.md").read_text(encoding="utf-8")


def test_the_command_writes_the_table_and_refuses_a_readme_without_markers(tmp_path, capsys):
    for part in ("main",):
        (tmp_path / part).mkdir()
        for name in ("index.csv", "searches.csv", "capacity_grid.json"):
            (tmp_path / part / name).write_bytes((COMMITTED / part / name).read_bytes())
    bad = tmp_path / "README.md"
    bad.write_text("# no markers\n")
    assert main([str(tmp_path), "--readme", str(bad), "--no-plots"]) == 2
    assert "no <!-- k-map:begin -->" in capsys.readouterr().err
    assert main([str(tmp_path), "--no-plots"]) == 0
    assert (tmp_path / "conclusions.md").read_text().count("\n| ") == len(CLAIMS) + 1
    assert main([str(tmp_path / "nothing")]) == 2


def test_the_map_script_runs_each_grid_into_its_part_then_the_report(tmp_path):
    import os
    import subprocess

    log = tmp_path / "calls"
    stub = tmp_path / "bin" / "python"
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{stub.parent}:{os.environ['PATH']}"}
    subprocess.run([str(REPO / "experiments" / "k_map.sh"), "OUT", "--jobs", "2"], cwd=REPO, env=env, check=True)
    assert log.read_text().splitlines() == [
        "-m sim capacity --grid experiments/grids/k_map.yaml --out OUT/main --jobs 2",
        "-m sim capacity --grid experiments/grids/k_map_bands.yaml --out OUT/bands --jobs 2",
        "-m sim capacity --grid experiments/grids/k_map_scale.yaml --out OUT/scale --jobs 2",
        "-m sim.studies.k_map OUT",
    ]
