"""The prefill/decode disaggregation study (issue 34): the ratio question and the
interference that disaggregation removes, as Markdown and a figure.

    python -m sim.studies.pd results/pd_ratio results/pd_interference [--readme docs/pd.md]

``results/pd_ratio`` is ``llumsim capacity --grid experiments/grids/pd.yaml``. For each
prompt length and contract it gives capacity per GPU (the highest rate meeting the contract,
over 16 A10s; the mean over seeds with its Student-t 95% interval), the paired ratio to
colocated INFaaS++, and the best prefill:decode split. ``results/pd_interference`` is
``llumsim sweep experiments/grids/pd_interference.yaml``. From it come P99 time per output
token, the decode time spent waiting behind prefill iterations per output token, and P99
time to first token at equal load, for colocated and disaggregated serving. The study
writes ``pd_ratio.png`` into the first folder and, with ``--readme``, the text between the
page's pd markers (docs/pd.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from sim.presentation.study_cli import publish, read_results_index
from sim.sweep.stats import mean_and_t_interval

README_BEGIN, README_END = "<!-- pd:begin -->", "<!-- pd:end -->"
PROMPTS, OUTPUTS = "workload.shape.input.match", "workload.shape.output.match"
RATE = "workload.arrival.rate"
SPLIT_PREFIX = "P"  # layouts named P<prefill>:D<decode>[-scheme]; the rest are colocated


def _match(value: object) -> dict:
    return json.loads(value) if isinstance(value, str) else value


def shape_label(prompts: object, outputs: object) -> str:
    """A request shape of the grid (each length's mean and P95) as text."""
    prompt, output = _match(prompts), _match(outputs)
    return f"prompts {prompt['mean']:,}/{prompt['p95']:,}, outputs {output['mean']:,}/{output['p95']:,}"


def ratio_table(index: pd.DataFrame) -> pd.DataFrame:
    """One row per request shape, contract and layout: capacity per GPU with its interval,
    the layout's split (``P4:D12``; empty when colocated) and hand-off scheme, and whether
    it is its scheme's best split for that shape and contract."""
    table = index.copy()
    table["prompts"] = [shape_label(p, o) for p, o in zip(table[PROMPTS], table[OUTPUTS])]
    parts = table["layout"].str.split("/", n=1)
    table["split"] = [part[0] if len(part) == 2 else "" for part in parts]
    table["scheme"] = [part[1] if len(part) == 2 else part[0] for part in parts]
    table["best_split"] = False
    splits = table[table["split"] != ""]
    for _, rows in splits.groupby(["prompts", "contract", "scheme"], sort=False):
        if rows["rate_per_gpu"].notna().any():  # none: no split meets the contract at all
            table.loc[rows["rate_per_gpu"].idxmax(), "best_split"] = True
    return table


def interference_table(index: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds and interval of P99 TPOT, the decode stall per output token (ms) and
    P99 TTFT, per request shape, rate and layout."""
    rows = []
    for (prompts, outputs, rate, layout), runs in index.groupby([PROMPTS, OUTPUTS, RATE, "layout"], sort=False):
        row = {"requests": shape_label(prompts, outputs), "rate": rate, "layout": layout, "seeds": len(runs)}
        for name, column in (
            ("tpot_p99", "latency.decode_latency_per_token.p99"),
            ("stall_ms", "decode_stall.per_output_token"),
            ("ttft_p99", "latency.prefill_latency.p99"),
        ):
            scale = 1e3 if name == "stall_ms" else 1.0
            row[name], row[f"{name}_low"], row[f"{name}_high"] = (
                value * scale for value in mean_and_t_interval(runs[column].tolist())
            )
        rows.append(row)
    return pd.DataFrame(rows)


def _interval(mean: float, low: float, high: float, digits: int = 3) -> str:
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _capacity(row: pd.Series) -> str:
    if pd.isna(row["rate_per_gpu"]):
        return "none meets it"
    text = _interval(row["rate_per_gpu"], row["rate_per_gpu.ci_low"], row["rate_per_gpu.ci_high"])
    return f"**{text}**" if row["best_split"] else text


def markdown(ratios: pd.DataFrame, interference: pd.DataFrame, contracts: dict[str, list[str]]) -> str:
    """The page's block: capacity per GPU by split for each hand-off scheme beside
    colocated serving (each scheme's best split in bold), then the interference table."""
    splits = list(dict.fromkeys(ratios.loc[ratios["split"] != "", "split"]))
    lines = [
        "| requests (mean/P95 tokens) | contract | serving | " + " | ".join(splits) + " | colocated |",
        "|---|---|---|" + "---|" * (len(splits) + 1),
    ]
    for (prompts, contract), rows in ratios.groupby(["prompts", "contract"], sort=False):
        for scheme, group in rows.groupby("scheme", sort=False):
            by_split = {row["split"]: _capacity(row) for _, row in group.iterrows()}
            cells = [by_split.get(split, "") for split in splits] + [by_split.get("", "")]
            label = f"PD, {scheme} hand-off" if "" not in by_split else scheme
            lines.append(f"| {prompts} | {contract} | {label} | " + " | ".join(cells) + " |")
    legend = "; ".join(f"**{name}**: " + " & ".join(f"`{slo}`" for slo in slos) for name, slos in contracts.items())
    lines += [
        "",
        f"Capacity per GPU, req/s (mean over seeds [95% t]). Contracts: {legend}.",
        "",
        "| requests (mean/P95 tokens) | rate (req/s) | layout | P99 time per output token (s) [95% t] "
        "| decode stalled behind prefills (ms per output token) [95% t] | P99 time to first token (s) [95% t] |",
        "|---|---|---|---|---|---|",
    ]
    for row in interference.itertuples(index=False):
        lines.append(
            f"| {row.requests} | {row.rate:g} | {row.layout} | {_interval(row.tpot_p99, row.tpot_p99_low, row.tpot_p99_high)} | "
            f"{_interval(row.stall_ms, row.stall_ms_low, row.stall_ms_high, 2)} | "
            f"{_interval(row.ttft_p99, row.ttft_p99_low, row.ttft_p99_high, 2)} |"
        )
    return "\n".join(lines)


def plot(ratios: pd.DataFrame, path: Path) -> None:
    """Capacity per GPU against the split, a line per hand-off scheme and contract, the
    colocated layouts as horizontal lines; a panel per request shape."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = list(dict.fromkeys(ratios["prompts"]))
    contracts = list(dict.fromkeys(ratios["contract"]))
    splits = list(dict.fromkeys(ratios.loc[ratios["split"] != "", "split"]))
    fig, axes = plt.subplots(1, len(shapes), figsize=(5.5 * len(shapes), 4.5), squeeze=False)
    for ax, shape in zip(axes[0], shapes):
        rows = ratios[ratios["prompts"] == shape]
        for k, contract in enumerate(contracts):
            style = ("-", "--", ":")[k % 3]
            cell = rows[rows["contract"] == contract]
            for j, (scheme, group) in enumerate(cell.groupby("scheme", sort=False)):
                group = group.set_index("split")
                if "" in group.index:  # colocated: one value for every split
                    ax.axhline(group.loc["", "rate_per_gpu"], color=f"C{j}", linestyle=style, linewidth=0.8,
                               label=f"{scheme}, {contract}")
                    continue
                group = group.reindex(splits)
                errors = [group["rate_per_gpu"] - group["rate_per_gpu.ci_low"], group["rate_per_gpu.ci_high"] - group["rate_per_gpu"]]
                ax.errorbar(range(len(splits)), group["rate_per_gpu"], yerr=errors, marker="o", capsize=3,
                            color=f"C{j}", linestyle=style, label=f"PD {scheme}, {contract}")
        ax.set_xticks(range(len(splits)), splits)
        ax.set_xlabel("prefill : decode instances (16 A10s)")
        ax.set_title(shape, fontsize="medium")
        ax.set_ylabel("capacity, req/s per GPU (95% t)")
    axes[0][-1].legend(fontsize="x-small")
    fig.suptitle("Prefill/decode splits against colocated serving (a missing point: no rate meets the contract)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ratio", type=Path, help="llumsim capacity --grid experiments/grids/pd.yaml's results")
    parser.add_argument("interference", type=Path, help="llumsim sweep experiments/grids/pd_interference.yaml's results")
    parser.add_argument("--readme", type=Path, help=f"also rewrite the text between {README_BEGIN} and {README_END}")
    args = parser.parse_args(argv)

    def work() -> tuple[str, str]:
        ratios = ratio_table(read_results_index(
            args.ratio, "capacity_grid.json", "llumsim capacity --grid experiments/grids/pd.yaml's results",
            (PROMPTS, OUTPUTS, "layout", "contract", "rate_per_gpu"),
        ))
        interference = interference_table(read_results_index(
            args.interference, "sweep.json", "llumsim sweep experiments/grids/pd_interference.yaml's results",
            (PROMPTS, OUTPUTS, RATE, "layout"),
        ))
        contracts = json.loads((args.ratio / "capacity_grid.json").read_text())["contracts"]
        plot(ratios, args.ratio / "pd_ratio.png")
        return markdown(ratios, interference, contracts), f"wrote {args.ratio / 'pd_ratio.png'}"

    return publish("pd", work, args.readme, (README_BEGIN, README_END))


if __name__ == "__main__":
    raise SystemExit(main())
