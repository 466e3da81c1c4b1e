"""The K-tier project's claims (shared/seeds/004), measured on a ``k_study``
index.

Every comparison is paired: Llumnix against INFaaS++ (or one K against another) on the same
cell and seed, i.e. the same requests, as a log-ratio per seed, averaged over seeds with a
Student-t 95% interval (``sim.sweep.stats``). A "best K" is named only where its interval
against the runner-up, on the same seeds, excludes a tie. Counts over configurations count
the single-tier run once: with K = 1 every request is tier 0, so it is one run under every
mix and both priority modes.

    python -m sim.studies.findings results/k_study   # prints the table; writes findings.md,
                                                     # k_study.png and speedups.csv there
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from sim.presentation.markdown import markdown
from sim.presentation.study_cli import publish, read_results_index
from sim.sweep.index import ok_rows
from sim.sweep.stats import paired, ratio_interval

if TYPE_CHECKING:  # matplotlib is imported only when a figure is drawn
    from matplotlib.figure import Figure

K = "workload.priority.tiers"
MIX = "workload.priority.sampler"
SIZE = "workload.num_requests"
RATE = "workload.arrival.rate"
BASELINE = "infaas++"
MODES = ("llumnix", "llumnix-headroom")
PREFILL_MEAN = "latency.prefill_latency.mean"
PREFILL_P99 = "latency.prefill_latency.p99"
E2E_MEAN = "latency.e2e_latency.mean"
E2E_P99 = "latency.e2e_latency.p99"
TIER0_PREFILL_P99 = "latency_by_tier.0.prefill_latency.p99"
COST_PER_REQUEST = "cost.cost_per_request"
COST_PER_LATENCY = "cost.cost_per_latency"
# the paired speed-ups the figure, the notebook and speedups.csv show: INFaaS++ / Llumnix
MEASURES = {
    "tier 0 P99 prefill": TIER0_PREFILL_P99,
    "all requests P99 prefill": PREFILL_P99,
    "all requests mean prefill": PREFILL_MEAN,
}
# the K-tier project's numbers (shared/seeds/004)
CLAIMED_PREFILL = (5.0, 8.3)  # mean prefill speed-up over INFaaS++
# cost-per-latency improvement over INFaaS++, by request count; a study of other sizes is
# graded against the union
CLAIMED_SAVING = {10000: (0.46, 0.68), 15000: (0.24, 0.53)}
CLAIMED_SAVING_ANY = (0.24, 0.68)
STABLE_TAIL = 1.25  # "stable": the worst K's e2e P99 within 25% of K = 1's (our reading)
# "most pronounced at moderate load ... near saturation migration loses leverage" (our
# reading): the largest median gain is at a load below the study's highest; it fails where
# gains grow all the way to the most loaded point. Three loads at least, so a rise and a
# fall can both show.
ANY = "(any)"  # the mix and mode of the single-tier run, which has neither
SHORT = {"scheduler": "mode", MIX: "mix", SIZE: "requests", RATE: "req/s"}  # findings.md's headers


def cell_columns(index: pd.DataFrame) -> list[str]:
    """The coordinates besides K and the scheduler that a study varies: mix, size (where
    it varies: k_study runs 10,000 and 15,000 requests) and load."""
    return [c for c in (MIX, SIZE, RATE) if c in index.columns]


def speedups(index: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Baseline / Llumnix per cell (>1: Llumnix lower), with the interval, for both modes."""
    frame = paired(index, metric, "scheduler", BASELINE)
    frame = frame[frame["scheduler"].isin(MODES)].copy()
    frame["speedup"] = 1.0 / frame["ratio"]
    frame["ci_low"], frame["ci_high"] = 1.0 / frame["ratio.ci_high"], 1.0 / frame["ratio.ci_low"]
    return frame.drop(columns=["ratio", "ratio.ci_low", "ratio.ci_high"])


def savings(index: pd.DataFrame, metric: str) -> pd.DataFrame:
    """1 − Llumnix / baseline per cell (cost-per-latency improvement), with the interval."""
    frame = paired(index, metric, "scheduler", BASELINE)
    frame = frame[frame["scheduler"].isin(MODES)].copy()
    frame["saving"] = 1 - frame["ratio"]
    frame["ci_low"], frame["ci_high"] = 1 - frame["ratio.ci_high"], 1 - frame["ratio.ci_low"]
    return frame


