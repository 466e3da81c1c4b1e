"""The K map (issue 29): which conclusions about K priority tiers survive the contract, the
cluster size and the replica model's error, read from the three capacity grids.

``python -m sim.studies.k_map results/k_map [--readme docs/k-map.md]`` reads ``main/``
(``experiments/grids/k_map.yaml``: 16 instances, every contract), ``bands/``
(``k_map_bands``: step time x0.9/x1.1, KV capacity -5%/+5%) and ``scale/`` (``k_map_scale``:
4, 8 and 32 instances; its 16-instance point is main's), and writes ``conclusions.md``/``.csv`` (one row per claim), ``map.png``
(capacity ratio to INFaaS++ against contract tightness, a panel per family, a line per
scheme, the bands' range shaded) and ``scale.png`` (the ratio against cluster size).

Every claim is a comparison of capacity per GPU. A comparison is one of the grids' paired
ratios (a cell over its baseline, INFaaS++ on the same requests) or, for "more tiers", a cell
over the same scheme at K = 1, paired seed by seed; each carries the sequential interval
(``sim.sweep.stats.sequential_ratio``). A claim names the comparisons it reads and the side
it expects (above 1, below 1, no difference, or no loss). Each comparison's interval is read
by ``sim.sweep.stats.ratio_verdict``: above or below 1, *equivalent* (it straddles 1 and lies
wholly within ±delta, 5% unless ``--delta`` says otherwise), or unsettled (it straddles 1 and is
wider). In each *condition* (a contract on the nominal 16-instance cluster, a contract in a
band, a contract at a cluster size) a claim comes out ``holds`` (every comparison on its side),
``fails`` (one on the other side), ``equivalent`` (none against it, and those not on its side
are equivalent within ±delta: the schemes carry the same load, so a claimed gain or loss is
smaller than delta) or ``unsettled``. A "no difference" claim holds on an equivalent or
unsettled comparison alike (it claims only that the map cannot tell them apart). Its label is
decided from those, in this order:

- ``outside the map``: no condition measures it (a latency claim, or a scheme not mapped);
- ``contract-dependent``: it holds under one contract and fails under another, at 16 instances;
- ``scale-dependent``: it holds at one cluster size and fails at another, under one contract;
- ``model-dependent``: it holds in one band and fails in another (or at nominal), under one contract;
- ``robust``: it comes out the same way (holds, or fails) in every condition measured;
- ``equivalent``: equivalent within ±delta in every condition measured;
- ``holds or equivalent`` / ``fails or equivalent``: every condition settled, each one way or equivalent;
- ``unsettled``: no flip, but some conditions are not settled.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import pandas as pd

from sim.config import ConfigError
from sim.sweep.stats import EQUIVALENCE_DELTA, ratio_verdict, sequential_ratio

if TYPE_CHECKING:  # matplotlib is imported only when a figure is drawn
    from matplotlib.figure import Figure

PARTS = ("main", "bands", "scale")
TIERS = "workload.priority.tiers"
NOMINAL = "nominal"  # the model column's value outside the bands
README_BEGIN, README_END = "<!-- k-map:begin -->", "<!-- k-map:end -->"
FAMILIES = ("tail", "attainment", "mean")
LINES = (("llumnix", 1, "Llumnix-base (K = 1)"), ("llumnix", 4, "load target, K = 4"),
         ("llumnix-headroom", 4, "exponential headroom, K = 4"))
LABELS = ("outside the map", "contract-dependent", "scale-dependent", "model-dependent", "robust", "equivalent",
          "holds or equivalent", "fails or equivalent", "unsettled")


@dataclass
class KMap:
    """The three grids' comparisons in one table: one row per (part, model, instances,
    contract, scheduler, K) with the ratio to INFaaS++ and its interval, and the per-seed
    searches the K-over-K comparisons are paired from."""

    ratios: pd.DataFrame
    searches: pd.DataFrame
    contracts: dict[str, dict]  # name -> business, family, tightness
    meta: dict[str, dict]  # part -> capacity_grid.json
    delta: float = EQUIVALENCE_DELTA  # a ratio whose interval lies within 1 ± delta is "equivalent"

    def conditions(self) -> pd.DataFrame:
        return self.ratios[["part", "model", "instances", "contract"]].drop_duplicates()


def _normalise(frame: pd.DataFrame, part: str, instances: int | None) -> pd.DataFrame:
    frame = frame.copy()
    frame["part"] = part
    if "model" not in frame:
        frame["model"] = NOMINAL
    if "cluster.instances" in frame:
        frame["instances"] = frame["cluster.instances"].astype(int)
    else:
        frame["instances"] = instances
    return frame


def load_map(folder: Path, delta: float = EQUIVALENCE_DELTA) -> KMap:
    """Read the grids' tables under ``folder`` (a missing part is left out; none: an error).
    A folder that is itself one capacity grid's (``index.csv`` at its top) is read as ``main``."""
    ratios, searches, contracts, meta = [], [], {}, {}
    single = (folder / "index.csv").is_file()
    for part in PARTS[:1] if single else PARTS:
        where = folder if single else folder / part
        if not (where / "index.csv").is_file():
            continue
        grid = json.loads((where / "capacity_grid.json").read_text())
        meta[part] = grid
        contracts.update(grid.get("contract_info", {}))
        instances = 16 if part != "scale" else None
        ratios.append(_normalise(pd.read_csv(where / "index.csv"), part, instances))
        searches.append(_normalise(pd.read_csv(where / "searches.csv"), part, instances))
    if not ratios:
        raise ConfigError(f"{folder}: no K map here (expected {', '.join(p + '/index.csv' for p in PARTS)})")
    keep = ["part", "model", "instances", "contract", "scheduler", TIERS]
    ratio_columns = ["seeds", "floored", "answers", "rate_per_gpu", "vs_baseline", "vs_baseline.ci_low", "vs_baseline.ci_high"]
    table = _main_at_scale(pd.concat(ratios, ignore_index=True)[keep + ratio_columns])
    seeds = _main_at_scale(pd.concat(searches, ignore_index=True)[keep + ["seed", "answer", "rate_per_gpu"]])
    return KMap(table, seeds, contracts, meta, delta)


