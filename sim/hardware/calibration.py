"""The A10 measurement table and what each of its rows asks of a replica model.

Rows of ``data/a10_measurements.csv`` (Llumnix artifact, Figure 10): for sequence length L,
the batch holds ~8,192 tokens, i.e. 8192 // L requests of L tokens each.

* ``prefill``: one fresh sequence of L tokens is prefilled (q = kv = L).
* ``decode``: one decode step of 8192 // L requests whose context is L tokens once this
  step's token is in (Vidur's ``num_kv_tokens`` counts the KV after the iteration).

The migration rows (``live_migration_downtime``, ``blocking_copy_downtime``) are kept in the
file for the migration model; they are not execution times and are not calibrated here.

Below ~8k tokens the table says nothing, so two more facts pin the light-batch decode step:

* the Llumnix paper (OSDI'24, §2, Figure 4: decode step latency of LLaMA-7B on an A10
  against the total number of batched tokens,
  https://www.usenix.org/conference/osdi24/presentation/sun-biao): the compute time of one
  decode step degrades by up to 2.6× as requests are batched, and stays near its ideal up
  to ~1,600 batched tokens (the load the paper keeps instances with high-priority requests
  under). We read "up to" as: the heaviest batch the instance can hold (its KV capacity:
  13,520 tokens here, 13,616 in the paper, §6.1) against one request, both in requests of
  at most 256 tokens, Figure 10's shortest sequence (``decode_batch``);
* the A10's bandwidth: a decode step streams every weight once, so it cannot be faster
  than weight bytes / 600 GB/s (22.5 ms for LLaMA-7B's 13.5 GB) plus the engine's
  overheads (``bandwidth_floor_ms``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar, get_type_hints

from vidur.config import CacheConfig

from sim.hardware import overheads
from sim.hardware.catalog import (
    DECODE_ATTENTION_CSV,
    DEVICE_REFERENCES_CSV,
    KV_CAPACITY_CSV,
    LIGHT_DECODE_CSV,
    LINEAR_LAYERS_CSV,
    MEASUREMENTS_CSV,
    PREFILL_ATTENTION_CSV,
    Layout,
)
from sim.hardware.memory import ProfileRunMemoryPlanner
from sim.hardware.skus import A10DeviceSKUConfig
from sim.hardware.timing import NUM_TOKENS_ROUNDING, round_up

BATCH_TOKENS = 8192  # Figure 10's batches: ~8,192 tokens in 8192 // L requests of L tokens
# The table rows were measured on the artifact's Figure 10 bench, vLLM 0.2.0, whose sampler is
# vectorised; the serving engine (and Figure 4) is vLLM 0.1.2 (``overheads``).
FIGURE_10_PER_REQUEST_MS = overheads.VECTORISED_SAMPLER_PER_REQUEST_MS
EXECUTION_QUANTITIES = ("prefill", "decode")
# Acceptance bounds on |predicted / measured - 1| (issue #2).
TOLERANCE = {"llama-7b": 0.10, "llama-30b": 0.15}
# Paper §6.1: LLaMA-7B on one A10 holds 13,616 tokens = 851 blocks of 16 at utilisation 0.9.
PAPER_KV_BLOCKS = {"llama-7b": 851}

# Llumnix Figure 4 (LLaMA-7B on A10): the heaviest decode step over the one-request step.
DECODE_SLOWDOWN = {"llama-7b": 2.6}
DECODE_SLOWDOWN_BOUND = 0.10  # |ratio / 2.6 - 1|, the same bound as the 7B table rows
NEAR_IDEAL_TOKENS = 1600  # the paper's high-priority load target
REQUEST_TOKENS = 256  # per request in the light/heavy batches: Figure 10's shortest sequence

Batch = tuple[Sequence[tuple[int, int]], int, int]  # (prefills, num_decodes, decode_kv_tokens)
T = TypeVar("T")

# Acceptance bounds of the newer comparisons (issue #18): KV capacity against the artifact's
# measured A10 table, and the light-batch step against independent measurements after their
# transfer.
KV_CAPACITY_TOLERANCE = 0.01
LIGHT_DECODE_TOLERANCE = 0.10
# the datasheet bandwidth the transfers scale to: the A10 device SKU's own figure
A10_BANDWIDTH_GB_PER_S = A10DeviceSKUConfig.memory_bandwidth_gb_per_s
A10_FP16_TFLOPS = A10DeviceSKUConfig.fp16_tflops  # ... and the FP16 tensor throughput


@dataclass(frozen=True)
class Measurement:
    model: str
    quantity: str
    seq_len: int
    measured_ms: float


def load_measurements(quantities: Sequence[str] = EXECUTION_QUANTITIES) -> list[Measurement]:
    """The measurement rows of the given quantities, in file order."""
    with open(MEASUREMENTS_CSV, newline="") as handle:
        return [
            Measurement(row["model"], row["quantity"], int(row["seq_len"]), float(row["measured_ms"]))
            for row in csv.DictReader(handle)
            if row["quantity"] in quantities
        ]


def batch_of(measurement: Measurement) -> Batch:
    """The ``batch_time`` arguments that reproduce one measurement row."""
    length = measurement.seq_len
    if measurement.quantity == "prefill":
        return [(length, length)], 0, 0
    if measurement.quantity == "decode":
        requests = BATCH_TOKENS // length
        return [], requests, requests * length
    raise ValueError(f"{measurement.quantity!r} is not an execution-time quantity")


def relative_error(predicted_ms: float, measured_ms: float) -> float:
    return predicted_ms / measured_ms - 1


def compare(
    measurements: Sequence[Measurement], batch_time_ms: Callable[[str, Batch], float]
) -> list[dict]:
    """Predicted vs measured per row; ``batch_time_ms(model, batch)`` is the predictor."""
    rows = []
    for m in measurements:
        predicted = batch_time_ms(m.model, batch_of(m))
        rows.append(
            {
                "model": m.model,
                "quantity": m.quantity,
                "seq_len": m.seq_len,
                "measured_ms": m.measured_ms,
                "predicted_ms": predicted,
                "rel_error": relative_error(predicted, m.measured_ms),
            }
        )
    return rows


def decode_batch(total_tokens: int, request_tokens: int = REQUEST_TOKENS) -> Batch:
    """A decode step over ``total_tokens`` batched tokens in requests of at most
    ``request_tokens`` (the fewest requests that hold them)."""
    return [], -(-total_tokens // request_tokens), total_tokens


def light_decode() -> Batch:
    """One request (context up to 256 tokens: all share Vidur's smallest KV lookup key)."""
    return decode_batch(REQUEST_TOKENS)


def default_kv_capacity_tokens(layout: Layout) -> int:
    """KV capacity of the layout at the default settings (block 16, utilisation 0.9, 12,800
    batched tokens), what ``load_replica_model`` sizes without overrides."""
    planner = ProfileRunMemoryPlanner(layout.replica_config(), CacheConfig(block_size=16), 0.9, 12800)
    return planner.get_num_blocks() * 16


def bandwidth_floor_ms(layout: Layout) -> float:
    """Streaming every weight of one GPU once at its datasheet bandwidth (ms): no decode step
    of this layout can take less GPU time."""
    replica = layout.replica_config()
    planner = ProfileRunMemoryPlanner(replica, CacheConfig(), 1.0, 1)
    bandwidth = replica.device_config.memory_bandwidth_gb_per_s * 1e9
    return planner.weight_bytes_per_device() / bandwidth * 1e3


def decode_range(
    model: str,
    kv_capacity_tokens: int,
    floor_ms: float,
    batch_time_ms: Callable[[Batch], float],
) -> dict:
    """The one-request decode step, the heaviest one the instance holds, their ratio (with
    Figure 4's target where there is one) and the step at the 1,600-token load target."""
    one_ms = batch_time_ms(light_decode())
    _, requests, tokens = heavy = decode_batch(kv_capacity_tokens)
    heavy_ms = batch_time_ms(heavy)
    near_ideal_ms = batch_time_ms(decode_batch(NEAR_IDEAL_TOKENS))
    return {
        "model": model,
        "one_request_ms": one_ms,
        "heaviest_ms": heavy_ms,
        "heaviest_requests": requests,
        "heaviest_tokens": tokens,
        "ratio": heavy_ms / one_ms,
        "target_ratio": DECODE_SLOWDOWN.get(model),
        "at_1600_tokens_ms": near_ideal_ms,
        "at_1600_tokens_ratio": near_ideal_ms / one_ms,
        "bandwidth_floor_ms": floor_ms,
    }


def ratio_within_bound(summary: dict) -> bool:
    """True where Figure 4 gives no target, or the ratio is within ±10% of it."""
    target = summary["target_ratio"]
    return target is None or abs(summary["ratio"] / target - 1) <= DECODE_SLOWDOWN_BOUND


def _rows(path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _records(kind: type[T], path) -> list[T]:
    """Every row of a measurement file as a ``kind``: each of its fields read from the column
    of that name, converted to the field's type (other columns, such as ``source``, stay in
    the file)."""
    types = {name: {"int": int, "float": float, "str": str}[hint.__name__]
             for name, hint in get_type_hints(kind).items()}
    return [kind(**{name: convert(row[name]) for name, convert in types.items()}) for row in _rows(path)]


# -- KV capacity ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CapacityMeasurement:
    """vLLM's block count on the artifact's A10s at one ``max_num_batched_tokens``."""

    model: str
    gpu_memory_utilization: float
    block_size: int
    max_batched_tokens: int
    measured_blocks: int


def load_capacity_measurements() -> list[CapacityMeasurement]:
    return _records(CapacityMeasurement, KV_CAPACITY_CSV)


def compare_capacity(layouts: dict[str, Layout]) -> list[dict]:
    """The profile-run model (``memory``) against every measured capacity."""
    rows = []
    for m in load_capacity_measurements():
        planner = ProfileRunMemoryPlanner(
            layouts[m.model].replica_config(),
            CacheConfig(block_size=m.block_size),
            m.gpu_memory_utilization,
            m.max_batched_tokens,
        )
        blocks = planner.get_num_blocks()
        rows.append(
            {
                "model": m.model,
                "max_batched_tokens": m.max_batched_tokens,
                "measured_blocks": m.measured_blocks,
                "predicted_blocks": blocks,
                "rel_error": relative_error(blocks, m.measured_blocks),
                "widest_phase": planner.widest_phase(),
            }
        )
    return rows


# -- GA102 linear layers (a fitting input of the profiles) ---------------------------------


@dataclass(frozen=True)
class LinearLayerMeasurement:
    """The transformer blocks' token operators (projections, norms, RoPE, SiLU, add) of a
    decode batch of ``num_tokens``, summed over the layers, measured on another GA102 card."""

    model: str
    device: str
    memory_bandwidth_gb_per_s: float
    num_tokens: int
    measured_ms: float

    @property
    def on_a10_ms(self) -> float:
        """Transferred by memory bandwidth: at these batch sizes every projection streams its
        weights, so the time scales with the bus (A40 696 GB/s -> A10 600 GB/s)."""
        return self.measured_ms * self.memory_bandwidth_gb_per_s / A10_BANDWIDTH_GB_PER_S

    @property
    def lookup_tokens(self) -> int:
        """The token count Vidur's tables are read at for this batch (rounded up to 8)."""
        return round_up(self.num_tokens, NUM_TOKENS_ROUNDING)


def load_linear_layer_measurements() -> list[LinearLayerMeasurement]:
    return _records(LinearLayerMeasurement, LINEAR_LAYERS_CSV)


# -- light-batch references (independent checks) -------------------------------------------


@dataclass(frozen=True)
class LightDecodeReference:
    """A published per-token time of a 7B LLaMA at a light batch on a GA102-class card.

    ``scope`` says what the number covers, and so what of the model it is compared with:
    ``per_token_with_own_prefill`` (a request's prefill and its decode steps over its output
    tokens), ``gpu_forward`` (the forward pass alone, no engine), ``step`` (an engine's whole
    decode step), ``per_token_with_prefills`` (also other requests' prefills: not modelled)."""

    role: str  # "check" (within LIGHT_DECODE_TOLERANCE, or calibrate fails) or "context"
    engine: str
    gpu: str
    memory_bandwidth_gb_per_s: float
    batch: int
    prompt_tokens: int
    output_tokens: int
    scope: str
    measured_ms: float
    source: str

    @property
    def transfer(self) -> float:
        """Weight streaming dominates a light step: times scale with the memory bandwidth."""
        return self.memory_bandwidth_gb_per_s / A10_BANDWIDTH_GB_PER_S

    @property
    def on_a10_ms(self) -> float:
        return self.measured_ms * self.transfer


def load_light_decode_references() -> list[LightDecodeReference]:
    return _records(LightDecodeReference, LIGHT_DECODE_CSV)


def predicted_per_token_ms(
    reference: LightDecodeReference,
    prefill_s: Callable[[int], float],
    decode_s: Callable[[int], float],
    overhead_s: float,
) -> float | None:
    """The model's figure for what ``reference`` measured (ms), or None where its scope is not
    modelled. ``decode_s(context)`` is one single-request decode step at that context,
    ``prefill_s(tokens)`` one prefill, ``overhead_s`` the engine's CPU work of a one-request
    step (left out for ``gpu_forward``)."""
    prompt, outputs = reference.prompt_tokens, reference.output_tokens
    steps = [decode_s(prompt + i) for i in range(1, outputs + 1)]
    if reference.scope == "per_token_with_own_prefill":
        return (prefill_s(prompt) + sum(steps)) / outputs * 1e3
    if reference.scope == "gpu_forward":
        return (sum(steps) / outputs - overhead_s) * 1e3
    if reference.scope == "step":
        return sum(steps) / outputs * 1e3
    return None


# -- heavy batches: the decode step where serving clusters live ------------------------------

# The decode steps and prefills ``llumsim calibrate`` shows beside their measurements: batch ×
# context where a cluster of A10s spends its time (and past it, where the A10's KV capacity
# ends: those rows compare operators only), and prompts from 128 to 8,192 tokens.
HEAVY_DECODE_BATCHES = (8, 16, 32, 64, 128, 256)
HEAVY_CONTEXTS = (256, 1024, 2048)
HEAVY_PREFILL_TOKENS = (128, 256, 512, 1024, 2048, 4096, 8192)
HEAVY_TOLERANCE = 0.10  # a checked heavy-batch row's bound, after its stated transfer

# vLLM's own comparison of decode kernels (vllm#3010, Feb 2024, A800-SXM4-80GB, multi-head
# attention): FlashAttention's paged decode "outperforms vllm's paged attention kernels for
# 10+%". The transfer that would make Vidur's A40 FlashAttention rows a measurement of the
# artifact's PagedAttention V1; the Figure 4 counterfactual below tests it.
PAGED_OVER_FLASH_DECODE = 1.1


def interpolated_in_batch(rows: dict[int, float], batch: int) -> float:
    """A measured quantity at ``batch`` requests, linear between the measured batch sizes
    around it (decode attention grows linearly with the sequences it reads)."""
    below = max(b for b in rows if b <= batch)
    above = min(b for b in rows if b >= batch)
    if below == above:
        return rows[below]
    return rows[below] + (rows[above] - rows[below]) * (batch - below) / (above - below)


def figure_4_with_kv(one_ms: float, heaviest_ms: float, modelled_kv: tuple[float, float],
                     kv: tuple[float, float]) -> float:
    """Figure 4's heaviest/one-request ratio with the modelled KV stream of each step
    (one request, heaviest) replaced by ``kv``: everything else in the steps kept."""
    return (heaviest_ms - modelled_kv[1] + kv[1]) / (one_ms - modelled_kv[0] + kv[0])


def kernel_ratio_for_ratio(one_ms: float, heaviest_ms: float, modelled_kv: tuple[float, float],
                           flash_kv: tuple[float, float], target: float) -> float:
    """The factor k on the FlashAttention KV times at which ``figure_4_with_kv`` equals
    ``target``: what Figure 4, measured with the artifact's kernel, says that kernel costs."""
    rest_one, rest_heavy = one_ms - modelled_kv[0], heaviest_ms - modelled_kv[1]
    return (target * rest_one - rest_heavy) / (flash_kv[1] - target * flash_kv[0])


@dataclass(frozen=True)
class DecodeAttentionMeasurement:
    """Decode attention of ``batch`` sequences of ``kv_tokens`` context, one layer, measured
    on another GA102 card by Vidur's profiler — with FlashAttention's paged decode kernel, not
    the PagedAttention V1 kernel the artifact's vLLM runs (``single_query_cached_kv_attention``,
    AlibabaPAI/llumnix osdi24ae at 92f6f9d, ``vllm/model_executor/layers/attention.py`` lines
    127-147; V2 came with vLLM 0.2.1, https://github.com/vllm-project/vllm/pull/1348): the same
    bytes through another kernel, so its level is context for the model, not a check of it."""

    model: str
    device: str
    memory_bandwidth_gb_per_s: float
    batch: int
    kv_tokens: int
    measured_ms_per_layer: float

    @property
    def on_a10_ms_per_layer(self) -> float:
        """Transferred by memory bandwidth: decode attention reads every cached block once."""
        return self.measured_ms_per_layer * self.memory_bandwidth_gb_per_s / A10_BANDWIDTH_GB_PER_S


def load_decode_attention_measurements() -> list[DecodeAttentionMeasurement]:
    return _records(DecodeAttentionMeasurement, DECODE_ATTENTION_CSV)


@dataclass(frozen=True)
class PrefillAttentionMeasurement:
    """Causal attention over one fresh prompt of ``tokens`` tokens, one layer, measured on
    another GA102 card by Vidur's profiler (FlashAttention; the artifact's vLLM runs xformers'
    ``memory_efficient_attention_forward`` for prompts, ``vllm/model_executor/layers/attention.py``
    line 115 at the commit above, which vLLM measured as fast as FlashAttention's, vllm#3010)."""

    model: str
    device: str
    fp16_tflops: float
    tokens: int
    measured_ms_per_layer: float

    @property
    def on_a10_ms_per_layer(self) -> float:
        """Transferred by FP16 tensor throughput: prefill attention is compute-bound."""
        return self.measured_ms_per_layer * self.fp16_tflops / A10_FP16_TFLOPS


def load_prefill_attention_measurements() -> list[PrefillAttentionMeasurement]:
    return _records(PrefillAttentionMeasurement, PREFILL_ATTENTION_CSV)


def causal_attention_flops(tokens: int, heads: int, head_dim: int) -> float:
    """FLOPs of one layer's causal attention over a fresh prompt: QK^T and PV, 2 FLOPs per
    multiply-add each, over the n(n+1)/2 query-key pairs a causal mask keeps."""
    return 4.0 * heads * head_dim * tokens * (tokens + 1) / 2


def table_attention_bound_ms(prefill_ms: dict[int, float], cpu_ms: float, layers: int, tokens: int) -> float:
    """The prefill attention per layer at ``tokens`` that the A10 table's own growth from
    ``tokens`` to twice as many leaves room for, with the operators linear in tokens,
    attention quadratic and the engine's CPU work ``cpu_ms`` fixed:
    T(2n) − c = 2 (T(n) − c − A) + 4 A, so A = (T(2n) − 2 T(n) + c) / 2 over all layers."""
    return (prefill_ms[2 * tokens] - 2 * prefill_ms[tokens] + cpu_ms) / 2 / layers


# -- other GPUs: published measurements of LLaMA-7B-shaped serving on the device itself --------

DEVICE_REFERENCE_TOLERANCE = 0.15  # |model / measured - 1| of a device's check rows (issue #33)


@dataclass(frozen=True)
class DeviceReference:
    """A published generation latency of a LLaMA-7B-shaped model on one of the catalog's GPUs.

    ``scope`` says what it covers: ``generation_gpu_with_sampler`` — a batch of ``batch``
    prompts of ``prompt_tokens`` tokens generating ``output_tokens`` each (one prefill, then
    ``output_tokens - 1`` decode steps), on an engine without vLLM's host work per step
    (TensorRT-LLM): compared with the model's GPU time plus its sampler phase (LM head,
    sampling), the engine's other CPU phases being vLLM's own."""

    role: str  # "check" (within DEVICE_REFERENCE_TOLERANCE, or calibrate fails) or "context"
    engine: str
    device: str  # the catalog's device string
    gpu: str
    batch: int
    prompt_tokens: int
    output_tokens: int
    scope: str
    measured_ms: float
    source: str


def load_device_references() -> list[DeviceReference]:
    return _records(DeviceReference, DEVICE_REFERENCES_CSV)


def generation_gpu_with_sampler_ms(
    reference: DeviceReference,
    batch_time: Callable[..., float],
    overhead_s: Callable[[int], float],
    sampler_s: Callable[[int], float],
) -> float:
    """The model's figure for a ``generation_gpu_with_sampler`` reference, ms: every
    iteration's time less the engine's CPU work (``overhead_s``), plus its sampler phase."""
    batch, prompt = reference.batch, reference.prompt_tokens
    prefill = batch_time(tuple((prompt, prompt) for _ in range(batch)), 0, 0)
    steps = [batch_time((), batch, batch * (prompt + k)) for k in range(1, reference.output_tokens)]
    per_iteration_extra = sampler_s(batch) - overhead_s(batch)
    return (prefill + sum(steps) + (1 + len(steps)) * per_iteration_extra) * 1e3