def distinct(frame: pd.DataFrame, values: list[str]) -> pd.DataFrame:
    """One row per distinct configuration: rows of one K and load that agree exactly on
    ``values`` are one run seen under several mixes or modes (runs that differ only in tier
    labels share one simulation, ``sim.sweep.sharing``: K = 1 under every mix and mode, and
    any two mixes that split K tiers alike); its mix or mode becomes ``ANY``."""
    keys = [c for c in (K, SIZE, RATE) if c in frame.columns] + values
    shared = frame.groupby(keys, dropna=False, sort=False)
    kept = shared.head(1).copy()
    for column in (MIX, "scheduler"):
        if column in frame.columns:
            several = shared[column].transform("nunique") > 1
            kept.loc[several.loc[kept.index].to_numpy(), column] = ANY
    return kept.reset_index(drop=True)


def speedup_table(index: pd.DataFrame) -> pd.DataFrame:
    """Every paired speed-up of ``MEASURES`` per mode, cell and K: a long frame with
    ``measure``, ``seeds``, ``speedup``, ``ci_low``, ``ci_high``."""
    parts = []
    for name, metric in MEASURES.items():
        part = speedups(index, metric)
        part.insert(0, "measure", name)
        parts.append(part)
    table = pd.concat(parts, ignore_index=True)
    order = ["measure", "scheduler", *cell_columns(index), K]
    return table[[*order, "seeds", "speedup", "ci_low", "ci_high"]].sort_values(order, ignore_index=True)


def best_k(index: pd.DataFrame, metric: str = COST_PER_LATENCY) -> pd.DataFrame:
    """Per mode and cell: the K of the lowest geometric-mean ``metric`` over seeds, the
    runner-up, best / runner-up paired on their common seeds with its interval, and the
    answer: ``K = k`` where the interval lies below 1, else ``no K distinguishable``."""
    rows = []
    cells = cell_columns(index)
    for mode in MODES:
        runs = index[index["scheduler"] == mode]
        for key, cell in runs.groupby(cells, sort=True):
            by_seed = cell.pivot_table(index="seed", columns=K, values=metric, aggfunc="first")
            by_seed = by_seed.dropna(axis=1, how="all")
            if by_seed.shape[1] < 2:
                continue
            ranked = np.exp(np.log(by_seed).mean()).sort_values()  # geometric means over seeds
            best, runner_up = ranked.index[:2]
            both = by_seed[[best, runner_up]].dropna()
            ratio, low, high = (v[0] for v in ratio_interval((both[best] / both[runner_up]).to_numpy()))
            separated = bool(high < 1.0)
            rows.append(
                {
                    "scheduler": mode,
                    **dict(zip(cells, key if isinstance(key, tuple) else (key,))),
                    "best K": int(best),
                    "best mean": float(ranked.iloc[0]),
                    "runner-up K": int(runner_up),
                    "seeds": len(both),
                    "best / runner-up": ratio,
                    "ci_low": low,
                    "ci_high": high,
                    "answer": f"K = {int(best)}" if separated else "no K distinguishable",
                }
            )
    return pd.DataFrame(rows)


def _percent(value: float) -> str:
    """Whole percent, without the "-0%" of a value that rounds to zero from below."""
    return f"{round(value, 2) + 0.0:.0%}"


def _range(values: pd.Series, unit: str = "×") -> str:
    return f"{values.min():.2f}–{values.max():.2f}{unit}" if len(values) else "—"


def _sides(low: pd.Series, high: pd.Series, at: float) -> str:
    """How many intervals lie above ``at``, below it, and across it."""
    return f"{int((low > at).sum())} above {at:g}, {int((high < at).sum())} below, {int(((low <= at) & (at <= high)).sum())} across"


def _against(point: pd.Series, low: pd.Series, high: pd.Series, band: tuple[float, float]) -> tuple[str, str]:
    """A claimed range graded per configuration: inside (the estimate in the range), or
    excluded (the whole interval outside it); the text, and ``yes`` where at least half are
    inside, ``no`` where more than half are excluded, else ``not resolved``."""
    inside = int(point.between(*band).sum())
    excluded = int(((high < band[0]) | (low > band[1])).sum())
    holds = "yes" if 2 * inside >= len(point) else "no" if 2 * excluded > len(point) else "not resolved"
    return f"{inside} inside the claimed range, {excluded} excluded by their interval", holds


