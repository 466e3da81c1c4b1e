"""The K-tier capacity answer as Markdown, from a capacity grid's tables (``capacity_grid``).

``python -m sim.studies.capacity_report results/k_capacity`` prints, per tier mix, capacity
per GPU against K for every scheme (mean over seeds, Student-t 95% interval) and its paired
ratio to the baseline; then, per scheme, in how many distinct configurations that ratio's
interval lies above 1, below 1 or across it (K = 1 is one configuration whatever the mix,
every request being tier 0, and so are other mixes that split K tiers alike); per (K, mix),
whether the best scheme's paired ratio to the runner-up excludes 1; and per scheme and mix,
the best K against K = 1. ``--floor results/slo_floor``: how much of each tier meets the SLOs
with no load (``experiments/grids/slo_floor.yaml``), against the grid's bound and the searches
that found no rate. ``--autoscale results/k_autoscale``: the auto-scaling study's table.
Every number docs/findings.md's K-tier GPU section quotes comes from here.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from sim.config import ConfigError
from sim.sweep.capacity_grid import paired_ratio
from sim.sweep.stats import LEVEL, ratio_interval
from sim.workload.priority import tier_weights

TIERS, MIX = "workload.priority.tiers", "workload.priority.sampler"


CAPACITY_GRID, SWEEP = "capacity_grid.json", "sweep.json"  # what each kind of results folder holds
KINDS = {CAPACITY_GRID: "a capacity grid's results (llumsim capacity --grid)", SWEEP: "a sweep's results (llumsim sweep)"}


def _meta(folder: Path, marker: str) -> dict:
    """The folder's ``marker`` file, proving it is the kind of results a report reads; a
    missing folder, another kind, or a damaged file is a ConfigError naming it."""
    if not folder.is_dir():
        raise ConfigError(f"{folder}: {'not a folder' if folder.exists() else 'no such folder'}; expected {KINDS[marker]}")
    if not (folder / marker).is_file():
        raise ConfigError(f"{folder}: no {marker}, so not {KINDS[marker]}")
    try:
        return json.loads((folder / marker).read_text())
    except ValueError as exc:
        raise ConfigError(f"{folder / marker}: damaged, not JSON ({exc})") from None


def _table(folder: Path, name: str, columns: Iterable[str]) -> pd.DataFrame:
    """The folder's table ``name``, holding every one of ``columns`` (what the report reads
    from it); a missing or damaged file, or a missing column, is a ConfigError naming it."""
    path = folder / name
    try:
        table = pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # missing, or cut short (pyarrow's errors are ValueErrors)
        raise ConfigError(f"{path}: cannot be read ({str(exc).splitlines()[0]})") from None
    missing = [column for column in columns if column not in table.columns]
    if missing:
        raise ConfigError(
            f"{path}: no column {', '.join(missing)}, which this report reads "
            f"(a results folder of another kind, or written by an older llumsim?)"
        )
    return table


def _with_interval(*columns: str) -> list[str]:
    """``columns`` and the ends of their intervals (``.ci_low``, ``.ci_high``)."""
    return [name for column in columns for name in (column, f"{column}.ci_low", f"{column}.ci_high")]


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
    """The rows of distinct configurations: mixes that split K tiers alike
    (``sim.workload.priority.tier_weights``) draw the same tiers, so they are the same runs,
    counted once under the first such mix: every mix at K = 1, the Gaussian and uniform
    mixes at K = 2, the enterprise and uniform mixes at K = 10."""
    split = [tuple(np.round(tier_weights(mix, tiers), 12)) for mix, tiers in zip(index[MIX], index[TIERS])]
    alike = pd.Series(split, index=index.index).map(hash)
    rest = [column for column in ("scheduler", "seed") if column in index.columns]
    return index[~index.assign(split=alike)[[*rest, TIERS, "split"]].duplicated()]


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


def best_k(searches: pd.DataFrame, schemes: list[str]) -> str:
    """Per scheme and mix: the K of the highest mean capacity per GPU and its paired ratio to
    one tier (K = 1) on the same seeds (the same requests, relabelled). The best of nine
    K ≥ 2 is picked after seeing them, so its interval is Bonferroni-widened to
    1 − 0.05 / 9 (a 95% family over the nine): more tiers pay for themselves in GPUs only
    where that interval lies above 1."""
    lines = [
        "| scheme | mix | best K | capacity per GPU | / K = 1, paired [Bonferroni t] | more tiers help |",
        "|---|---|---|---|---|---|",
    ]
    for scheme in schemes:
        for mix, rows in searches[searches["scheduler"] == scheme].groupby(MIX, sort=False):
            per_seed = rows.pivot_table(index="seed", columns=TIERS, values="rate_per_gpu").dropna(axis=0)
            best = per_seed.mean().idxmax()
            family = 1 - (1 - LEVEL) / max(per_seed.shape[1] - 1, 1)
            (ratio,), (low,), (high,) = ratio_interval((per_seed[best] / per_seed[1]).to_numpy(), level=family)
            verdict = "no: one tier is best" if best == 1 else ("yes" if low > 1 else "not separated")
            lines.append(
                f"| {scheme} | {mix} | {best} | {per_seed[best].mean():.3f} | "
                f"{_interval(ratio, low, high, 2)} | {verdict} |"
            )
    return "\n".join(lines)


def report(folder: Path) -> str:
    meta = _meta(folder, CAPACITY_GRID)
    index = _table(
        folder, "index.parquet",
        ["scheduler", TIERS, MIX, "cost_per_latency", *_with_interval("rate_per_gpu", "vs_baseline")],
    )
    searches = _table(folder, "searches.parquet", ["scheduler", "seed", TIERS, MIX, "answer", "rate_per_gpu"])
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
            "The best K per scheme and mix, against one tier (seeds with a capacity at every K):",
            best_k(searches, schemes),
            f"cost-per-latency at capacity (mean over seeds, money·s per request): "
            f"{index['cost_per_latency'].min():.4f}–{index['cost_per_latency'].max():.4f} over {len(index)} cells",
        ]
    )


def attainment_bound(slos: list[str]) -> float:
    """The per-tier attainment share a capacity grid's bounds ask for (``tier*.attainment>=0.9``)."""
    shares = {float(slo.split(">=")[1]) for slo in slos if slo.startswith("tier*.attainment>=")}
    if len(shares) != 1:
        raise ConfigError(f"the grid's bounds {slos} name no single per-tier attainment share")
    return shares.pop()


