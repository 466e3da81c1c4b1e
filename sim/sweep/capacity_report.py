"""The K-tier capacity answer as Markdown, from a capacity grid's tables (``capacity_grid``).

``python -m sim.sweep.capacity_report results/k_capacity`` prints, per tier mix, capacity
per GPU against K for every scheme (mean over seeds, Student-t 95% interval) and its paired
ratio to the baseline; then, per scheme, in how many distinct configurations that ratio's
interval lies above 1, below 1 or across it (K = 1 is one configuration whatever the mix:
every request is tier 0), and, per (K, mix), whether the best scheme's paired ratio to the
runner-up excludes 1. ``--autoscale results/k_autoscale``: the auto-scaling study's table.
Every number the README's K-tier section quotes comes from here.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pandas as pd

from sim.sweep.capacity_grid import paired_ratio

TIERS, MIX = "workload.priority.tiers", "workload.priority.sampler"


def _interval(value: float, low: float, high: float, digits: int) -> str:
    if not math.isfinite(value):
        return "–"
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def mix_tables(index: pd.DataFrame, column: str, schemes: list[str], digits: int) -> str:
    """One Markdown table per mix: a row per K, a column per scheme, ``column`` with its interval."""
    parts = []
    for mix, rows in index.groupby(MIX, sort=False):
        lines = [f"**{mix}**", "", "| K | " + " | ".join(schemes) + " |", "|---|" + "---|" * len(schemes)]
        for tiers, by_k in rows.groupby(TIERS, sort=True):
            cells = []
            for scheme in schemes:
                row = by_k[by_k["scheduler"] == scheme].iloc[0]
                cells.append(_interval(row[column], row[f"{column}.ci_low"], row[f"{column}.ci_high"], digits))
            lines.append(f"| {tiers} | " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def distinct(index: pd.DataFrame) -> pd.DataFrame:
    """The rows of distinct configurations: K = 1 once (its mixes are the same runs)."""
    return index[(index[TIERS] != 1) | (index[MIX] == index[MIX].iloc[0])]


def separation(index: pd.DataFrame, schemes: list[str]) -> str:
    """Per scheme: distinct configurations whose ratio to the baseline is above, below or
    not separated from 1 by its interval (or has no ratio: a seed without a capacity)."""
    lines = ["| scheme | configurations | above 1 | below 1 | interval across 1 | no ratio | median ratio |", "|---|---|---|---|---|---|---|"]
    rows = distinct(index)
    for scheme in schemes:
        mine = rows[rows["scheduler"] == scheme]
        low, high, ratio = mine["vs_baseline.ci_low"], mine["vs_baseline.ci_high"], mine["vs_baseline"]
        above, below = int((low > 1).sum()), int((high < 1).sum())
        missing = int(ratio.isna().sum())
        lines.append(
            f"| {scheme} | {len(mine)} | {above} | {below} | {len(mine) - above - below - missing} | "
            f"{missing} | {ratio.median():.2f} |"
        )
    return "\n".join(lines)


def best_schemes(index: pd.DataFrame, searches: pd.DataFrame) -> str:
    """Per distinct (K, mix): the scheme with the highest mean capacity per GPU, and whether
    its paired ratio to the runner-up (seed by seed) has an interval above 1."""
    separated, unanswered, counts = 0, 0, {}
    cells = distinct(index)[[TIERS, MIX]].drop_duplicates()
    for tiers, mix in cells.itertuples(index=False):
        rows = index[(index[TIERS] == tiers) & (index[MIX] == mix)].dropna(subset=["rate_per_gpu"])
        if len(rows) < 2:  # a seed found no rate for (nearly) every scheme: nothing to rank
            unanswered += 1
            continue
        rows = rows.sort_values("rate_per_gpu", ascending=False)
        first, second = rows.iloc[0]["scheduler"], rows.iloc[1]["scheduler"]
        per_seed = searches[(searches[TIERS] == tiers) & (searches[MIX] == mix)].pivot_table(
            index="seed", columns="scheduler", values="rate_per_gpu"
        )
        _, low, _ = paired_ratio(per_seed[first], per_seed[second])
        counts[first] = counts.get(first, 0) + 1
        separated += bool(low > 1)
    ranked = ", ".join(f"{scheme} {count}" for scheme, count in sorted(counts.items(), key=lambda kv: -kv[1]))
    return (
        f"highest mean capacity per GPU in {len(cells)} distinct (K, mix) configurations: {ranked}"
        f"{f', none ranked (no mean) {unanswered}' if unanswered else ''}; separated from the "
        f"runner-up (paired 95% interval above 1) in {separated}"
    )


def report(folder: Path) -> str:
    index = pd.read_parquet(folder / "index.parquet")
    searches = pd.read_parquet(folder / "searches.parquet")
    meta = json.loads((folder / "capacity_grid.json").read_text())
    schemes = list(dict.fromkeys(index["scheduler"]))
    answers = searches["answer"].value_counts().to_dict()
    head = (
        f"{meta['name']}: {meta['cells']} cells, {meta['searches']} searches (seeds {meta['seeds']}), "
        f"bounds {', '.join(meta['slos'])}, tolerance {meta['tolerance']:g}; answers {answers}"
    )
    return "\n\n".join(
        [
            head,
            "Capacity per GPU (req/s per GPU, mean over seeds [Student-t 95%]):",
            mix_tables(index, "rate_per_gpu", schemes, 3),
            "Paired ratio to the baseline (geometric mean over seeds [t 95% on the logs]):",
            mix_tables(index, "vs_baseline", schemes, 2),
            separation(index, [s for s in schemes if s != meta["baseline"].get("scheduler")]),
            best_schemes(index, searches),
        ]
    )


AUTOSCALE_METRICS = ("slo.overall.attainment", "slo.tiers_met", "cost.gpu_hours", "slo.overall.attainment_per_gpu_hour")


def autoscale_report(folder: Path) -> str:
    """``k_autoscale``'s sweep index: per scheme, the means over every cell and seed, and
    the paired ratio of attainment per GPU-hour to INFaaS++ (same cell and seed) as the
    median and range over the runs."""
    index = pd.read_parquet(folder / "index.parquet")
    index = index[index["status"] == "ok"]
    keys = [TIERS, MIX, "seed"]
    metric = "slo.overall.attainment_per_gpu_hour"
    base = index[index["scheduler"] == "infaas++"].set_index(keys)[metric]
    lines = ["| scheme | runs | " + " | ".join(AUTOSCALE_METRICS) + " | vs INFaaS++ (median, range) |", "|---|---|" + "---|" * (len(AUTOSCALE_METRICS) + 1)]
    for scheme, rows in index.groupby("scheduler", sort=False):
        ratio = rows.set_index(keys)[metric] / base
        means = " | ".join(f"{rows[m].mean():.3f}" for m in AUTOSCALE_METRICS)
        lines.append(f"| {scheme} | {len(rows)} | {means} | {ratio.median():.3f} ({ratio.min():.3f}–{ratio.max():.3f}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a capacity grid's results (results/k_capacity)")
    parser.add_argument("--autoscale", action="store_true", help="the folder is k_autoscale's sweep")
    args = parser.parse_args(argv)
    print(autoscale_report(args.folder) if args.autoscale else report(args.folder))


if __name__ == "__main__":
    main()