def _best_k_row(mode: str, table: pd.DataFrame) -> dict:
    named = table[table["answer"] != "no K distinguishable"]
    winners = distinct(named.assign(**{K: named["best K"]}), ["best mean"]) if len(named) else named
    counts = winners["best K"].value_counts().sort_index() if len(winners) else pd.Series(dtype=int)
    text = (
        f"a best K separates from the runner-up in {len(named)} of {len(table)} cells"
        + (": " + ", ".join(f"K = {k} ({n} configuration{'s' * (n > 1)})" for k, n in counts.items()) if len(named) else "")
        + f"; no K distinguishable in {len(table) - len(named)}"
    )
    fours = int((named["best K"] == 4).sum())
    others = len(named) - fours
    holds = "yes" if 2 * fours >= len(table) else "no" if 2 * others >= len(table) else "not resolved"
    return {"claim": f"K = 4 is optimal (cost-per-latency), {mode}", "K-tier project": "K = 4", "llumsim": text, "holds": holds}


def findings(index: pd.DataFrame) -> pd.DataFrame:
    """One row per claim: the K-tier project's number, llumsim's, whether it holds."""
    prefill = speedups(index, PREFILL_MEAN)
    cost = savings(index, COST_PER_LATENCY)
    tier0 = speedups(index, TIER0_PREFILL_P99)
    best = best_k(index)
    cells = cell_columns(index)
    rows = []
    for mode in MODES:
        mine = distinct(prefill[prefill["scheduler"] == mode], ["speedup"])
        if mine.empty:
            continue
        rows.append(_best_k_row(mode, best[best["scheduler"] == mode]))
        graded, holds = _against(mine["speedup"], mine["ci_low"], mine["ci_high"], CLAIMED_PREFILL)
        rows.append(
            {
                "claim": f"mean prefill vs INFaaS++, {mode}",
                "K-tier project": f"{CLAIMED_PREFILL[0]:.1f}–{CLAIMED_PREFILL[1]:.1f}×",
                "llumsim": f"{_range(mine['speedup'])} over {len(mine)} configurations (median "
                f"{mine['speedup'].median():.2f}×); intervals: {_sides(mine['ci_low'], mine['ci_high'], 1.0)}; "
                f"{graded}",
                "holds": holds,
            }
        )
        saved = distinct(cost[cost["scheduler"] == mode], ["saving"])
        by_size = saved.groupby(SIZE) if SIZE in saved.columns else [(None, saved)]
        for size, part in by_size:
            band = CLAIMED_SAVING.get(size, CLAIMED_SAVING_ANY)
            graded, holds = _against(part["saving"], part["ci_low"], part["ci_high"], band)
            rows.append(
                {
                    "claim": f"cost-per-latency better than INFaaS++, {f'{size:,} requests, ' if size else ''}{mode}",
                    "K-tier project": f"{band[0]:.0%}–{band[1]:.0%}",
                    "llumsim": f"{_percent(part['saving'].min())} to {_percent(part['saving'].max())} over "
                    f"{len(part)} configurations (median {_percent(part['saving'].median())}); {graded}",
                    "holds": holds,
                }
            )
        growth = paired(index[index["scheduler"] == mode], E2E_P99, K, 1)
        worst = growth.loc[growth.groupby(cells)["ratio"].idxmax()]
        above = worst["ratio.ci_low"] > STABLE_TAIL
        below = worst["ratio.ci_high"] <= STABLE_TAIL
        rows.append(
            {
                "claim": f"no tail-latency collapse up to K = 10, {mode}",
                "K-tier project": "aggregate P99 stable",
                "llumsim": f"worst K's e2e P99 / K = 1's, paired: {_range(worst['ratio'])} over {len(worst)} cells; "
                f"interval above {STABLE_TAIL:g}× in {int(above.sum())}, within it in {int(below.sum())}",
                "holds": "yes" if below.all() else ("no" if above.any() else "not resolved"),
            }
        )
        by_load = mine.groupby(RATE)["speedup"].median()
        rows.append(
            {
                "claim": f"gains largest at moderate load, {mode}",
                "K-tier project": "moderate load",
                "llumsim": "median mean-prefill speed-up by rate: "
                + ", ".join(f"{rate:g} req/s: {value:.2f}×" for rate, value in by_load.items()),
                "holds": (
                    f"not testable with {len(by_load)} loads"
                    if len(by_load) < 3
                    else "no" if by_load.idxmax() == by_load.index.max() else "yes"
                ),
            }
        )
        gains = distinct(tier0[(tier0["scheduler"] == mode) & (tier0[K] > 1)], ["speedup"])
        rows.append(
            {
                "claim": f"tier 0 P99 prefill vs INFaaS++ at K ≥ 2, {mode}",
                "K-tier project": "—",
                "llumsim": f"{_range(gains['speedup'])} over {len(gains)} configurations (median "
                f"{gains['speedup'].median():.2f}×); intervals: {_sides(gains['ci_low'], gains['ci_high'], 1.0)}",
                "holds": "—",
            }
        )
    return pd.DataFrame(rows)


