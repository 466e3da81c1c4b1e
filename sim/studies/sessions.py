"""The prefix-caching study (issue 35): cache-aware against cache-blind dispatch and migration
on multi-turn conversations and on requests behind shared system prompts, as Markdown and a
figure.

    python -m sim.studies.sessions results/prefix_cache [--readme docs/prefix-cache.md]

The folder is ``llumsim sweep experiments/grids/sessions.yaml``'s results (or their compact
copy). For each workload (the grid's parts), rate and way of serving it gives, as the mean
over seeds with its Student-t 95% interval: the share of prompt tokens found cached, P50 and
P99 time to first token, the mean time to first token of turns 1, 2 and 6 or later
(conversations), both against serving without a cache, and the share of migrated blocks a
destination already held. The figure (``prefix_cache.png`` in the folder) plots, per
workload, the hit rate and P99 time to first token against the rate, and the mean time to
first token by turn (conversations) or the share of migrated blocks not copied.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from sim.presentation.study_cli import publish, read_results_index
from sim.sweep.stats import mean_and_t_interval

README_BEGIN, README_END = "<!-- sessions:begin -->", "<!-- sessions:end -->"
RATE, SERVING, PART = "workload.arrival.rate", "serving", "part"
NO_CACHE = "llumnix/no-cache"  # the grid's variant without a prefix cache (the paper's vLLM)
TURNS = ("1", "2", "3", "4", "5", "6+")  # the summary's TTFT-by-turn groups
METRICS = {  # column of the table: (index column, scale)
    "hit_rate": ("prefix_cache.tokens.hit_rate", 100.0),
    "ttft_p50": ("latency.prefill_latency.p50", 1.0),
    "ttft_p99": ("latency.prefill_latency.p99", 1.0),
    **{f"turn_{turn}": (f"sessions.ttft_by_turn.{turn}.mean", 1.0) for turn in TURNS},
    "migrations": ("migration.committed", 1.0),
}


def study_table(index: pd.DataFrame) -> pd.DataFrame:
    """One row per rate and serving: each metric's mean over seeds and interval, and the share
    of migrated blocks found cached at the destination (pooled over seeds)."""
    rows = []
    index = index if PART in index else index.assign(**{PART: "all"})
    for (part, rate, serving), runs in index.groupby([PART, RATE, SERVING], sort=False):
        row: dict = {"part": part, "rate": rate, "serving": serving, "seeds": len(runs)}
        for name, (column, scale) in METRICS.items():
            values = runs[column].tolist() if column in runs else [float("nan")] * len(runs)
            row[name], row[f"{name}_low"], row[f"{name}_high"] = (v * scale for v in mean_and_t_interval(values))
        blocks = runs.get("prefix_cache.transfer.blocks")
        skipped = runs.get("prefix_cache.transfer.not_copied")
        row["not_copied"] = (
            100.0 * skipped.sum() / blocks.sum() if blocks is not None and skipped is not None and blocks.sum() else float("nan")
        )
        rows.append(row)
    table = pd.DataFrame(rows)
    order = {name: dict(zip(values, range(len(values)))) for name, values in (
        ("part", list(dict.fromkeys(table["part"]))), ("serving", list(dict.fromkeys(table["serving"]))))}
    table = table.sort_values(["part", "rate", "serving"], key=lambda c: c.map(order[c.name]) if c.name in order else c)
    table = table.reset_index(drop=True)
    # time to first token against serving the same requests with no cache, at that rate
    reference = table[table["serving"] == NO_CACHE].set_index(["part", "rate"])
    keys = pd.MultiIndex.from_frame(table[["part", "rate"]])
    for name in ("ttft_p50", "turn_6+"):
        base = reference[name].reindex(keys).to_numpy() if len(reference) else float("nan")
        table[f"{name}_vs_no_cache"] = 100.0 * (table[name] / base - 1.0)
    return table


def _cell(row: pd.Series, name: str, digits: int) -> str:
    mean, low, high = row[name], row[f"{name}_low"], row[f"{name}_high"]
    if pd.isna(mean):
        return "—"
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _percent(value: float) -> str:
    return "—" if pd.isna(value) else f"{value:+.0f}%"


def _plain(value: float) -> str:
    return "—" if pd.isna(value) else f"{value:.1f}"


def markdown(table: pd.DataFrame) -> str:
    """The page's block (docs/prefix-cache.md): one row per rate and serving."""
    lines = [
        "| workload | rate | serving | prompt tokens found cached, % | P50 TTFT (s) | P99 TTFT (s) "
        "| mean TTFT, turn 1 (s) | turn 2 | turn 6+ | P50 TTFT vs no cache | turn 6+ vs no cache "
        "| migrations | migrated blocks found cached, % |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, row in table.iterrows():
        lines.append(
            f"| {row['part']} | {row['rate']:g} | {row['serving']} | {_cell(row, 'hit_rate', 1)} | {_cell(row, 'ttft_p50', 3)} | "
            f"{_cell(row, 'ttft_p99', 2)} | {_cell(row, 'turn_1', 3)} | {_cell(row, 'turn_2', 3)} | "
            f"{_cell(row, 'turn_6+', 3)} | {_percent(row['ttft_p50_vs_no_cache'])} | "
            f"{_percent(row['turn_6+_vs_no_cache'])} | {row['migrations']:.0f} | {_plain(row['not_copied'])} |"
        )
    seeds = sorted(set(table["seeds"]))
    lines += [
        "",
        f"Mean over {'/'.join(str(s) for s in seeds)} seeds [95% t interval; with few seeds and one overloaded "
        f"seed it can reach below zero]; rate: new conversations per second (conversations) or "
        f"requests per second; vs no cache: the mean against `{NO_CACHE}`'s at that rate; "
        "migrations: committed per run, mean; migrated blocks found cached: pooled over seeds.",
    ]
    return "\n".join(lines)


def plot(table: pd.DataFrame, path: Path) -> None:
    """A row per workload: hit rate and P99 TTFT against the rate, a line per serving; then
    the mean TTFT by turn at the middle rate (conversations) or the share of migrated blocks
    found cached against the rate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = list(dict.fromkeys(table["part"]))
    fig, axes = plt.subplots(len(parts), 3, figsize=(16, 4.5 * len(parts)), squeeze=False)
    for row_axes, part in zip(axes, parts):
        rows_of_part = table[table["part"] == part]
        rates = sorted(rows_of_part["rate"].unique())
        middle = rates[len(rates) // 2]
        conversations = rows_of_part["turn_1"].notna().any()
        for j, (serving, rows) in enumerate(rows_of_part.groupby("serving", sort=False)):
            rows = rows.sort_values("rate")
            for ax, name in ((row_axes[0], "hit_rate"), (row_axes[1], "ttft_p99")):
                low = (rows[name] - rows[f"{name}_low"]).clip(upper=rows[name] * 0.999)  # log axes: above 0
                ax.errorbar(rows["rate"], rows[name], yerr=[low, rows[f"{name}_high"] - rows[name]],
                            color=f"C{j}", marker="o", capsize=3, label=serving)
            if conversations:
                at = rows[rows["rate"] == middle].iloc[0]
                row_axes[2].plot(range(len(TURNS)), [at[f"turn_{turn}"] for turn in TURNS], color=f"C{j}", marker="o", label=serving)
            else:
                row_axes[2].plot(rows["rate"], rows["not_copied"], color=f"C{j}", marker="o", label=serving)
        unit = "new conversations per second" if conversations else "requests per second"
        row_axes[0].set_ylabel(f"{part}: prompt tokens found cached, %")
        row_axes[1].set_ylabel("P99 time to first token, s")
        row_axes[1].set_yscale("log")
        for ax in row_axes[:2]:
            ax.set_xlabel(f"{unit} (16 A10s)")
        if conversations:
            row_axes[2].set_xticks(range(len(TURNS)), TURNS)
            row_axes[2].set_xlabel("turn")
            row_axes[2].set_ylabel(f"mean time to first token, s ({middle:g} conversations/s)")
            row_axes[2].set_yscale("log")
        else:
            row_axes[2].set_xlabel(f"{unit} (16 A10s)")
            row_axes[2].set_ylabel("migrated blocks found cached, % (not copied)")
        row_axes[2].legend(fontsize="x-small")
    fig.suptitle("vLLM's prefix cache on 16 A10s: cache-aware against cache-blind serving (mean over seeds, 95% t)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="llumsim sweep experiments/grids/sessions.yaml's results")
    parser.add_argument("--readme", type=Path, help=f"also rewrite the text between {README_BEGIN} and {README_END}")
    args = parser.parse_args(argv)

    def work() -> tuple[str, str]:
        table = study_table(read_results_index(
            args.results, "sweep.json", "llumsim sweep experiments/grids/sessions.yaml's results", (RATE, SERVING)
        ))
        plot(table, args.results / "prefix_cache.png")
        return markdown(table), f"wrote {args.results / 'prefix_cache.png'}"

    return publish("sessions", work, args.readme, (README_BEGIN, README_END))


if __name__ == "__main__":
    raise SystemExit(main())
