"""Fit the GA102 performance model to the A10 measurements and write Vidur profiles from it.

    python -m sim.hardware.build_profiles

Builds the layouts whose device SKU entry says its profiles come from the performance model
(``DeviceData.profiles == PERF_MODEL``); a device shipping Vidur's measured profiles is left
alone. Deterministic: same inputs, same bytes. Writes, under ``sim/hardware/data/profiles``:
``a10_fit.json`` (fitted constants, per-row residuals), ``PROVENANCE.md``, and in Vidur's
profiling-dataset layout ``compute/<device>/<model>/{mlp,attention}.csv.xz`` and
``network/<node>/all_reduce.csv.xz``, each folder with the ``config.json`` Vidur checks.

The fitted function is the one the predictor later computes: the performance model is
evaluated at the table keys Vidur reads for each measured batch (``timing.lookup_key``) and
summed the way Vidur's ExecutionTime sums (``timing``), plus the per-iteration overhead.
Besides the table rows, the fit asks for the Llumnix paper's Figure 4 ratio between the
heaviest and the one-request LLaMA-7B decode step (``calibration.decode_range``): the
table's ~8k-token decode rows alone cannot tell how much of a step is weights and how much
is KV cache.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.optimize import least_squares
from vidur.config import RandomForrestExecutionTimePredictorConfig

import sim.hardware.overheads as overheads
import sim.hardware.predictor_settings as settings
from sim.hardware.calibration import (
    DECODE_SLOWDOWN,
    FIGURE_10_PER_REQUEST_MS,
    Batch,
    bandwidth_floor_ms,
    batch_of,
    compare,
    decode_range,
    default_kv_capacity_tokens,
    load_linear_layer_measurements,
    load_measurements,
)
from sim.hardware.catalog import (
    FIT_JSON,
    LAYOUTS,
    LINEAR_LAYERS_CSV,
    MEASUREMENTS_CSV,
    PROFILES_DIR,
    Layout,
)
from sim.hardware.perf_model import (
    BYTES_PER_VALUE,
    OCCUPANCY_SHARPNESS,
    ROOFLINE_SHARPNESS,
    SKINNY_GEMM_TOKENS,
    Constants,
    Device,
    PerfModel,
    Shape,
    all_reduce_ms,
)
from sim.hardware.provenance_note import TEMPLATE
from sim.hardware.skus import PERF_MODEL
from sim.hardware.timing import (
    block_token_ops_ms,
    decode_attention_ms,
    iteration_seconds,
    lookup_key,
)


def built_layouts(layouts: tuple[Layout, ...] = LAYOUTS) -> tuple[Layout, ...]:
    """The layouts whose device entry says the performance model writes their profiles. One
    fit to one measurement table serves them all, so they must share one device; a second
    built device would need a table and a fit of its own."""
    built = tuple(layout for layout in layouts if layout.device_sku.profiles == PERF_MODEL)
    if len({layout.device for layout in built}) != 1:
        raise ValueError("build_profiles fits one device's table; a second built device needs its own")
    return built


BUILT = built_layouts()
BUILT_DEVICE = BUILT[0].device_sku
ENGINE = overheads.engine_overheads(BUILT_DEVICE.cpu_overheads)

# Not fitted. The calibration rows cannot separate a per-kernel cost from the efficiencies
# (the fit drives it to zero): 3 µs is what the smallest kernels take on the same GA102 die
# in Vidur's published A40 profiles (1-4 µs for norms, adds and RoPE at a few tokens). The
# engine's CPU overhead is measured, not fitted (``overheads``).
FIXED = {
    "kernel_overhead_us": 3.0,
    "overhead_base_ms": ENGINE.base_ms,
    "overhead_per_request_ms": ENGINE.per_request_ms,
}
# No kernel streams DRAM at the datasheet rate: a device-memory copy reaches 87% of an A100's
# 1,555 GB/s (1,355 GB/s, https://github.com/PTsolvers/gpu-workshop-JuliaCon23/issues/7).
# Bandwidth efficiencies are capped at 0.9; the Figure 4 residual presses against the cap.
MAX_MEMORY_EFFICIENCY = 0.9
# Starting point and bounds of the fitted constants (physically plausible ranges).
START_AND_BOUNDS = {
    "gemm_efficiency": (0.5, 0.05, 1.0),
    "attention_efficiency": (0.5, 0.05, 1.0),
    "memory_efficiency": (0.8, 0.05, MAX_MEMORY_EFFICIENCY),
    "tiled_memory_efficiency": (0.7, 0.05, MAX_MEMORY_EFFICIENCY),
    "decode_attention_efficiency": (0.5, 0.05, MAX_MEMORY_EFFICIENCY),
    "blocks_per_sm_to_saturate": (0.5, 0.01, 16.0),
    "all_reduce_latency_us": (50.0, 0.0, 2000.0),
    "all_reduce_bus_gb_per_s": (15.0, 1.0, 32.0),  # PCIe 4.0 x16: 32 GB/s per direction
}
# Vidur's A40 profile of the token operators at decode batches of 1-128 (all memory-bound) is
# one source, so its rows together weigh what one residual does (1/sqrt(rows) each): it pins
# how fast a GA102 streams weights, skinny and tiled, which the table's ~8k-token decode rows
# cannot separate from the KV stream.
LINEAR_LAYER_MEASUREMENTS = load_linear_layer_measurements()
LINEAR_LAYER_WEIGHT = 1 / np.sqrt(len(LINEAR_LAYER_MEASUREMENTS))
SIGNIFICANT_DIGITS = 5  # constants are rounded before use, so the build is reproducible
FLOAT_FORMAT = "%.6g"  # profile times in ms: relative precision 1e-6


@dataclass(frozen=True)
class LayoutModel:
    """A layout's fixed parts, ready to evaluate the performance model for any constants."""

    layout: Layout
    device: Device
    shape: Shape
    predictor_config: RandomForrestExecutionTimePredictorConfig
    batching_overhead: float

    @classmethod
    def of(cls, layout: Layout) -> "LayoutModel":
        replica = layout.replica_config()
        config = settings.predictor_config(layout, cache_dir="")
        return cls(
            layout,
            Device.from_vidur(replica.device_config),
            Shape.from_vidur(replica),
            config,
            settings.decode_batching_overhead(config, replica.model_config),
        )

    def comm_ms(self, constants: Constants, num_tokens: ArrayLike) -> np.ndarray:
        size = np.asarray(num_tokens) * self.shape.hidden * BYTES_PER_VALUE
        tp = self.shape.tensor_parallel
        return settings.tensor_parallel_comm_ms(
            all_reduce_ms(size, tp, constants), self.predictor_config, tp
        )

    def batch_ms(self, constants: Constants, batch: Batch) -> float:
        """What the predictor computes for ``batch``, straight from the performance model."""
        num_tokens, decode_batch, decode_kv, chunks, num_requests = lookup_key(*batch)
        model = PerfModel(self.device, self.shape, constants)
        block = block_token_ops_ms(model.token_ops(num_tokens), self.comm_ms(constants, num_tokens))
        if decode_batch:
            block = block + decode_attention_ms(
                model.attn_decode(decode_batch, decode_kv), decode_batch, self.batching_overhead
            )
        for kv_tokens, chunk in chunks:
            block = block + model.attn_prefill(kv_tokens, chunk)
        seconds = iteration_seconds(
            self.shape.num_layers,
            float(block),
            constants.overhead_base_ms,
            constants.overhead_per_request_ms,
            num_requests,
        )
        return seconds * 1e3


    def decode_parts_ms(self, constants: Constants, batch_size: int, context: int) -> dict[str, float]:
        """A decode step of ``batch_size`` requests of ``context`` tokens, in the parts that
        measurements can test one by one: the weight stream (the token operators of every
        layer), the KV stream (decode attention of every layer) and the engine's CPU work.
        They add up to ``batch_ms`` of the same batch."""
        num_tokens, decode_batch, decode_kv, _, num_requests = lookup_key((), batch_size, batch_size * context)
        model = PerfModel(self.device, self.shape, constants)
        layers = self.shape.num_layers
        weights = block_token_ops_ms(model.token_ops(num_tokens), self.comm_ms(constants, num_tokens))
        kv = decode_attention_ms(model.attn_decode(decode_batch, decode_kv), decode_batch, self.batching_overhead)
        return {
            "weights_ms": layers * float(weights),
            "kv_ms": layers * float(kv),
            "cpu_ms": constants.overhead_base_ms + constants.overhead_per_request_ms * num_requests,
        }


    def prefill_attention_ms(self, constants: Constants, tokens: int) -> float:
        """One layer's attention over a fresh prompt of ``tokens`` tokens, at the keys the
        predictor reads it at."""
        (kv, chunk), = lookup_key(((tokens, tokens),), 0, 0)[3]
        return float(PerfModel(self.device, self.shape, constants).attn_prefill(kv, chunk))