def cost_note(index: pd.DataFrame) -> str:
    """What cost-per-latency (cost per request × mean e2e latency) measures, computed: how
    far cost per request spreads over the cells of one size and load (between them it differs
    by the run's length, which no scheduler changes), and how small prefill's share of the
    mean end-to-end latency is (the rest, decode, is what the metric measures)."""
    loads = [c for c in (SIZE, RATE) if c in index.columns]
    cells = index.groupby([*cell_columns(index), K, "scheduler"])[[COST_PER_REQUEST, PREFILL_MEAN, E2E_MEAN]].mean()
    cost = cells[COST_PER_REQUEST].groupby(level=loads)
    spread = (cost.max() / cost.min() - 1).max()
    share = cells[PREFILL_MEAN] / cells[E2E_MEAN]
    return (
        f"Cost-per-latency is mostly mean decode time: cost per request differs by at most {spread:.1%} between two "
        f"cells of the same load (of {len(cells)} cells: K x mix x scheduler x {' x '.join(SHORT[c] for c in loads)}), "
        f"and prefill is {share.median():.1%} "
        f"of mean end-to-end latency (median over cells; at most {share.max():.1%})."
    )


def speedup_grid(table: pd.DataFrame, measure: str) -> pd.DataFrame:
    """One ``measure`` of ``speedup_table`` as rows of mode and cell, a column per K, each
    entry "speed-up (interval)"."""
    part = table[table["measure"] == measure]
    rows = ["scheduler", *[c for c in (MIX, SIZE, RATE) if c in part.columns]]
    text = part.assign(entry=[f"{v:.3g} ({lo:.3g}–{hi:.3g})" for v, lo, hi in zip(part["speedup"], part["ci_low"], part["ci_high"])])
    grid = text.pivot(index=rows, columns=K, values="entry")
    grid.columns = [f"K = {k}" for k in grid.columns]
    return grid.reset_index().rename(columns=SHORT)


def report(index: pd.DataFrame, name: str, seeds: int) -> str:
    """findings.md: the claims, the computed note on cost-per-latency, the paired speed-ups
    per K, and the best K per cell."""
    table = speedup_table(index)
    grids = [
        part
        for measure in (list(MEASURES)[0], list(MEASURES)[2])
        for part in (f"## {measure}: INFaaS++ / Llumnix, paired (95% interval)", markdown(speedup_grid(table, measure)))
    ]
    best = best_k(index)
    best_table = best.assign(**{"best mean": best["best mean"].map("{:.4g}".format),
                                "best / runner-up": best["best / runner-up"].map("{:.3f}".format),
                                "95% interval": [f"{lo:.3f}–{hi:.3f}" for lo, hi in zip(best["ci_low"], best["ci_high"])]})
    return "\n\n".join(
        [
            f"# {name}: the K-tier project's claims, {seeds} seeds, paired Student-t 95% intervals",
            markdown(findings(index)),
            cost_note(index),
            *grids,
            "## Best K by cost-per-latency per cell (best / runner-up paired on the same seeds)",
            markdown(best_table.drop(columns=["ci_low", "ci_high"]).rename(columns=SHORT)),
        ]
    )


