"""Print the statistics tables of traces/PROVENANCE.md from the shipped files and presets.

Run after rebuilding a trace or changing a shaping preset and paste the rows into
PROVENANCE.md; the test suite checks that the tables there still match
(tests/test_workload_shipped.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sim.config.workload_schema import ShapeConfig, WorkloadConfig
from sim.workload import PRESETS, build_workload, read_trace, summarise

TRACES_DIR = Path(__file__).resolve().parent
SHIPPED = (
    "sharegpt/sharegpt_v3_first_turn.csv",
    "azure/azure_conv_2023.csv",
    "azure/azure_code_2023.csv",
    "burstgpt_shaped/burstgpt_shaped_gpt4_conv.csv",
    "stress/stress_ramp.csv",
    "mooncake/mooncake_conversation.csv",
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


PRESET_DRAWS = (("whole table", None), ("10,000 requests, seed 0", 10_000))


def preset_rows() -> list[str]:
    """What each shaping preset gives the default trace: the whole table, and a 10k-request run."""
    lines = [
        "| preset, requests | n | input mean | input P50 | input P95 | input max "
        "| output mean | output P50 | output P95 | output max |",
        "|---|" + "---:|" * 9,
    ]
    for name in sorted(PRESETS):
        for label, n in PRESET_DRAWS:
            cfg = WorkloadConfig(num_requests=n, shape=ShapeConfig(preset=name))
            workload = build_workload(cfg, seed=0)
            cells = [f"{len(workload)}"]
            for values in (workload.prompt_tokens, workload.output_tokens):
                p50, p95 = np.percentile(values, [50, 95])
                cells += [f"{values.mean():.1f}", f"{p50:.1f}", f"{p95:.1f}", f"{values.max()}"]
            lines.append(f"| {name}, {label} | " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    print("\n".join(table_rows()))
    print()
    print("\n".join(preset_rows()))
