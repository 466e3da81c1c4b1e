"""The A10 calibration report behind ``llumsim calibrate``: the replica model against the A10
measurements (prefill, decode), KV capacity, the light-batch decode step (one request, the
heaviest batch, their ratio) and the heavy-batch decode steps and prefills beside what has
been measured of them; each row's bound, the verdict over all of them and the text.

Kept apart from the command so tests and other callers read the rows and verdicts without
going through argument parsing, as ``device_validation`` is for the other GPUs.

``passes`` is false when a row is outside its acceptance bound (LLaMA-7B ±10%, LLaMA-30B
±15%), the LLaMA-7B heaviest/one-request decode ratio is more than 10% from the paper's 2.6×,
a light-batch check is more than 10% off, a heavy-batch check is more than 10% from its
transferred measurement, or a measured detokenizer row is more than 10% from the serving
engine's charge for it (``detokenizer``). The KV stream's rows are checks only where Figure 4
does not refute the FlashAttention-to-PagedAttention transfer (``kv_kernel_finding``).
"""

from __future__ import annotations

import json

from sim.hardware import ReplicaModel, detokenizer, known_models, load_replica_model
from sim.hardware.calibration import (
    A10_BANDWIDTH_GB_PER_S,
    A10_FP16_TFLOPS,
    DECODE_SLOWDOWN_BOUND,
    FIGURE_10_PER_REQUEST_MS,
    HEAVY_CONTEXTS,
    HEAVY_DECODE_BATCHES,
    HEAVY_PREFILL_TOKENS,
    HEAVY_TOLERANCE,
    KV_CAPACITY_TOLERANCE,
    LIGHT_DECODE_TOLERANCE,
    NEAR_IDEAL_TOKENS,
    PAGED_OVER_FLASH_DECODE,
    PAPER_KV_BLOCKS,
    REQUEST_TOKENS,
    TOLERANCE,
    bandwidth_floor_ms,
    causal_attention_flops,
    compare,
    compare_capacity,
    decode_range,
    default_kv_capacity_tokens,
    figure_4_with_kv,
    interpolated_in_batch,
    kernel_ratio_for_ratio,
    load_decode_attention_measurements,
    load_light_decode_references,
    load_prefill_attention_measurements,
    load_linear_layer_measurements,
    load_measurements,
    predicted_per_token_ms,
    ratio_within_bound,
    table_attention_bound_ms,
)
from sim.hardware.catalog import DEFAULT_DEVICE, LAYOUTS, find_layout


def _ms(model: ReplicaModel):
    return lambda batch: model.batch_time(*batch) * 1e3