def _round(value: float) -> float:
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def decode_ranges(constants: Constants) -> list[dict]:
    """``calibration.decode_range`` of every layout, straight from the performance model."""
    return [
        decode_range(
            layout.model,
            default_kv_capacity_tokens(layout),
            bandwidth_floor_ms(layout),
            lambda batch, model=LayoutModel.of(layout): model.batch_ms(constants, batch),
        )
        for layout in BUILT
    ]


def fit_constants() -> tuple[Constants, list[dict]]:
    """Least squares on relative error over the prefill and decode rows of every layout and
    Figure 4's heaviest/one-request decode ratio (one more residual, weighted like a row)."""
    models = {layout.model: LayoutModel.of(layout) for layout in BUILT}
    measurements = [m for m in load_measurements() if m.model in models]
    capacities = {layout.model: default_kv_capacity_tokens(layout) for layout in BUILT}
    names = list(START_AND_BOUNDS)

    def constants_of(x) -> Constants:
        return Constants(**FIXED, **dict(zip(names, map(float, x))))

    def residuals(x):
        c = constants_of(x)
        bench = figure_10_engine(c)
        rows = [models[m.model].batch_ms(bench, batch_of(m)) / m.measured_ms - 1 for m in measurements]
        for model, target in DECODE_SLOWDOWN.items():
            summary = decode_range(
                model, capacities[model], 0.0, lambda batch: models[model].batch_ms(c, batch)
            )
            rows.append(summary["ratio"] / target - 1)
        rows.extend(LINEAR_LAYER_WEIGHT * e for e in linear_layer_errors(models, c))
        return rows

    start, lower, upper = zip(*START_AND_BOUNDS.values())
    result = least_squares(residuals, start, bounds=(lower, upper), x_scale="jac")
    constants = Constants(**FIXED, **{n: _round(v) for n, v in zip(names, result.x)})
    bench = figure_10_engine(constants)
    rows = compare(measurements, lambda model, batch: models[model].batch_ms(bench, batch))
    return constants, rows


