"""The picture of the A10 calibration report (``llumsim calibrate --plot``): predicted against
measured for every table row, then LLaMA-7B's decode step over batch size and batched
tokens, the light batches and the heavy-batch errors. Apart from the report, which computes
without matplotlib."""

from __future__ import annotations

from pathlib import Path

from sim.hardware import ReplicaModel, load_replica_model
from sim.hardware.calibration import (
    BATCH_TOKENS,
    DECODE_SLOWDOWN,
    HEAVY_CONTEXTS,
    HEAVY_TOLERANCE,
    NEAR_IDEAL_TOKENS,
    TOLERANCE,
    decode_batch,
)

PLOT_CONTEXTS = (256, 1024, 4096)  # tokens per request in the batch-size panel
PLOT_BATCH_SIZES = range(1, 257)


def plot(result: dict, path: Path) -> None:
    """Two rows of panels, one per (model, quantity): measured points and predicted line over
    sequence length; then LLaMA-7B's decode step against batch size and against total batched
    tokens, with the 1,600-token point, Figure 4's 2.6× and the table's ~8k-token rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys((r["model"], r["quantity"]) for r in result["rows"]))
    columns = max(len(panels) // 2, 3)  # the bottom row has three panels
    fig, axes = plt.subplots(4, columns, figsize=(5 * columns, 14), squeeze=False)
    for ax in axes[:2, len(panels) // 2 :].flat:
        ax.axis("off")
    for ax, (name, quantity) in zip(axes[:2].T.flat, panels):
        rows = [r for r in result["rows"] if (r["model"], r["quantity"]) == (name, quantity)]
        lengths = [r["seq_len"] for r in rows]
        ax.plot(lengths, [r["measured_ms"] for r in rows], "o", label="measured (A10)")
        ax.plot(lengths, [r["predicted_ms"] for r in rows], "-x", label="predicted")
        ax.set_xscale("log", base=2)
        if quantity == "prefill":
            ax.set_yscale("log")
        ax.set_title(f"{name} {quantity} (±{100 * TOLERANCE[name]:.0f}%)")
        ax.set_xlabel("sequence length (tokens)")
        ax.set_ylabel("ms")
        ax.legend()
    name = next(iter(DECODE_SLOWDOWN))
    model = load_replica_model(name, max_batched_tokens=result["capacity"][0]["max_batched_tokens"])
    decode = next(d for d in result["light_decode"] if d["model"] == name)
    table = [r for r in result["rows"] if (r["model"], r["quantity"]) == (name, "decode")]
    _plot_batch_sizes(axes[2, 0], model, decode, table)
    _plot_tokens(axes[2, 1], model, decode, table)
    _plot_light_batches(axes[2, 2], result)
    _plot_heavy_errors(axes[3, 0], axes[3, 1], axes[3, 2], result)
    for ax in [*axes[2, 3:], *axes[3, 3:]]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_batch_sizes(ax, model: ReplicaModel, decode: dict, table: list[dict]) -> None:
    """Decode step over batch size at a few contexts; dotted beyond the KV capacity."""
    capacity = decode["heaviest_tokens"]
    for context in PLOT_CONTEXTS:
        sizes = list(PLOT_BATCH_SIZES)
        times = [model.decode_time(b, context) * 1e3 for b in sizes]
        fits = [b for b in sizes if b * context <= capacity]
        (line,) = ax.plot(fits, times[: len(fits)], label=f"{context} tokens/request")
        ax.plot(sizes[len(fits) - 1 :], times[len(fits) - 1 :], ":", color=line.get_color())
    ax.plot(
        [BATCH_TOKENS // r["seq_len"] for r in table],
        [r["measured_ms"] for r in table],
        "ko",
        label="A10 table (~8k tokens)",
    )
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 2 * decode["heaviest_ms"])
    ax.set_title(f"{decode['model']} decode step vs batch size (dotted: over KV capacity)")
    ax.set_xlabel("requests in the batch")
    ax.set_ylabel("ms")
    ax.legend(fontsize="small")


def _plot_heavy_errors(weights_ax, kv_ax, prefill_ax, result: dict) -> None:
    """Model ÷ measurement of the heavy-batch rows: the weight stream against batch size
    (checked, with its ±10% band), the KV stream against batch size per context (another
    kernel: context) and the prefill against prompt length (checked against the A10 table)."""
    band = (1 - HEAVY_TOLERANCE, 1 + HEAVY_TOLERANCE)
    decode = result["heavy_decode"]
    weights = sorted({(r["batch"], r["weights_error"]) for r in decode if r["weights_error"] is not None})
    weights_ax.plot([b for b, _ in weights], [1 + e for _, e in weights], "o-", label="token operators")
    kv_ax.axhline(1.0, color="k", lw=0.8)
    for context in HEAVY_CONTEXTS:
        rows = [r for r in decode if r["context"] == context and r["kv_ratio"] is not None]
        kv_ax.plot([r["batch"] for r in rows], [r["kv_ratio"] for r in rows], "o-", label=f"{context} tokens/request")
    prefill = [r for r in result["heavy_prefill"] if r["rel_error"] is not None]
    prefill_ax.plot([r["tokens"] for r in prefill], [1 + r["rel_error"] for r in prefill], "o-", label="one prompt")
    titles = (
        (weights_ax, "weights: model ÷ A40 × 696/600 (checked)", "requests in the batch"),
        (kv_ax, "KV: model ÷ A40 FlashAttention × 696/600 (context)", "requests in the batch"),
        (prefill_ax, "prefill: model ÷ A10 table (checked)", "prompt tokens"),
    )
    for ax, title, xlabel in titles:
        if ax is not kv_ax:
            ax.axhspan(*band, color="green", alpha=0.15, label=f"±{100 * HEAVY_TOLERANCE:.0f}%")
            ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_title(f"LLaMA-7B heavy {title}", fontsize="medium")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("model ÷ measured")
        ax.legend(fontsize="small")


def _plot_light_batches(ax, result: dict) -> None:
    """Light batches: the modelled step (256 tokens/request) with the band the A40-measured
    weight stream opens above it, and every published light-batch figure on an A10."""
    rows = result["linear_layers"]
    sizes = [r["num_tokens"] for r in rows]
    ax.plot(sizes, [r["step_ms"] for r in rows], "-", label="model: decode step")
    ax.fill_between(
        sizes,
        [r["step_ms"] for r in rows],
        [r["step_with_measured_weights_ms"] for r in rows],
        alpha=0.3,
        label="with the A40-measured weight stream",
    )
    for r in result["references"]:
        style = "ko" if r["role"] == "check" else "k^"
        ax.plot([r["batch"]], [r["on_a10_ms"]], style, mfc="none" if r["role"] != "check" else "k")
    ax.plot([], [], "ko", label="checks (transferred to an A10)")
    ax.plot([], [], "k^", mfc="none", label="context (other engines, mixed prefills)")
    ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)
    ax.set_title("LLaMA-7B light batches: model and published figures")
    ax.set_xlabel("requests in the batch")
    ax.set_ylabel("ms per step (per token)")
    ax.legend(fontsize="small")


def _plot_tokens(ax, model: ReplicaModel, decode: dict, table: list[dict]) -> None:
    """Decode step over total batched tokens (requests of ≤256 tokens, and one request)."""
    tokens = list(range(256, decode["heaviest_tokens"] + 1, 64))
    ax.plot(tokens, [model.batch_time(*decode_batch(t)) * 1e3 for t in tokens], label="requests of ≤256 tokens")
    ax.plot(tokens, [model.decode_time(1, t) * 1e3 for t in tokens], "--", label="one request")
    ax.plot([BATCH_TOKENS] * len(table), [r["measured_ms"] for r in table], "ko", label="A10 table (~8k tokens)")
    one = decode["one_request_ms"]
    ax.axvline(NEAR_IDEAL_TOKENS, color="grey", lw=0.8)
    ax.annotate(
        f"{NEAR_IDEAL_TOKENS:,} tokens: {decode['at_1600_tokens_ratio']:.2f}×",
        (NEAR_IDEAL_TOKENS, decode["at_1600_tokens_ms"]),
        xytext=(8, -30),
        textcoords="offset points",
        fontsize="small",
    )
    if target := decode["target_ratio"]:
        ax.axhline(one * target, color="red", lw=0.8, ls="--", label=f"{target:g}× one request")
    heaviest = f"heaviest: {decode['ratio']:.2f}×"
    ax.plot([decode["heaviest_tokens"]], [decode["heaviest_ms"]], "r*", ms=10, label=heaviest)
    ax.axhline(decode["bandwidth_floor_ms"], color="k", lw=0.8, ls=":", label="weights ÷ 600 GB/s")
    ax.set_title(f"{decode['model']} decode step vs total batched tokens")
    ax.set_xlabel("tokens in the batch (KV, all requests)")
    ax.set_ylabel("ms")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")