def calibration(max_batched_tokens: int = 12800) -> dict:
    """Every prefill/decode row, predicted vs measured (on the engine each was measured on),
    each model's KV capacity against the measured one, its light-batch decode range
    (``calibration.decode_range``) and the light-batch references."""
    models = {
        name: load_replica_model(name, max_batched_tokens=max_batched_tokens)
        for name in known_models(DEFAULT_DEVICE)
    }
    bench = {
        name: load_replica_model(
            name,
            max_batched_tokens=max_batched_tokens,
            overhead_per_request=FIGURE_10_PER_REQUEST_MS * 1e-3,
        )
        for name in known_models(DEFAULT_DEVICE)
    }
    rows = compare(
        load_measurements(), lambda model, batch: bench[model].batch_time(*batch) * 1e3
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
    light_decode = [
        {
            **decode_range(
                m.model,
                m.kv_capacity_blocks * m.block_size,
                bandwidth_floor_ms(find_layout(m.model, m.device, m.tensor_parallel)),
                _ms(m),
            ),
            "one_request_overhead_ms": m.overhead_time(1) * 1e3,
        }
        for m in models.values()
    ]
    return {
        "rows": rows,
        "capacity": capacity,
        "measured_capacity": compare_capacity({m.model: m.layout for m in models.values()}),
        "light_decode": light_decode,
        "references": light_decode_references(models["llama-7b"]),
        "linear_layers": linear_layer_rows(),
        "heavy_decode": heavy_decode_rows(models["llama-7b"]),
        "kv_kernel": kv_kernel_finding(models["llama-7b"], light_decode),
        "heavy_prefill": heavy_prefill_rows(bench["llama-7b"], rows),
        "prefill_attention": prefill_attention_rows(bench["llama-7b"], rows),
        "detokenizer": detokenizer_report(models["llama-7b"]),
    }


def detokenizer_report(model: ReplicaModel) -> dict:
    """The measured detokenizer rows beside what the serving engine's replica model charges
    per held output token, where and how they were measured, and the slow path's cost."""
    line = detokenizer.Line(detokenizer.LINE.per_sequence_ms, model.overhead_per_output_token * 1e3)
    return {
        "per_sequence_ms": line.per_sequence_ms,
        "per_held_token_ms": line.per_held_token_ms,
        "slow_path_per_held_token_ms": detokenizer.other_path_line().per_held_token_ms,
        "measured_on": detokenizer.provenance(),
        "rows": detokenizer.rows(line=line),
    }


def light_decode_references(model: ReplicaModel) -> list[dict]:
    """Each published light-batch figure beside the model's figure for the same protocol."""
    rows = []
    for ref in load_light_decode_references():
        predicted = predicted_per_token_ms(
            ref, model.prefill_time, lambda context: model.decode_time(1, context), model.overhead_time(1)
        )
        rows.append(
            {
                "role": ref.role,
                "engine": ref.engine,
                "gpu": ref.gpu,
                "batch": ref.batch,
                "scope": ref.scope,
                "measured_ms": ref.measured_ms,
                "transfer": ref.transfer,
                "on_a10_ms": ref.on_a10_ms,
                "predicted_ms": predicted,
                "rel_error": None if predicted is None else predicted / ref.on_a10_ms - 1,
                "source": ref.source,
            }
        )
    return rows


def linear_layer_rows() -> list[dict]:
    """The A40 token-operator rows (a fitting input of the profiles) against the fitted model,
    with what the model's decode step at that batch would be with the measured weight stream
    (the light-batch uncertainty where no whole-step measurement exists)."""
    from sim.hardware.build_profiles import LayoutModel, linear_layer_errors
    from sim.hardware.catalog import FIT_JSON
    from sim.hardware.perf_model import Constants

    constants = Constants(**json.loads(FIT_JSON.read_text())["constants"])
    layouts = {layout.model: LayoutModel.of(layout) for layout in LAYOUTS if layout.device == DEFAULT_DEVICE}
    errors = linear_layer_errors(layouts, constants)
    rows = []
    for m, error in zip(load_linear_layer_measurements(), errors):
        modelled = m.on_a10_ms * (1 + error)
        step = load_replica_model(m.model).decode_time(m.num_tokens, 256) * 1e3
        rows.append(
            {
                "model": m.model,
                "device": m.device,
                "num_tokens": m.num_tokens,
                "measured_ms": m.measured_ms,
                "on_a10_ms": m.on_a10_ms,
                "modelled_ms": modelled,
                "rel_error": error,
                "step_ms": step,
                "step_with_measured_weights_ms": step + m.on_a10_ms - modelled,
            }
        )
    return rows


def _performance_model(model: str):
    """The fitted constants and the performance model of ``model``'s built layout, which the
    heavy-batch rows take apart (imported here: the fit's modules pull in scipy, which the
    rest of the table does not need)."""
    from sim.hardware.build_profiles import BUILT, LayoutModel
    from sim.hardware.catalog import FIT_JSON
    from sim.hardware.perf_model import Constants

    constants = Constants(**json.loads(FIT_JSON.read_text())["constants"])
    return constants, LayoutModel.of(next(layout for layout in BUILT if layout.model == model))


def heavy_decode_rows(model: ReplicaModel) -> list[dict]:
    """LLaMA-7B's decode step at heavy batches (the serving engine's), in its parts, each part
    beside its measurement on another GA102 card transferred by memory bandwidth: the weight
    stream (the token operators: the same cuBLAS kernels on the same die, so a check, where the
    A40 rows are memory-bound: up to 128 tokens) and the KV stream (decode attention: another
    kernel than the artifact's, so context). Rows past the A10's KV capacity compare parts only."""
    constants, parts_of = _performance_model(model.model)
    capacity = default_kv_capacity_tokens(parts_of.layout)
    layers = parts_of.shape.num_layers
    weights = {m.num_tokens: m for m in load_linear_layer_measurements() if m.model == model.model}
    attention = {(m.batch, m.kv_tokens): m for m in load_decode_attention_measurements() if m.model == model.model}
    rows = []
    for context in HEAVY_CONTEXTS:
        for batch in HEAVY_DECODE_BATCHES:
            parts = parts_of.decode_parts_ms(constants, batch, context)
            measured_weights = weights.get(batch)
            measured_kv = attention.get((batch, context))
            weights_ms = measured_weights.on_a10_ms if measured_weights else None
            kv_ms = layers * measured_kv.on_a10_ms_per_layer if measured_kv else None
            rows.append(
                {
                    "batch": batch,
                    "context": context,
                    "fits_kv_capacity": batch * context <= capacity,
                    "step_ms": model.decode_time(batch, context) * 1e3,
                    **parts,
                    "measured_weights_ms": weights_ms,
                    "weights_error": None if weights_ms is None else parts["weights_ms"] / weights_ms - 1,
                    "kv_transfer": f"{measured_kv.memory_bandwidth_gb_per_s:g}/{A10_BANDWIDTH_GB_PER_S:g}" if measured_kv else None,
                    "a40_kv_ms": kv_ms,
                    "kv_ratio": None if kv_ms is None else parts["kv_ms"] / kv_ms,
                }
            )
    return rows


def kv_kernel_finding(model: ReplicaModel, light_decode: list[dict]) -> dict:
    """Figure 4 beside the transfer that would make the A40's FlashAttention decode rows a
    measurement of the artifact's kernel (× bandwidth × ``PAGED_OVER_FLASH_DECODE``): the KV
    stream of Figure 4's two steps set to those rows, everything else kept. Outside Figure 4's
    band the transfer is refuted by the artifact's own kernel on the A10, and the rows stay
    another kernel's (context); inside it, they become checks (``passes``)."""
    constants, parts_of = _performance_model(model.model)
    layers = parts_of.shape.num_layers
    flash_at = {
        m.batch: layers * m.on_a10_ms_per_layer
        for m in load_decode_attention_measurements()
        if m.model == model.model and m.kv_tokens == REQUEST_TOKENS
    }
    light = next(d for d in light_decode if d["model"] == model.model)
    requests = light["heaviest_requests"]
    modelled = tuple(parts_of.decode_parts_ms(constants, n, REQUEST_TOKENS)["kv_ms"] for n in (1, requests))
    flash = tuple(interpolated_in_batch(flash_at, n) for n in (1, requests))
    one, heaviest, target = light["one_request_ms"], light["heaviest_ms"], light["target_ratio"]
    ratio = figure_4_with_kv(one, heaviest, modelled, tuple(PAGED_OVER_FLASH_DECODE * f for f in flash))
    return {
        "requests": requests,
        "context": REQUEST_TOKENS,
        "kernel_ratio": PAGED_OVER_FLASH_DECODE,
        "flash_kv_ms": flash[1],
        "modelled_kv_ms": modelled[1],
        "modelled_kernel_ratio": modelled[1] / flash[1],
        "figure_4_ratio": ratio,
        "target_ratio": target,
        "transfer_holds": ratio_within_bound({"target_ratio": target, "ratio": ratio}),
        "implied_kernel_ratio": kernel_ratio_for_ratio(one, heaviest, modelled, flash, target),
    }


def kv_within_bound(finding: dict, row: dict) -> bool:
    """A heavy decode row's KV stream: a check against the A40 rows × the kernel ratio only
    where Figure 4 does not refute that transfer."""
    if not finding["transfer_holds"] or row["kv_ratio"] is None:
        return True
    return abs(row["kv_ratio"] / finding["kernel_ratio"] - 1) <= HEAVY_TOLERANCE


def _table_prefills(table_rows: list[dict], model: str) -> dict[int, float]:
    """The A10 table's prefill rows of ``model``: prompt length -> measured ms."""
    return {r["seq_len"]: r["measured_ms"] for r in table_rows if (r["model"], r["quantity"]) == (model, "prefill")}


def heavy_prefill_rows(bench: ReplicaModel, table_rows: list[dict]) -> list[dict]:
    """LLaMA-7B's prefill of one prompt (on the engine Figure 10 was measured on) beside the
    A10 table, where it has the length: the only prefill measured on the A10 itself."""
    measured = _table_prefills(table_rows, bench.model)
    rows = []
    for tokens in HEAVY_PREFILL_TOKENS:
        predicted = bench.prefill_time(tokens) * 1e3
        on_a10 = measured.get(tokens)
        rows.append(
            {
                "tokens": tokens,
                "predicted_ms": predicted,
                "measured_ms": on_a10,
                "rel_error": None if on_a10 is None else predicted / on_a10 - 1,
            }
        )
    return rows


def prefill_attention_rows(bench: ReplicaModel, table_rows: list[dict]) -> dict:
    """The model's prefill attention per layer beside Vidur's A40 measurement × 149.7/125, and
    what the A10 table's own growth from 4,096 to 8,192 tokens leaves for it at 4,096: the
    A40 rows are context, the table decides (its rows are checks above)."""
    constants, parts_of = _performance_model(bench.model)
    rows = []
    for m in load_prefill_attention_measurements():
        if m.model != bench.model:
            continue
        model_ms = parts_of.prefill_attention_ms(constants, m.tokens)
        rows.append(
            {
                "tokens": m.tokens,
                "transfer": f"{m.fp16_tflops:g}/{A10_FP16_TFLOPS:g}",
                "model_ms_per_layer": model_ms,
                "a40_ms_per_layer": m.on_a10_ms_per_layer,
                "ratio": model_ms / m.on_a10_ms_per_layer,
            }
        )
    table = _table_prefills(table_rows, bench.model)
    bound_tokens = max(table) // 2
    bound = table_attention_bound_ms(table, bench.overhead_time(1) * 1e3, parts_of.shape.num_layers, bound_tokens)
    a40 = next((m for m in load_prefill_attention_measurements() if (m.model, m.tokens) == (bench.model, bound_tokens)), None)
    flops = causal_attention_flops(bound_tokens, parts_of.shape.q_heads_per_worker, parts_of.shape.head_dim)
    return {
        "rows": rows,
        "table_bound_tokens": bound_tokens,
        "table_bound_ms_per_layer": bound,
        # the fraction of its card's FP16 peak each reaches at that length: the cause the A40
        # rows are not the A10's (a kernel that slow contradicts the artifact's own table)
        "table_bound_peak_fraction": flops / (bound * 1e-3) / (A10_FP16_TFLOPS * 1e12),
        "a40_peak_fraction": None if a40 is None else flops / (a40.measured_ms_per_layer * 1e-3) / (a40.fp16_tflops * 1e12),
    }


def heavy_within_bound(error: float | None) -> bool:
    return error is None or abs(error) <= HEAVY_TOLERANCE


def within_bounds(row: dict) -> bool:
    return abs(row["rel_error"]) <= TOLERANCE[row["model"]]


def reference_within_bound(row: dict) -> bool:
    return row["rel_error"] is None or abs(row["rel_error"]) <= LIGHT_DECODE_TOLERANCE


def passes(result: dict) -> bool:
    """Every row within its bound, every Figure 4 ratio within its band and every light-batch
    check within ±10% of its transferred measurement. (The KV capacities are shown beside
    the measured ones; their test holds them to their bound.)"""
    checks = [r for r in result["references"] if r["role"] == "check"]
    return (
        all(map(within_bounds, result["rows"]))
        and all(map(ratio_within_bound, result["light_decode"]))
        and all(map(reference_within_bound, checks))
        and all(heavy_within_bound(r["weights_error"]) for r in result["heavy_decode"])
        and all(kv_within_bound(result["kv_kernel"], r) for r in result["heavy_decode"])
        and all(heavy_within_bound(r["rel_error"]) for r in result["heavy_prefill"])
        and all(map(detokenizer.within_bound, result["detokenizer"]["rows"]))
    )


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
    lines.append("")
    lines.append(
        "KV capacity against the artifact's measured A10 table (LLaMA-7B, utilisation 0.9, "
        f"block 16; bound ±{100 * KV_CAPACITY_TOLERANCE:.0f}%)"
    )
    for c in result["measured_capacity"]:
        mark = "" if abs(c["rel_error"]) <= KV_CAPACITY_TOLERANCE else "  OUTSIDE"
        lines.append(
            f"{c['model']:<10} {c['max_batched_tokens']:>6,} batched tokens: measured "
            f"{c['measured_blocks']}, modelled {c['predicted_blocks']} "
            f"({100 * c['rel_error']:+.1f}%; peak set by the {c['widest_phase']} phase){mark}"
        )
    lines.append("")
    lines.append(
        "Light-batch decode step (requests of ≤256 tokens; Llumnix Figure 4: up to 2.6× slower "
        f"when batched, near ideal up to {NEAR_IDEAL_TOKENS:,} tokens)"
    )
    for d in result["light_decode"]:
        target = d["target_ratio"]
        verdict = ""
        if target:
            verdict = (
                f" (target {target:g} ±{100 * DECODE_SLOWDOWN_BOUND:.0f}%"
                f"{')' if ratio_within_bound(d) else ')  OUTSIDE'}"
            )
        lines.append(
            f"{d['model']:<10} one request {d['one_request_ms']:.1f} ms (floor "
            f"{d['bandwidth_floor_ms']:.1f} + {d['one_request_overhead_ms']:.2f}); "
            f"{d['heaviest_requests']} requests / {d['heaviest_tokens']:,} tokens "
            f"{d['heaviest_ms']:.1f} ms; ratio {d['ratio']:.2f}{verdict}; "
            f"{NEAR_IDEAL_TOKENS:,} tokens {d['at_1600_tokens_ms']:.1f} ms "
            f"({d['at_1600_tokens_ratio']:.2f}×)"
        )
    lines.append("")
    lines.append(
        "Light-batch references, LLaMA-7B (measured × bandwidth / 600 GB/s = on an A10; "
        f"checks bound ±{100 * LIGHT_DECODE_TOLERANCE:.0f}%)"
    )
    for r in result["references"]:
        if r["predicted_ms"] is None:
            verdict = "not modelled (other requests' prefills interleaved)"
        else:
            mark = "" if reference_within_bound(r) or r["role"] != "check" else "  OUTSIDE"
            verdict = f"model {r['predicted_ms']:.1f} ms ({100 * r['rel_error']:+.1f}%){mark}"
        lines.append(
            f"{r['role']:<7} {r['engine']} on {r['gpu']}, batch {r['batch']}, {r['scope']}: "
            f"{r['measured_ms']:.1f} ms × {r['transfer']:.2f} = {r['on_a10_ms']:.1f} ms; {verdict}"
        )
    lines.append("")
    lines.append(
        "Token operators of a decode batch, LLaMA-7B (Vidur's A40 profile × 696/600, a fitting "
        "input), and the decode step at 256 tokens/request where no step measurement exists"
    )
    for r in result["linear_layers"]:
        lines.append(
            f"{r['num_tokens']:>3} tokens: measured {r['on_a10_ms']:.1f} ms, modelled "
            f"{r['modelled_ms']:.1f} ({100 * r['rel_error']:+.1f}%); step {r['step_ms']:.1f} ms, "
            f"{r['step_with_measured_weights_ms']:.1f} with the measured weight stream"
        )
    lines.append("")
    lines.extend(format_heavy(result))
    lines.append("")
    lines.extend(format_detokenizer(result["detokenizer"]))
    return "\n".join(lines)


def _percent(error: float | None) -> str:
    return "—" if error is None else f"{100 * error:+.1f}%"


def format_heavy(result: dict) -> list[str]:
    transfer = next((r["kv_transfer"] for r in result["heavy_decode"] if r["kv_transfer"]), "?")
    lines = [
        "Heavy batches, LLaMA-7B decode step (serving engine) = weights + KV + CPU, ms; weights checked "
        f"against Vidur's A40 token operators × {transfer} (±{100 * HEAVY_TOLERANCE:.0f}%); KV beside the A40's "
        f"FlashAttention decode × {transfer} (another kernel: model ÷ it, graded only where Figure 4 allows the transfer, "
        "below); * = past the A10's KV capacity; "
        "the serving engine adds its detokenizer's time per output token held, which these rows leave out",
        f"{'batch':>5} {'context':>7} {'step':>7} {'weights':>8} {'KV':>7} {'CPU':>6}  {'weights measured':>16}  "
        f"{'KV (A40 FA)':>15}",
    ]
    for r in result["heavy_decode"]:
        mark = "" if heavy_within_bound(r["weights_error"]) else "  OUTSIDE"
        measured = "—" if r["measured_weights_ms"] is None else f"{r['measured_weights_ms']:.1f} {_percent(r['weights_error'])}"
        kv = "—" if r["a40_kv_ms"] is None else f"{r['a40_kv_ms']:.1f} ×{r['kv_ratio']:.2f}"
        star = " " if r["fits_kv_capacity"] else "*"
        lines.append(
            f"{r['batch']:>5} {r['context']:>6}{star} {r['step_ms']:>7.1f} {r['weights_ms']:>8.1f} "
            f"{r['kv_ms']:>7.1f} {r['cpu_ms']:>6.1f}  {measured:>16}  {kv:>15}{mark}"
        )
    lines.extend(format_kv_kernel(result["kv_kernel"]))
    lines.append("")
    lines.append(
        "Heavy prefills, LLaMA-7B, one prompt (Figure 10's engine) against the A10 table "
        f"(±{100 * HEAVY_TOLERANCE:.0f}%; — = no A10 measurement of that length)"
    )
    for r in result["heavy_prefill"]:
        mark = "" if heavy_within_bound(r["rel_error"]) else "  OUTSIDE"
        measured = "—" if r["measured_ms"] is None else f"{r['measured_ms']:.0f} ms"
        lines.append(
            f"{r['tokens']:>5} tokens: model {r['predicted_ms']:.1f} ms, measured {measured} "
            f"({_percent(r['rel_error'])}){mark}"
        )
    attention = result["prefill_attention"]
    lines.append("")
    flops = next((r["transfer"] for r in attention["rows"]), "?")
    lines.append(
        f"Prefill attention, LLaMA-7B, one layer: model beside Vidur's A40 (FlashAttention) × {flops} "
        "(context, not graded: the A10 table decides)"
    )
    for r in attention["rows"]:
        lines.append(
            f"{r['tokens']:>5} tokens: model {r['model_ms_per_layer']:.3f} ms, A40 {r['a40_ms_per_layer']:.3f} ms "
            f"(model ÷ it {r['ratio']:.2f})"
        )
    bound_tokens = attention["table_bound_tokens"]
    at_bound = next((r for r in attention["rows"] if r["tokens"] == bound_tokens), None)
    a40 = f"; the A40's: {at_bound['a40_ms_per_layer']:.2f} ms" if at_bound else ""
    lines.append(
        f"the A10 table's growth from {bound_tokens:,} to {2 * bound_tokens:,} tokens leaves "
        f"{attention['table_bound_ms_per_layer']:.2f} ms per layer for attention at {bound_tokens:,} tokens "
        f"(quadratic attention, linear operators){a40}"
    )
    if attention["a40_peak_fraction"] is not None:
        lines.append(
            f"  finding: there the A40 rows reach {100 * attention['a40_peak_fraction']:.0f}% of the A40's FP16 peak, "
            f"the A10 table needs at least {100 * attention['table_bound_peak_fraction']:.0f}% of the A10's: Vidur's "
            "prefill kernel is not as efficient as the one the artifact ran, so its rows stay context"
        )
    return lines


def format_kv_kernel(finding: dict) -> list[str]:
    """The Figure 4 test of the FlashAttention-to-PagedAttention transfer, in words."""
    verdict = (
        "within its band: the KV rows are checks"
        if finding["transfer_holds"]
        else "outside its band: the artifact's kernel on the A10 refutes the transfer, so the KV rows "
        "are another kernel's (context, a finding)"
    )
    return [
        f"KV kernel: with the KV stream at the A40's FlashAttention × {finding['kernel_ratio']:g} (vllm#3010: vLLM's "
        f"paged kernels 10+% slower), Figure 4's ratio would be {finding['figure_4_ratio']:.2f} "
        f"(target {finding['target_ratio']:g} ±{100 * DECODE_SLOWDOWN_BOUND:.0f}%), {verdict};",
        f"  Figure 4 implies ×{finding['implied_kernel_ratio']:.2f} of FlashAttention at {finding['requests']} requests "
        f"× {finding['context']} tokens (the model: ×{finding['modelled_kernel_ratio']:.2f}; "
        f"FlashAttention {finding['flash_kv_ms']:.1f} ms, model {finding['modelled_kv_ms']:.1f} ms)",
    ]


def format_detokenizer(report: dict) -> list[str]:
    """The measured detokenizer rows beside the serving engine's charge for them."""
    where = report["measured_on"]
    per_token_us = 1e3 * report["per_held_token_ms"]
    lines = [
        "Detokenizer of the serving engine (vLLM 0.1.2's, LLaMA fast tokenizer, transformers 4.31.0), one step, ms: "
        f"measured by benchmarks/detokenizer.py on {where['cpu']} ({where['date']}, load {where['load']}), "
        f"beside the line through them: {1e3 * report['per_sequence_ms']:.2f} µs per sequence (in the per-request "
        f"line already) + {per_token_us:.4f} µs per held output token (what the engine is charged; "
        f"±{100 * detokenizer.TOLERANCE:.0f}%)",
        f"{'batch':>5} {'held':>5} {'measured':>9} {'per-seq':>8} {'tokens':>8} {'model':>8} {'error':>7}",
    ]
    for r in report["rows"]:
        mark = "" if detokenizer.within_bound(r) else "  OUTSIDE"
        lines.append(
            f"{r['batch']:>5} {r['held_tokens']:>5} {r['measured_ms']:>9.3f} {r['per_sequence_ms']:>8.3f} "
            f"{r['held_tokens_ms']:>8.3f} {r['model_ms']:>8.3f} {_percent(r['rel_error']):>7}{mark}"
        )
    slow_us = 1e3 * report["slow_path_per_held_token_ms"]
    lines.append(
        f"the slow tokenizer (not the artifact's path): {slow_us:.3f} µs per held token, "
        f"{slow_us / per_token_us:.0f}× the fast"
    )
    return lines
