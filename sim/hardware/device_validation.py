"""A GPU other than the A10 against measurements of its own: ``llumsim calibrate --device``.

The A10's layouts are fitted to the artifact's A10 table; another GPU's profiles are Vidur's
measured token operators with the fitted kernels' attention (``operator_profiles``), so what
checks them is a published measurement on that GPU (``device_references.csv``), compared with
the model under the transfer its scope states, within ±15%. Vidur's own attention
measurements of the GPU, where some were read (``<device>_{decode,prefill}_attention.csv``),
are shown beside the modelled attention: FlashAttention's kernels, not the artifact's, so
context.
"""

from __future__ import annotations

import csv
import json

from sim.hardware import load_replica_model
from sim.hardware import overheads
from sim.hardware.calibration import (
    DEVICE_REFERENCE_TOLERANCE,
    causal_attention_flops,
    generation_gpu_with_sampler_ms,
    load_device_references,
)
from sim.hardware.catalog import DATA_DIR, find_layout

SCOPES = {"generation_gpu_with_sampler"}


def _attention_rows(device: str, kind: str) -> list[dict]:
    """Vidur's attention measurements of ``device`` (``kind``: decode or prefill), if read."""
    path = DATA_DIR / f"{device}_{kind}_attention.csv"
    if not path.is_file():
        return []
    with open(path, newline="") as handle:
        return [row for row in csv.DictReader(handle) if row["device"] == device]


def validation(device: str, model: str = "llama-7b") -> dict:
    """Every published row of ``device`` beside the model, and the attention context."""
    # (imported here: the fit's modules pull in scipy, which the A10 table does not need)
    from sim.hardware.build_profiles import LayoutModel
    from sim.hardware.catalog import FIT_JSON
    from sim.hardware.perf_model import Constants, PerfModel

    layout = find_layout(model, device, None)
    replica = load_replica_model(model, device)
    sampler_base, sampler_slope = overheads.phase_line(layout.device_sku.cpu_overheads, "sampler_e2e_ms")
    rows = []
    for ref in load_device_references():
        if ref.device != device:
            continue
        if ref.scope not in SCOPES:
            raise ValueError(f"device_references.csv: unknown scope {ref.scope!r} (known: {', '.join(sorted(SCOPES))})")
        predicted = generation_gpu_with_sampler_ms(
            ref, replica.batch_time, replica.overhead_time, lambda n: (sampler_base + sampler_slope * n) * 1e-3
        )
        rows.append({
            **ref.__dict__,
            "predicted_ms": predicted,
            "rel_error": predicted / ref.measured_ms - 1,
            # what each iteration (one prefill, output - 1 decodes) would have to add for the
            # model to meet the measurement: the measured engine's own per-step work, if the
            # GPU time is right (the same on two GPUs says it is host work, not the GPU's)
            "unexplained_ms_per_iteration": (ref.measured_ms - predicted) / ref.output_tokens,
        })
    constants = Constants(**json.loads(FIT_JSON.read_text())["constants"])
    parts = LayoutModel.of(layout)
    perf = PerfModel(parts.device, parts.shape, constants)
    decode = [
        {
            "batch": int(r["batch"]),
            "kv_tokens": int(r["kv_tokens"]),
            "measured_ms": float(r["measured_ms_per_layer"]),
            "model_ms": float(perf.attn_decode(int(r["batch"]), int(r["kv_tokens"]))),
        }
        for r in _attention_rows(device, "decode")
    ]
    prefill = []
    for r in _attention_rows(device, "prefill"):
        tokens = int(r["tokens"])
        measured = float(r["measured_ms_per_layer"])
        flops = causal_attention_flops(tokens, parts.shape.q_heads_per_worker, parts.shape.head_dim)
        prefill.append(
            {
                "tokens": tokens,
                "measured_ms": measured,
                "model_ms": float(perf.attn_prefill(tokens, tokens)),
                "measured_peak_fraction": flops / (measured * 1e-3) / parts.device.peak_flops,
            }
        )
    return {
        "device": device,
        "model": model,
        "kv_capacity_blocks": replica.kv_capacity_blocks,
        "block_size": replica.block_size,
        "references": rows,
        "decode_attention": decode,
        "prefill_attention": prefill,
    }


def within_bound(row: dict) -> bool:
    return row["role"] != "check" or abs(row["rel_error"]) <= DEVICE_REFERENCE_TOLERANCE


def passes(result: dict) -> bool:
    """Every check row of the device within ±15%; a device with no check row does not pass:
    an unvalidated GPU is not a validated one."""
    checks = [r for r in result["references"] if r["role"] == "check"]
    return bool(checks) and all(map(within_bound, checks))


def format_validation(result: dict) -> str:
    lines = [
        f"{result['model']} on {result['device']}: KV capacity {result['kv_capacity_blocks']:,} blocks of "
        f"{result['block_size']} = {result['kv_capacity_blocks'] * result['block_size']:,} tokens",
        "",
        f"Published measurements on the device (checks ±{100 * DEVICE_REFERENCE_TOLERANCE:.0f}%; "
        "generation_gpu_with_sampler: the model's GPU time and sampler phase, without vLLM's other host work)",
    ]
    if not result["references"]:
        lines.append("  none: this device is not validated (exit 1)")
    for r in result["references"]:
        mark = "" if within_bound(r) else "  OUTSIDE"
        lines.append(
            f"{r['role']:<7} {r['engine']} on {r['gpu']}, batch {r['batch']}, {r['prompt_tokens']} in / "
            f"{r['output_tokens']} out: measured {r['measured_ms']:.1f} ms, model {r['predicted_ms']:.1f} ms "
            f"({100 * r['rel_error']:+.1f}%; {r['unexplained_ms_per_iteration']:+.2f} ms per iteration unexplained){mark}"
        )
    if result["decode_attention"]:
        lines += ["", "Decode attention per layer beside Vidur's FlashAttention on the device (another kernel: context)"]
        for r in result["decode_attention"]:
            lines.append(
                f"  batch {r['batch']:>3} × {r['kv_tokens']:>4} tokens: model {r['model_ms']:.3f} ms, "
                f"FlashAttention {r['measured_ms']:.3f} ms (×{r['model_ms'] / r['measured_ms']:.2f})"
            )
    if result["prefill_attention"]:
        lines += ["", "Prefill attention per layer beside Vidur's FlashAttention on the device (context)"]
        for r in result["prefill_attention"]:
            lines.append(
                f"  {r['tokens']:>4} tokens: model {r['model_ms']:.3f} ms, FlashAttention {r['measured_ms']:.3f} ms "
                f"({100 * r['measured_peak_fraction']:.0f}% of the FP16 peak)"
            )
    return "\n".join(lines)