def linear_layer_errors(models: dict[str, LayoutModel], constants: Constants) -> list[float]:
    """Relative error of the modelled token operators against the GA102 measurements, each
    transferred to the A10 (``calibration.LinearLayerMeasurement``)."""
    errors = []
    for m in LINEAR_LAYER_MEASUREMENTS:
        model = models[m.model]
        ops = PerfModel(model.device, model.shape, constants).token_ops([m.lookup_tokens])
        modelled = model.shape.num_layers * sum(float(times[0]) for times in ops.values())
        errors.append(modelled / m.on_a10_ms - 1)
    return errors


def figure_10_engine(constants: Constants) -> Constants:
    """The constants with the CPU work of the engine the Figure 10 table was measured on
    (vLLM 0.2.0, vectorised sampler); the fitted GPU constants are the same hardware's."""
    return replace(constants, overhead_per_request_ms=FIGURE_10_PER_REQUEST_MS)


def mlp_profile(model: LayoutModel, constants: Constants) -> pd.DataFrame:
    """Vidur's ``mlp.csv`` schema: token-keyed operators, one row per profiled token count."""
    model_config = model.layout.replica_config().model_config
    tokens = np.array(settings.TOKEN_GRID)
    frame = pd.DataFrame(
        {
            "n_head": model_config.num_q_heads,
            "n_kv_head": model_config.num_kv_heads,
            "n_embd": model_config.embedding_dim,
            "n_expanded_embd": model_config.mlp_hidden_dim,
            "vocab_size": model_config.vocab_size,
            "use_gated_mlp": model_config.use_gated_mlp,
            "num_tokens": tokens,
            "num_tensor_parallel_workers": model.shape.tensor_parallel,
        }
    )
    perf = PerfModel(model.device, model.shape, constants)
    for name, times in perf.token_ops(tokens).items():
        frame[f"time_stats.{name}.median"] = times
    return frame


