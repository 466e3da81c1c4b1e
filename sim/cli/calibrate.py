"""Compare the replica model with the A10 measurements (prefill, decode) and show KV capacity.

Exit status 1 when a row is outside its acceptance bound (LLaMA-7B ±10%, LLaMA-30B ±15%).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sim.hardware import known_models, load_replica_model
from sim.hardware.calibration import PAPER_KV_BLOCKS, TOLERANCE, compare, load_measurements


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document instead")
    parser.add_argument("--plot", type=Path, metavar="FILE", help="write predicted vs measured (PNG)")
    parser.add_argument("--max-batched-tokens", type=int, default=12800, help="activation reserve")


def calibration(max_batched_tokens: int = 12800) -> dict:
    """Every prefill/decode row, predicted vs measured, and each model's KV capacity."""
    models = {
        name: load_replica_model(name, max_batched_tokens=max_batched_tokens) for name in known_models()
    }
    rows = compare(
        load_measurements(), lambda model, batch: models[model].batch_time(*batch) * 1e3
    )
    capacity = [
        {
            "model": m.model,
            "device": m.device,
            "tensor_parallel": m.tensor_parallel,
            "max_batched_tokens": max_batched_tokens,
            "kv_capacity_blocks": m.kv_capacity_blocks,
            "block_size": m.block_size,
            "kv_capacity_tokens": m.kv_capacity_blocks * m.block_size,
            "kv_bytes_per_token": m.kv_bytes_per_token,
            "paper_kv_blocks": PAPER_KV_BLOCKS.get(m.model),
        }
        for m in models.values()
    ]
    return {"rows": rows, "capacity": capacity}


def within_bounds(row: dict) -> bool:
    return abs(row["rel_error"]) <= TOLERANCE[row["model"]]


def format_table(result: dict) -> str:
    lines = [
        "Replica model vs A10 measurements (Llumnix artifact, Figure 10)",
        f"{'model':<10} {'quantity':<8} {'seq_len':>7} {'measured ms':>12} {'predicted ms':>13} "
        f"{'error':>7}  bound",
    ]
    for row in result["rows"]:
        mark = "" if within_bounds(row) else "  OUTSIDE"
        lines.append(
            f"{row['model']:<10} {row['quantity']:<8} {row['seq_len']:>7} "
            f"{row['measured_ms']:>12.1f} {row['predicted_ms']:>13.1f} "
            f"{100 * row['rel_error']:>+6.1f}%  ±{100 * TOLERANCE[row['model']]:.0f}%{mark}"
        )
    lines.append("")
    lines.append("KV capacity per instance (GPU memory utilisation 0.9, vLLM-style profile run)")
    for c in result["capacity"]:
        paper = f"; paper: {c['paper_kv_blocks']} blocks" if c["paper_kv_blocks"] else ""
        lines.append(
            f"{c['model']:<10} {c['tensor_parallel']}×{c['device']}: {c['kv_capacity_blocks']} blocks "
            f"of {c['block_size']} = {c['kv_capacity_tokens']:,} tokens at "
            f"{c['max_batched_tokens']:,} batched tokens{paper}"
        )
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    """One panel per (model, quantity): measured points, predicted line, over sequence length."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys((r["model"], r["quantity"]) for r in result["rows"]))
    fig, axes = plt.subplots(2, len(panels) // 2, figsize=(10, 7), squeeze=False)
    for ax, (model, quantity) in zip(axes.T.flat, panels):
        rows = [r for r in result["rows"] if (r["model"], r["quantity"]) == (model, quantity)]
        lengths = [r["seq_len"] for r in rows]
        ax.plot(lengths, [r["measured_ms"] for r in rows], "o", label="measured (A10)")
        ax.plot(lengths, [r["predicted_ms"] for r in rows], "-x", label="predicted")
        ax.set_xscale("log", base=2)
        if quantity == "prefill":
            ax.set_yscale("log")
        ax.set_title(f"{model} {quantity} (±{100 * TOLERANCE[model]:.0f}%)")
        ax.set_xlabel("sequence length (tokens)")
        ax.set_ylabel("ms")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    result = calibration(args.max_batched_tokens)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(format_table(result))
    if args.plot:
        plot(result, args.plot)
    return 0 if all(within_bounds(row) for row in result["rows"]) else 1