def floor_report(floor: Path, folder: Path, bounds: list[float]) -> str:
    """The SLO floor: with no load, the worst tier's share of requests meeting its SLO, per
    mix and K (mean over seeds, the lowest seed, how many seeds fall below each bound); then
    whether the capacity grid's searches with no rate are the (mix, K, seed)s whose floor is
    below the grid's bound, which they must be if nothing but physics stops them."""
    _meta(floor, SWEEP)
    index = _table(floor, "index.parquet", ["status", "seed", TIERS, MIX, "slo.overall.attainment"])
    index = index[index["status"] == "ok"]
    tiers = [column for column in index.columns if column.startswith("slo.by_tier.") and column.endswith(".attainment")]
    index = index.assign(floor=index[tiers].min(axis=1))  # a mix with K tiers has NaN past tier K - 1
    lines = [
        "| mix | K | worst tier, mean | lowest seed | " + " | ".join(f"seeds < {b:g}" for b in bounds) + " |",
        "|---|---|---|---|" + "---|" * len(bounds),
    ]
    for (mix, k), rows in index.groupby([MIX, TIERS], sort=False):
        below = " | ".join(str(int((rows["floor"] < b).sum())) for b in bounds)
        lines.append(f"| {mix} | {k} | {rows['floor'].mean():.3f} | {rows['floor'].min():.3f} | {below} |")
    overall = index[index[TIERS] == 1].drop_duplicates("seed")["slo.overall.attainment"]  # K = 1: all tier 0
    meta = _meta(folder, CAPACITY_GRID)
    bound = attainment_bound(meta["slos"])
    searches = _table(folder, "searches.parquet", [MIX, TIERS, "seed", "answer"])
    keys = [MIX, TIERS, "seed"]
    unmet = set(searches.loc[searches["answer"] == "none", keys].itertuples(index=False, name=None))
    floored = set(index.loc[index["floor"] < bound, keys].itertuples(index=False, name=None))
    every = searches.groupby(keys)["answer"].apply(lambda answers: bool((answers == "none").all()))
    unanimous = sum(bool(every[key]) for key in unmet)
    return "\n\n".join(
        [
            f"{floor.name}: {len(index)} runs, seeds {index['seed'].nunique()}; all requests meeting the "
            f"tier-0 SLO with no load: {overall.mean():.3f} (seeds {overall.min():.3f}–{overall.max():.3f})",
            "\n".join(lines),
            f"{meta['name']}'s bound {bound:g}: (mix, K, seed)s with no rate found: {len(unmet)} "
            f"(every scheme in {unanimous}); no-load floor below the bound: {len(floored)}; "
            f"in both: {len(unmet & floored)}",
        ]
    )


