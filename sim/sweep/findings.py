"""The K-tier project's claims (shared/seeds/004), measured on a ``k_sweep`` index.

Every comparison is paired: Llumnix against INFaaS++ on the same cell and seed (the same
requests), then averaged over seeds with a bootstrap 95% interval (``sim.sweep.stats``).

    python -m sim.sweep.findings results/k_sweep      # prints the table, writes findings.md,
                                                      # k_sweep.png and cells.csv into that folder
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from sim.sweep.index import ok_rows
from sim.sweep.paper import markdown
from sim.sweep.stats import aggregate, paired

K = "workload.priority.tiers"
MIX = "workload.priority.sampler"
SIZE = "workload.num_requests"
RATE = "workload.arrival.rate"
BASELINE = "infaas++"
MODES = ("llumnix", "llumnix-headroom")
PREFILL_MEAN = "latency.prefill_latency.mean"
PREFILL_P99 = "latency.prefill_latency.p99"
E2E_P99 = "latency.e2e_latency.p99"
COST_PER_LATENCY = "cost.cost_per_latency"


def speedups(index: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Baseline / Llumnix per cell (>1: Llumnix lower), with the interval, for both modes."""
    frame = paired(index, metric, "scheduler", BASELINE)
    frame = frame[frame["scheduler"].isin(MODES)].copy()
    for column in ("ratio", "ratio.ci_low", "ratio.ci_high"):
        frame[column] = 1.0 / frame[column]
    frame = frame.rename(
        columns={"ratio": "speedup", "ratio.ci_low": "ci_high", "ratio.ci_high": "ci_low"}
    )
    return frame


def savings(index: pd.DataFrame, metric: str) -> pd.DataFrame:
    """1 − Llumnix / baseline per cell (cost-per-latency improvement), with the interval."""
    frame = paired(index, metric, "scheduler", BASELINE)
    frame = frame[frame["scheduler"].isin(MODES)].copy()
    frame["saving"] = 1 - frame["ratio"]
    frame["ci_low"], frame["ci_high"] = 1 - frame["ratio.ci_high"], 1 - frame["ratio.ci_low"]
    return frame


CELL_METRICS = (
    PREFILL_MEAN,
    PREFILL_P99,
    "latency.decode_latency_per_token.p99",
    "latency.e2e_latency.mean",
    E2E_P99,
    "latency_by_tier.0.prefill_latency.mean",
    "latency_by_tier.0.prefill_latency.p99",
    "latency_by_tier.0.e2e_latency.p99",
    COST_PER_LATENCY,
    "requests.preempted",
    "migration.committed",
)


def cells(aggregated: pd.DataFrame) -> pd.DataFrame:
    """The aggregate cut to the metrics the findings read, with their intervals: small enough
    to commit (the whole aggregate has ~580 columns)."""
    coordinates = [K, MIX, SIZE, RATE, "scheduler", "seeds"]
    kept = [f"{m}{suffix}" for m in CELL_METRICS for suffix in ("", ".ci_low", ".ci_high")]
    return aggregated[coordinates + kept]


def _percent(value: float) -> str:
    """Whole percent, without the "-0%" of a value that rounds to zero from below."""
    return f"{round(value, 2) + 0.0:.0%}"


def _range(values: pd.Series) -> str:
    return f"{values.min():.2f}–{values.max():.2f}" if len(values) else "—"