def _main_at_scale(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with main's rows for scale's schemes and contracts added to scale, at main's
    cluster size: k_map_scale leaves out the size main runs (the same configs, so the same
    runs and answers) rather than simulate it twice."""
    scale = frame[frame["part"] == "scale"]
    if scale.empty:
        return frame
    keys = ["scheduler", TIERS, "contract"]
    scaled = set(scale[keys].itertuples(index=False, name=None))
    main = frame[(frame["part"] == "main") & (frame["model"] == NOMINAL) & ~frame["instances"].isin(scale["instances"])]
    shared = main[[key in scaled for key in main[keys].itertuples(index=False, name=None)]]
    return pd.concat([frame, shared.assign(part="scale")], ignore_index=True)


# --------------------------------------------------------------------------- comparisons
def side_of(low: float, high: float, delta: float = EQUIVALENCE_DELTA) -> str:
    """Where an interval lies against 1: ``above``, ``below``, ``equivalent`` (within 1 ±
    ``delta``), ``across`` (straddling 1, wider: unsettled) or ``none`` (no interval)."""
    verdict = ratio_verdict(low, high, delta)
    return "across" if verdict == "unsettled" else verdict


def versus_baseline(kmap: KMap, scheduler: str, tiers: Sequence[int]) -> pd.DataFrame:
    """The comparisons of ``scheduler`` at each K in ``tiers`` with INFaaS++, per condition."""
    rows = kmap.ratios[(kmap.ratios["scheduler"] == scheduler) & kmap.ratios[TIERS].isin(tiers)]
    sides = [side_of(lo, hi, kmap.delta) for lo, hi in zip(rows["vs_baseline.ci_low"], rows["vs_baseline.ci_high"])]
    return rows.assign(side=sides)


def versus_k(kmap: KMap, scheduler: str, tiers: int, over: int) -> pd.DataFrame:
    """``scheduler`` at K = ``tiers`` over itself at K = ``over``, per condition: the paired
    ratio of capacity per GPU on the seeds both searched above the floor."""
    searches = kmap.searches[kmap.searches["scheduler"] == scheduler]
    keys = ["part", "model", "instances", "contract"]
    rows = []
    for condition, group in searches.groupby(keys, dropna=False):
        pair = group.pivot_table(index="seed", columns=TIERS, values="rate_per_gpu")
        rated = group.pivot_table(index="seed", columns=TIERS, values="answer", aggfunc="first")
        if tiers not in pair or over not in pair:
            continue
        ok = rated[tiers].isin(["bracketed", "unbounded"]) & rated[over].isin(["bracketed", "unbounded"])
        ratios = (pair[tiers] / pair[over])[ok].dropna()
        ratio, low, high = sequential_ratio(ratios) if len(ratios) >= 2 else (math.nan,) * 3
        rows.append({**dict(zip(keys, condition)), "scheduler": scheduler, TIERS: tiers, "seeds": len(ratios),
                     "vs_baseline": ratio, "vs_baseline.ci_low": low, "vs_baseline.ci_high": high,
                     "side": side_of(low, high, kmap.delta)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- claims
@dataclass(frozen=True)
class Claim:
    """A conclusion and how the map tests it: the comparisons it reads and the side of 1
    they must fall on (``EXPECTS``)."""

    text: str
    source: str
    expect: str  # a key of EXPECTS
    comparisons: Callable[[KMap], pd.DataFrame] | None  # None: outside the map
    why_outside: str = ""

    def verdicts(self, kmap: KMap) -> pd.DataFrame:
        """One row per condition: holds, fails, equivalent or unsettled, and the comparisons
        against it."""
        keys = ["part", "model", "instances", "contract"]
        rows = self.comparisons(kmap) if self.comparisons is not None else pd.DataFrame()
        if rows.empty:
            return pd.DataFrame(columns=[*keys, "verdict", "against"])
        out = []
        for condition, group in rows.groupby(keys, dropna=False):
            records = group.to_dict("records")
            wrong = [f"{r['scheduler']} K={r[TIERS]}" for r in records if _fails(self.expect, r["side"])]
            if wrong:
                verdict = "fails"
            elif all(r["side"] in EXPECTS[self.expect][0] for r in records):
                verdict = "holds"
            elif all(r["side"] in EXPECTS[self.expect][0] | {"equivalent"} for r in records):
                verdict = "equivalent"
            else:
                verdict = "unsettled"
            out.append({**dict(zip(keys, condition)), "verdict": verdict, "against": ", ".join(wrong)})
        return pd.DataFrame(out)


EXPECTS = {  # what a claim expects of its comparisons -> (the sides that bear it out, those against it)
    "above": ({"above"}, {"below"}),
    "below": ({"below"}, {"above"}),
    "across": ({"across", "equivalent"}, {"above", "below"}),  # no difference
    "not below": ({"above", "across", "equivalent"}, {"below"}),  # no loss
}


def _fails(expect: str, side: str) -> bool:
    """Whether a comparison on ``side`` of 1 contradicts a claim expecting ``expect``."""
    return side in EXPECTS[expect][1]


def label(verdicts: pd.DataFrame) -> str:
    """A claim's label from its verdicts (the module docstring's order)."""
    if verdicts.empty:
        return "outside the map"

    def flips(frame: pd.DataFrame) -> bool:
        return {"holds", "fails"} <= set(frame["verdict"])

    if flips(verdicts[verdicts["part"] == "main"]):
        return "contract-dependent"
    if any(flips(group) for _, group in verdicts[verdicts["part"] == "scale"].groupby("contract")):
        return "scale-dependent"
    banded = verdicts[verdicts["part"].isin(["main", "bands"])]
    if any(flips(group) for _, group in banded.groupby("contract")):
        return "model-dependent"
    outcomes = set(verdicts["verdict"])
    if outcomes in ({"holds"}, {"fails"}):
        return "robust"
    if outcomes == {"equivalent"}:
        return "equivalent"
    if outcomes in ({"holds", "equivalent"}, {"fails", "equivalent"}):
        return f"{(outcomes - {'equivalent'}).pop()} or equivalent"
    return "unsettled"


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [frame for frame in frames if not frame.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _more_tiers(scheduler_tiers: Sequence[tuple[str, int]]) -> Callable[[KMap], pd.DataFrame]:
    """Each (scheme, K) over the same scheme at K = 1."""
    return lambda kmap: _concat([versus_k(kmap, scheduler, tiers, 1) for scheduler, tiers in scheduler_tiers])


def _family(family: str, comparisons: Callable[[KMap], pd.DataFrame]) -> Callable[[KMap], pd.DataFrame]:
    def only(kmap: KMap) -> pd.DataFrame:
        rows = comparisons(kmap)
        names = {name for name, info in kmap.contracts.items() if info.get("family") == family}
        return rows[rows["contract"].isin(names)] if not rows.empty else rows
    return only


def _scheme(scheduler: str, tiers: Sequence[int]) -> Callable[[KMap], pd.DataFrame]:
    return lambda kmap: versus_baseline(kmap, scheduler, tiers)


K_TIERED = (2, 4, 10)
MODES = (("llumnix", "the load target"), ("llumnix-headroom", "exponential headroom"))


def _k4_best(scheduler: str) -> Callable[[KMap], pd.DataFrame]:
    """K = 4 over every other K of the scheme: all above 1 is "K = 4 is optimal"."""
    return lambda kmap: _concat([versus_k(kmap, scheduler, 4, other) for other in (1, 2, 10)])


def _both_modes(kmap: KMap) -> pd.DataFrame:
    return _concat([versus_baseline(kmap, scheduler, K_TIERED) for scheduler, _ in MODES])


CLAIMS = (
    Claim("Llumnix-base (migration, one tier) carries more load per GPU than INFaaS++", "the Llumnix paper",
          "above", _scheme("llumnix", (1,))),
    Claim("The artifact's load target per tier costs capacity once K >= 2", "README (K-tier GPU findings)",
          "below", _scheme("llumnix", K_TIERED)),
    Claim("Exponential headroom with K >= 2 tiers carries more load per GPU than INFaaS++", "the K-tier project",
          "above", _scheme("llumnix-headroom", K_TIERED)),
    *(Claim(f"More tiers carry more load per GPU than one, {name} (K >= 2 over K = 1)", "the K-tier project",
            "above", _more_tiers([(scheduler, k) for k in K_TIERED])) for scheduler, name in MODES),
    *(Claim(f"No K is distinguishable from one tier in GPUs, {name}", "README (K-tier GPU findings)",
            "across", _more_tiers([(scheduler, k) for k in K_TIERED])) for scheduler, name in MODES),
    *(Claim(f"K = 4 is optimal, {name} (K = 4 over K = 1, 2 and 10)", "the K-tier project", "above",
            _k4_best(scheduler)) for scheduler, name in MODES),
    Claim("The K-tier schemes' mean-latency gain, in GPUs: K >= 2 (either mode) beats INFaaS++ under a mean "
          "contract (the project: 5.0-8.3x mean prefill)", "the K-tier project", "above", _family("mean", _both_modes)),
    Claim("No tail collapse up to K = 10: K = 10 carries as much as K = 1 under a tail contract (either mode)",
          "the K-tier project", "not below",
          _family("tail", _more_tiers([(scheduler, 10) for scheduler, _ in MODES]))),
    Claim("Adaptive headroom is the one scheme ahead of INFaaS++ in most configurations", "README (K-tier GPU findings)",
          "above", None, "adaptive headroom is not among the map's schemes (docs/findings.md, k_capacity)"),
    Claim("Gains are largest at moderate load", "the K-tier project", "above", None,
          "capacity is one load per contract (its edge); the latency study reads loads (docs/findings.md)"),
    Claim("Tier 0's P99 prefill beats INFaaS++ at K >= 2", "the K-tier project", "above", None,
          "a latency claim at fixed load; the map bounds every class (docs/findings.md)"),
    Claim("No K beats one tier on cost-per-latency", "README (K-tier latency findings)", "across", None,
          "cost-per-latency at fixed load is the latency study's metric (docs/findings.md)"),
)


def conclusions(kmap: KMap, claims: Sequence[Claim] = CLAIMS) -> pd.DataFrame:
    """One row per claim: its label, how many conditions it holds, fails, is equivalent or
    unsettled in, and the conditions against it (each with the comparisons that decide it)."""
    rows = []
    for claim in claims:
        verdicts = claim.verdicts(kmap)
        counts = verdicts["verdict"].value_counts() if not verdicts.empty else pd.Series(dtype=int)
        against = verdicts[verdicts["verdict"] == "fails"]
        rows.append({
            "claim": claim.text,
            "source": claim.source,
            "label": label(verdicts),
            "holds": int(counts.get("holds", 0)),
            "fails": int(counts.get("fails", 0)),
            "equivalent": int(counts.get("equivalent", 0)),
            "unsettled": int(counts.get("unsettled", 0)),
            "cells": claim.why_outside or "; ".join(_where(r) + ": " + r["against"] for r in against.to_dict("records")),
        })
    return pd.DataFrame(rows)


def _where(condition: dict) -> str:
    """A condition in a few words: the contract, and the band or cluster size if not nominal."""
    parts = [condition["contract"]]
    if condition["model"] != NOMINAL:
        parts.append(condition["model"])
    if condition["part"] == "scale":
        parts.append(f"{int(condition['instances'])} instances")
    return " ".join(parts)


def conclusions_markdown(table: pd.DataFrame, kmap: KMap) -> str:
    """The conclusions table as docs/k-map.md shows it, with the runs it rests on."""
    seeds = {part: meta.get("seeds", []) for part, meta in kmap.meta.items()}
    runs = sum(meta.get("runs", 0) for meta in kmap.meta.values())
    lines = [
        f"{len(kmap.conditions())} conditions (contract x band x cluster size) from {runs:,} runs "
        f"({', '.join(f'{part}: {len(s)} seeds' for part, s in seeds.items())}, added where unsettled); "
        f"holds / fails / equivalent (the ratio's whole interval within ±{kmap.delta:.0%}) / unsettled count "
        "conditions; *cells* are the conditions against the claim.",
        "",
        "| claim | from | label | holds | fails | equivalent | unsettled | cells |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in table.to_dict("records"):
        shown = row["label"]
        if shown == "robust":
            shown += " (holds everywhere)" if row["fails"] == 0 else " (fails everywhere)"
        elif "equivalent" in shown:
            shown = shown.replace("equivalent", f"equivalent within ±{kmap.delta:.0%}")
        lines.append(
            f"| {row['claim']} | {row['source']} | **{shown}** | {row['holds']} | {row['fails']} | "
            f"{row['equivalent']} | {row['unsettled']} | {row['cells'] or '–'} |"
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- figures
def _contract_order(kmap: KMap, family: str) -> list[str]:
    names = [n for n, info in kmap.contracts.items() if info.get("family") == family]
    return sorted(names, key=lambda n: (n.replace("-2x", ""), kmap.contracts[n].get("tightness") or 0))


def map_figure(kmap: KMap) -> "Figure":
    """Capacity per GPU over INFaaS++ against contract tightness, a panel per family, a line
    per scheme with its interval, the bands' range (with nominal) shaded."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(FAMILIES), figsize=(13, 4.2), sharey=True)
    for ax, family in zip(axes, FAMILIES):
        names = _contract_order(kmap, family)
        ax.axhline(1.0, color="grey", lw=0.8)
        for offset, (scheduler, tiers, title) in zip((-0.08, 0.0, 0.08), LINES):
            rows = kmap.ratios[(kmap.ratios["scheduler"] == scheduler) & (kmap.ratios[TIERS] == tiers)
                               & (kmap.ratios["instances"] == 16)]
            main = rows[rows["part"] == "main"].set_index("contract")
            x = [i + offset for i, name in enumerate(names)]
            y = [main["vs_baseline"].get(n, math.nan) for n in names]
            low = [main["vs_baseline.ci_low"].get(n, math.nan) for n in names]
            high = [main["vs_baseline.ci_high"].get(n, math.nan) for n in names]
            line = ax.errorbar(x, y, yerr=[[a - b for a, b in zip(y, low)], [b - a for a, b in zip(y, high)]],
                               marker="o", capsize=3, label=title)
            banded = rows[rows["part"].isin(["main", "bands"])].groupby("contract")["vs_baseline"]
            lo, hi = banded.min(), banded.max()
            if rows["part"].eq("bands").any():
                ax.fill_between(x, [lo.get(n, math.nan) for n in names], [hi.get(n, math.nan) for n in names],
                                color=line[0].get_color(), alpha=0.15, lw=0)
        measured = kmap.ratios[(kmap.ratios["part"] == "main")].groupby("contract")["vs_baseline"].count()
        for i, name in enumerate(names):
            if not measured.get(name, 0):
                ax.text(i, 1.0, "below the\nno-load floor", ha="center", va="bottom", fontsize=8, color="grey")
        ax.set_xticks(range(len(names)), names, rotation=20)
        ax.set_title(f"{family} contracts")
        ax.set_xlabel("contract (tighter to the right of each pair: targets halved)")
    axes[0].set_ylabel("capacity per GPU / INFaaS++'s (paired)")
    axes[-1].legend(fontsize=8)
    figure.suptitle("16 LLaMA-7B on A10, 5,000 ShareGPT requests per probe: sequential 95% intervals; "
                    "shaded: step time x0.9/x1.1, KV -5%/+5%")
    figure.tight_layout()
    return figure