AUTOSCALE_METRICS = ("slo.overall.attainment", "slo.tiers_met", "cost.gpu_hours", "slo.overall.attainment_per_gpu_hour")


def autoscale_report(folder: Path) -> str:
    """``k_autoscale``'s sweep index: per scheme, the means over every distinct configuration
    (``distinct``) and seed; then its attainment per GPU-hour paired with INFaaS++'s (same
    cell and seed, so the same requests): per distinct (K, mix) configuration the geometric-mean ratio over the seeds with its
    Student-t 95% interval, counted above, below or across 1, with the median and range of
    those ratios."""
    _meta(folder, SWEEP)
    index = _table(folder, "index.parquet", ["status", "scheduler", "seed", TIERS, MIX, *AUTOSCALE_METRICS])
    index = distinct(index[index["status"] == "ok"])
    keys = [TIERS, MIX]
    metric = "slo.overall.attainment_per_gpu_hour"
    base = index[index["scheduler"] == "infaas++"].set_index([*keys, "seed"])[metric]
    header = " | ".join(AUTOSCALE_METRICS)
    lines = [
        f"| scheme | runs | {header} | configurations | above 1 | below 1 | across 1 | ratio to INFaaS++ (median, range) |",
        "|---|---|" + "---|" * (len(AUTOSCALE_METRICS) + 5),
    ]
    for scheme, rows in index.groupby("scheduler", sort=False):
        means = " | ".join(f"{rows[m].mean():.3f}" for m in AUTOSCALE_METRICS)
        if scheme == "infaas++":
            lines.append(f"| {scheme} | {len(rows)} | {means} | {rows.groupby(keys).ngroups} | – | – | – | – |")
            continue
        ratios, lows, highs = [], [], []
        for _, cell in rows.groupby(keys, sort=False):
            cell = cell.set_index([*keys, "seed"])[metric]
            ratio, low, high = paired_ratio(cell, base.loc[cell.index])
            ratios.append(ratio), lows.append(low), highs.append(high)
        above, below = sum(low > 1 for low in lows), sum(high < 1 for high in highs)
        spread = pd.Series(ratios)
        lines.append(
            f"| {scheme} | {len(rows)} | {means} | {len(ratios)} | {above} | {below} | {len(ratios) - above - below} | "
            f"{spread.median():.3f} ({spread.min():.3f}–{spread.max():.3f}) |"
        )
    return "\n".join(lines)


def _shares(text: str) -> list[float]:
    """``--bounds 0.9,0.95``: attainment shares in (0, 1] (NaN is none)."""
    shares = []
    for part in text.split(","):
        try:
            share = float(part)
        except ValueError:
            share = math.nan
        if not 0 < share <= 1:
            raise ConfigError(f"--bounds: {part!r} is not a share in (0, 1]")
        shares.append(share)
    return shares


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a capacity grid's results (results/k_capacity)")
    parser.add_argument("--autoscale", action="store_true", help="the folder is k_autoscale's sweep")
    parser.add_argument("--floor", type=Path, help="slo_floor's sweep: the no-load attainment against the bound")
    parser.add_argument(
        "--bounds", default="0.9,0.95,0.99",
        help="the attainment shares the floor table counts seeds below (default 0.9,0.95,0.99)",
    )
    args = parser.parse_args(argv)
    try:
        bounds = _shares(args.bounds)
        if args.autoscale:
            text = autoscale_report(args.folder)
        elif args.floor:
            text = floor_report(args.floor, args.folder, bounds)
        else:
            text = report(args.folder)
    except ConfigError as exc:
        print(f"llumsim: error: {exc}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