def attention_profile(model: LayoutModel, constants: Constants) -> pd.DataFrame:
    """Vidur's ``attention.csv`` schema: prefill rows keyed by (KV, chunk), decode rows by
    (batch, KV). ``kv_cache_size`` is the context including this iteration's tokens, which
    is how this Vidur release looks it up (Batch.num_kv_tokens = processed + new)."""
    model_config = model.layout.replica_config().model_config
    perf = PerfModel(model.device, model.shape, constants)
    prefill = np.array(
        [(kv, chunk) for kv, chunk in product(settings.KV_GRID, settings.CHUNK_GRID) if chunk <= kv]
    )
    decode = np.array(list(product(settings.DECODE_BATCH_GRID, settings.KV_GRID)))
    kv_cache_size = np.concatenate([prefill[:, 0], decode[:, 1]])
    chunk = np.concatenate([prefill[:, 1], np.zeros(len(decode), dtype=int)])
    batch_size = np.concatenate([np.ones(len(prefill), dtype=int), decode[:, 0]])
    is_prefill = chunk > 0
    return pd.DataFrame(
        {
            "n_embd": model_config.embedding_dim,
            "n_q_head": model_config.num_q_heads,
            "n_kv_head": model_config.num_kv_heads,
            "block_size": settings.PROFILE_BLOCK_SIZE,
            "num_tensor_parallel_workers": model.shape.tensor_parallel,
            "max_model_len": model_config.max_model_len,
            "batch_size": batch_size,
            "prefill_chunk_size": chunk,
            "kv_cache_size": kv_cache_size,
            "is_prefill": is_prefill,
            "time_stats.attn_prefill.median": np.where(
                is_prefill, perf.attn_prefill(kv_cache_size, np.maximum(chunk, 1)), np.nan
            ),
            "time_stats.attn_decode.median": np.where(
                is_prefill, np.nan, perf.attn_decode(batch_size, kv_cache_size)
            ),
            "time_stats.attn_kv_cache_save.median": perf.attn_kv_cache_save(
                np.maximum(chunk, batch_size)
            ),
        }
    )


def all_reduce_profile(num_workers: int, constants: Constants) -> pd.DataFrame:
    """Vidur's collectives schema (``size`` in bytes) for a ring over ``num_workers`` GPUs."""
    sizes = np.arange(
        settings.ALL_REDUCE_SIZE_STEP, settings.ALL_REDUCE_MAX_SIZE + 1, settings.ALL_REDUCE_SIZE_STEP
    )
    return pd.DataFrame(
        {
            "rank": 0,
            "num_workers": num_workers,
            "size": sizes,
            "collective": "all_reduce",
            "devices_per_node": num_workers,
            "max_devices_per_node": num_workers,
            "time_stats.all_reduce.median": all_reduce_ms(sizes, num_workers, constants),
        }
    )


def _write_csv_xz(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False, float_format=FLOAT_FORMAT, compression="xz")