def scale_figure(kmap: KMap) -> "Figure":
    """The ratio to INFaaS++ against cluster size, a panel per contract of the scale grid."""
    import matplotlib.pyplot as plt

    scale = kmap.ratios[kmap.ratios["part"] == "scale"]
    contracts = sorted(scale["contract"].unique())
    figure, axes = plt.subplots(1, max(1, len(contracts)), figsize=(4.3 * max(1, len(contracts)), 4), sharey=True,
                                squeeze=False)
    for ax, contract in zip(axes[0], contracts):
        ax.axhline(1.0, color="grey", lw=0.8)
        for scheduler, tiers, title in LINES:
            rows = scale[(scale["contract"] == contract) & (scale["scheduler"] == scheduler)
                         & (scale[TIERS] == tiers)].sort_values("instances")
            y = rows["vs_baseline"].to_numpy()
            ax.errorbar(rows["instances"], y, yerr=[y - rows["vs_baseline.ci_low"], rows["vs_baseline.ci_high"] - y],
                        marker="o", capsize=3, label=title)
        ax.set_xscale("log", base=2)
        ax.set_xticks([4, 8, 16, 32], ["4", "8", "16", "32"])
        ax.set_title(contract)
        ax.set_xlabel("instances (requests and rate in proportion)")
    axes[0][0].set_ylabel("capacity per GPU / INFaaS++'s (paired)")
    axes[0][-1].legend(fontsize=8)
    figure.tight_layout()
    return figure


