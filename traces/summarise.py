"""Print the statistics table of traces/PROVENANCE.md from the shipped files.

Run after rebuilding a trace and paste the rows into PROVENANCE.md; the test suite checks
that the table there still matches the files (tests/test_workload_shipped.py).
"""

from __future__ import annotations

from pathlib import Path

from sim.workload import read_trace, summarise

TRACES_DIR = Path(__file__).resolve().parent
SHIPPED = (
    "sharegpt/sharegpt_v3_first_turn.csv",
    "azure/azure_conv_2023.csv",
    "azure/azure_code_2023.csv",
    "burstgpt_shaped/burstgpt_shaped_gpt4_conv.csv",
    "stress/stress_ramp.csv",
)
COLUMNS = (
    ("rows", "rows", "{:.0f}"),
    ("input_mean", "input mean", "{:.1f}"),
    ("input_p50", "input P50", "{:.1f}"),
    ("input_p95", "input P95", "{:.1f}"),
    ("output_mean", "output mean", "{:.1f}"),
    ("output_p50", "output P50", "{:.1f}"),
    ("output_p95", "output P95", "{:.1f}"),
    ("duration_s", "duration (s)", "{:.1f}"),
    ("rate", "rate (req/s)", "{:.3f}"),
    ("gap_cv", "gap CV", "{:.3f}"),
)


def table_rows() -> list[str]:
    """The markdown table: a header, a rule and one row per shipped trace."""
    lines = [
        "| file | " + " | ".join(label for _, label, _ in COLUMNS) + " |",
        "|---|" + "---:|" * len(COLUMNS),
    ]
    for name in SHIPPED:
        stats = summarise(read_trace(TRACES_DIR / name))
        cells = [fmt.format(stats[key]) if key in stats else "—" for key, _, fmt in COLUMNS]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    print("\n".join(table_rows()))