def _write_json(data: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def build(profiles_dir: Path = PROFILES_DIR) -> tuple[Constants, list[dict]]:
    """Fit, then write every profile file, the fit record and the provenance note."""
    constants, rows = fit_constants()
    ranges = decode_ranges(constants)
    fit_json = profiles_dir / FIT_JSON.relative_to(PROFILES_DIR)
    _write_json(
        {
            "constants": constants.to_dict(),
            "fixed": sorted(FIXED),
            "roofline_sharpness": ROOFLINE_SHARPNESS,
            "occupancy_sharpness": OCCUPANCY_SHARPNESS,
            "fitted_to": [
                MEASUREMENTS_CSV.name,
                "Llumnix Figure 4 decode slowdown",
                LINEAR_LAYERS_CSV.name,
            ],
            "linear_layer_errors": linear_layer_errors(
                {layout.model: LayoutModel.of(layout) for layout in BUILT}, constants
            ),
            "rows": rows,
            "decode_range": ranges,
        },
        fit_json,
    )
    networks = {}
    for layout in BUILT:
        model = LayoutModel.of(layout)
        compute_dir = profiles_dir / layout.compute_dir.relative_to(PROFILES_DIR)
        _write_csv_xz(mlp_profile(model, constants), compute_dir / "mlp.csv.xz")
        _write_csv_xz(attention_profile(model, constants), compute_dir / "attention.csv.xz")
        _write_json({"model": layout.vidur_model, "device_sku": layout.device}, compute_dir / "config.json")
        networks[layout.node] = layout.tensor_parallel
    for node, num_workers in sorted(networks.items()):
        network_dir = profiles_dir / "network" / node
        if num_workers > 1:
            _write_csv_xz(all_reduce_profile(num_workers, constants), network_dir / "all_reduce.csv.xz")
        _write_json({"sku": node}, network_dir / "config.json")
    (profiles_dir / "PROVENANCE.md").write_text(provenance(constants, rows, ranges))
    return constants, rows


def provenance(constants: Constants, rows: list[dict], ranges: list[dict]) -> str:
    """The note shipped next to the profiles: how they were made and what they were fitted to."""
    constant_lines = "\n".join(
        f"| `{name}` | {value:g} | {'fixed' if name in FIXED else 'fitted'} |"
        for name, value in constants.to_dict().items()
    )
    row_lines = "\n".join(
        f"| {r['model']} | {r['quantity']} | {r['seq_len']} | {r['measured_ms']:g} | "
        f"{r['predicted_ms']:.1f} | {100 * r['rel_error']:+.1f}% |"
        for r in rows
    )
    overhead_1 = constants.overhead_base_ms + constants.overhead_per_request_ms
    range_lines = "\n".join(
        f"| {r['model']} | {r['one_request_ms']:.1f} | {r['bandwidth_floor_ms']:.1f} + "
        f"{overhead_1:.2f} | {r['heaviest_ms']:.1f} ({r['heaviest_requests']} × ≤256 = "
        f"{r['heaviest_tokens']:,} tokens) | {r['ratio']:.2f}"
        f"{f' (target {t:g})' if (t := r['target_ratio']) else ''} | "
        f"{r['at_1600_tokens_ms']:.1f} ({r['at_1600_tokens_ratio']:.2f}×) |"
        for r in ranges
    )
    nccl_ms = settings.predictor_config(BUILT[0], "").nccl_cpu_launch_overhead_ms
    ratio = ranges[0]["ratio"]
    models = {layout.model: LayoutModel.of(layout) for layout in BUILT}
    return TEMPLATE.format(
        measurements_csv=MEASUREMENTS_CSV.name,
        fit_json=FIT_JSON.name,
        roofline_sharpness=ROOFLINE_SHARPNESS,
        occupancy_sharpness=OCCUPANCY_SHARPNESS,
        nccl_ms=nccl_ms,
        significant_digits=SIGNIFICANT_DIGITS,
        constant_lines=constant_lines,
        max_memory_efficiency=MAX_MEMORY_EFFICIENCY,
        memory_efficiency=constants.memory_efficiency,
        tiled_memory_efficiency=constants.tiled_memory_efficiency,
        skinny_tokens=SKINNY_GEMM_TOKENS,
        # LLaMA-7B's 13.5 GB of weights over the one-request step's GPU time
        weight_stream_gbps=13.5e9 / ((ranges[0]["one_request_ms"] - overhead_1) * 1e-3) / 1e9,
        decode_attention_efficiency=constants.decode_attention_efficiency,
        ratio=ratio,
        ratio_vs_target_pct=100 * (ratio / ranges[0]["target_ratio"] - 1),
        range_lines=range_lines,
        row_lines=row_lines,
        max_tokens=settings.MAX_TOKENS,
        max_decode_batch=settings.MAX_DECODE_BATCH,
        profile_block_size=settings.PROFILE_BLOCK_SIZE,
        visible_memory_bytes=BUILT_DEVICE.visible_memory_bytes,
        linear_layers_csv=LINEAR_LAYERS_CSV.name,
        linear_rows=len(LINEAR_LAYER_MEASUREMENTS),
        linear_tokens=", ".join(str(m.num_tokens) for m in LINEAR_LAYER_MEASUREMENTS),
        linear_errors=", ".join(f"{100 * e:+.1f}%" for e in linear_layer_errors(models, constants)),
        sampler_loop_ms=overheads.SAMPLER_LOOP_PER_REQUEST_MS,
        figure_10_per_request_ms=FIGURE_10_PER_REQUEST_MS,
    )

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    constants, rows = build()
    worst = max(abs(r["rel_error"]) for r in rows)
    print(f"fitted {constants}\nworst row error {100 * worst:.1f}%; wrote {PROFILES_DIR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