# --------------------------------------------------------------------------- command
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sim.studies.k_map", description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="the K map's results (main/, bands/, scale/)")
    parser.add_argument("--readme", type=Path, help=f"also rewrite the table between {README_BEGIN} and {README_END}")
    parser.add_argument("--no-plots", action="store_true", help="write the tables only")
    parser.add_argument("--delta", type=float, default=EQUIVALENCE_DELTA,
                        help="a ratio is 'equivalent' when its whole interval lies within 1 ± DELTA (default %(default)s)")
    args = parser.parse_args(argv)
    from sim.files import atomic_write, marked_text, replace_marked

    try:
        if args.readme:
            marked_text(args.readme, README_BEGIN, README_END, f"--readme {args.readme}")
        if not 0 < args.delta < 1:
            raise ConfigError(f"--delta: {args.delta} is not between 0 and 1")
        kmap = load_map(args.folder, args.delta)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    table = conclusions(kmap)
    text = conclusions_markdown(table, kmap)
    atomic_write(args.folder / "conclusions.md", lambda tmp: tmp.write_text(text))
    atomic_write(args.folder / "conclusions.csv", lambda tmp: table.to_csv(tmp, index=False))
    written = ["conclusions.md", "conclusions.csv"]
    if not args.no_plots:
        for name, draw in (("map.png", map_figure), ("scale.png", scale_figure)):
            if name == "scale.png" and "scale" not in kmap.meta:
                continue
            figure = draw(kmap)
            atomic_write(args.folder / name, lambda tmp: figure.savefig(tmp, dpi=110, format="png"))
            written.append(name)
    print(text)
    if args.readme:
        replace_marked(args.readme, README_BEGIN, README_END, text.rstrip("\n"), f"--readme {args.readme}")
        print(f"rewrote the conclusions table in {args.readme}")
    print(f"wrote {', '.join(written)} to {args.folder}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