def findings(index: pd.DataFrame) -> pd.DataFrame:
    """One row per claim: the K-tier project's number, llumsim's, and the detail."""
    prefill = speedups(index, PREFILL_MEAN)
    cost = savings(index, COST_PER_LATENCY)
    rows = []
    for mode in MODES:
        best = cost[cost["scheduler"] == mode]
        if best.empty:
            continue
        by_cell = best.loc[best.groupby([MIX, SIZE, RATE])["saving"].idxmax()]
        counts = by_cell[K].value_counts().sort_index()
        top = int(counts.idxmax())
        rows.append(
            {
                "claim": f"K = 4 is optimal (cost-per-latency), {mode}",
                "K-tier project": "K = 4",
                "llumsim": "best K per (mix, size, load): "
                + ", ".join(f"K={int(k)}: {n}" for k, n in counts.items()),
                "holds": "yes" if top == 4 else "no",
            }
        )
        mine = prefill[prefill["scheduler"] == mode]
        rows.append(
            {
                "claim": f"mean prefill vs INFaaS++, {mode}",
                "K-tier project": "5.0–8.3×",
                "llumsim": f"{_range(mine['speedup'])}× over cells (median {mine['speedup'].median():.2f}×)",
                "holds": "yes" if mine["speedup"].min() >= 5.0 / 1.5 else "no",
            }
        )
        rows.append(
            {
                "claim": f"cost-per-latency better than INFaaS++, {mode}",
                "K-tier project": "24–68%",
                "llumsim": f"{_percent(best['saving'].min())} to {_percent(best['saving'].max())} over cells "
                f"(median {_percent(best['saving'].median())})",
                "holds": "yes" if best["saving"].median() >= 0.24 else "no",
            }
        )
        tails = index[index["scheduler"] == mode].groupby([MIX, SIZE, RATE, K])[E2E_P99].mean()
        growth = tails.groupby(level=[0, 1, 2]).apply(lambda s: s.max() / s.xs(1, level=K).iloc[0])
        rows.append(
            {
                "claim": f"no tail-latency collapse up to K = 10, {mode}",
                "K-tier project": "aggregate P99 stable",
                "llumsim": f"max over K of e2e P99 / its K = 1 value: {_range(growth)}",
                "holds": "yes" if growth.max() <= 1.25 else "no",
            }
        )
        by_load = mine.groupby(RATE)["speedup"].mean()
        rows.append(
            {
                "claim": f"gains largest at moderate load, {mode}",
                "K-tier project": "moderate load",
                "llumsim": "mean prefill speed-up by rate: "
                + ", ".join(f"{rate:g}: {value:.2f}×" for rate, value in by_load.items()),
                "holds": "yes" if by_load.idxmax() not in (by_load.index.min(), by_load.index.max()) else "no",
            }
        )
    return pd.DataFrame(rows)


def figure(index: pd.DataFrame, path: Path) -> Path:
    """Per-tier P99 prefill against K (enterprise mix, 10K requests), one panel per load:
    means over seeds with their bootstrap 95% intervals (``sim.sweep.stats.aggregate``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sim.sweep.plots import plain_log_axis

    frame = index[(index[MIX] == "enterprise") & (index[SIZE] == index[SIZE].min())]
    columns = {"tier 0": "latency_by_tier.0.prefill_latency.p99", "all": PREFILL_P99}
    cells = aggregate(frame, list(columns.values()))
    rates = sorted(cells[RATE].unique())
    columns_of_panels = min(2, len(rates))
    rows_of_panels = -(-len(rates) // columns_of_panels)
    fig, axes = plt.subplots(
        rows_of_panels, columns_of_panels, figsize=(5.5 * columns_of_panels, 3.6 * rows_of_panels), squeeze=False
    )
    panels = axes.ravel()
    for ax in panels[len(rates):]:
        ax.set_visible(False)
    for ax, rate in zip(panels, rates):
        at = cells[cells[RATE] == rate]
        for scheduler in (*MODES, BASELINE):
            runs = at[at["scheduler"] == scheduler].sort_values(K)
            for (name, column), style in zip(columns.items(), ("-", ":")):
                line = ax.plot(runs[K], runs[column], style, marker="o", ms=3, label=f"{scheduler} {name}")
                ax.fill_between(
                    runs[K],
                    runs[f"{column}.ci_low"],
                    runs[f"{column}.ci_high"],
                    color=line[0].get_color(),
                    alpha=0.15,
                )
        ax.set_title(f"{rate:g} req/s")
        ax.set_xlabel("tiers K")
        plain_log_axis(ax)
        ax.grid(True, alpha=0.3)
    for row in axes:
        row[0].set_ylabel("P99 prefill (s)\nband: bootstrap 95% CI")
    panels[0].legend(fontsize=7)
    fig.suptitle("k_sweep: P99 prefill vs K, enterprise mix, 10K requests\n(solid: tier 0, the highest priority; dotted: all requests)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a k_sweep results folder (index.parquet)")
    args = parser.parse_args(argv)
    index = ok_rows(pd.read_parquet(args.results / "index.parquet"))
    table = markdown(findings(index))
    (args.results / "findings.md").write_text(table + "\n")
    figure(index, args.results / "k_sweep.png")
    cells(pd.read_parquet(args.results / "aggregate.parquet")).to_csv(args.results / "cells.csv", index=False, float_format="%.6g")
    print(table)
    print(f"\nwrote findings.md, k_sweep.png and cells.csv to {args.results}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