def plot_speedups_vs_k(
    table: pd.DataFrame, measures: Sequence[str] | None = None, title: str | None = None
) -> Figure:
    """Paired speed-ups over the baseline against K (``speedup_table``):
    one panel per load (rows) and mix (columns), one colour per mode, one line style per
    measure, each with its 95% interval as a band; 1 (the baseline) dashed."""
    import matplotlib.pyplot as plt

    from sim.presentation.plots import axis_label, integer_ticks, plain_log_axis

    measures = list(measures or dict.fromkeys(table["measure"]))
    table = table[table["measure"].isin(measures)]
    rates, mixes = sorted(table[RATE].unique()), sorted(table[MIX].unique())
    fig, axes = plt.subplots(
        len(rates), len(mixes), figsize=(4.2 * len(mixes), 3.3 * len(rates)), squeeze=False,
        sharex=True, layout="constrained",
    )
    modes = list(dict.fromkeys(table["scheduler"]))
    styles = dict(zip(measures, ("-", "--", ":", "-.")))
    for (rate, mix), ax in zip([(r, m) for r in rates for m in mixes], axes.flat):
        panel = table[(table[RATE] == rate) & (table[MIX] == mix)]
        for i, mode in enumerate(modes):
            for measure in measures:
                line = panel[(panel["scheduler"] == mode) & (panel["measure"] == measure)].sort_values(K)
                ax.plot(line[K], line["speedup"], styles[measure], color=f"C{i}", marker="o", ms=3,
                        label=f"{mode}: {measure}")
                ax.fill_between(line[K], line["ci_low"], line["ci_high"], color=f"C{i}", alpha=0.15, lw=0)
        ax.axhline(1.0, color="black", lw=0.8, ls="--")
        plain_log_axis(ax)
        integer_ticks(ax, table[K])
        ax.set_title(f"{mix} mix, {rate:g} requests/s", fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel(axis_label(K))
    for ax in axes[:, 0]:
        ax.set_ylabel("speed-up over INFaaS++ (x)\nabove 1: Llumnix faster")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    # below the panels, where constrained layout makes room for it: a column per mode (one
    # column under a single panel); four columns overran a two-mix figure and were cut off
    fig.legend(handles, labels, loc="outside lower center", ncol=len(modes) if len(mixes) > 1 else 1,
               fontsize=8, frameon=False)
    fig.suptitle(title or "Paired speed-up over INFaaS++ against K (bands: Student-t 95% intervals over seeds)", fontsize=10)
    return fig


def headline_figure(index: pd.DataFrame) -> Figure:
    """The headline: tier 0's and all requests' P99 prefill speed-up over INFaaS++ against
    K, per mode, with intervals, one panel per mix and load, for the smallest run size only
    (the notebook draws each): the title says which."""
    table = speedup_table(index)
    size = ""
    if SIZE in table.columns:
        sizes = sorted(table[SIZE].unique())
        table = table[table[SIZE] == sizes[0]]
        others = ", ".join(f"{s:,}" for s in sizes[1:])
        size = f": runs of {sizes[0]:,} requests" + (f" only ({others}: findings.md)" if others else "")
    title = f"Paired speed-up over INFaaS++ against K{size}\nbands: Student-t 95% intervals over seeds"
    return plot_speedups_vs_k(table, measures=list(MEASURES)[:2], title=title)


def figure(index: pd.DataFrame, path: Path) -> Path:
    """``headline_figure`` as ``path``."""
    import matplotlib.pyplot as plt

    fig = headline_figure(index)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a k_study results folder (index.parquet, sweep.json)")
    args = parser.parse_args(argv)

    def work() -> tuple[str, str]:
        read = read_results_index(
            args.results, "sweep.json", "a K-tier study's sweep (experiments/grids/k_study*.yaml)",
            ("scheduler", K, MIX, RATE, PREFILL_P99),
        )
        meta = json.loads((args.results / "sweep.json").read_text())
        index = ok_rows(read)
        text = report(index, meta["name"], len(meta["seeds"]))
        (args.results / "findings.md").write_text(text + "\n")
        figure(index, args.results / f"{meta['name']}.png")
        speedup_table(index).to_csv(args.results / "speedups.csv", index=False, float_format="%.6g")
        return text, f"\nwrote findings.md, {meta['name']}.png and speedups.csv to {args.results}/"

    return publish("findings", work, None, ("", ""))


if __name__ == "__main__":
    sys.exit(main())
