"""An explicit GA102 performance model: the source of the shipped Vidur profiles.

We have no A10 to profile on, only the end-to-end A10 timings of the Llumnix artifact
(``data/a10_measurements.csv``). So the per-operator timings Vidur wants are produced by a
roofline model of each operator on the A10 (GA102: 72 SMs, 125 TFLOP/s FP16 tensor,
600 GB/s GDDR6), with a handful of efficiency constants fitted to those timings by
``build_profiles``:

* GEMMs (QKV, output, gate/up, down projections): kernel cost + a smooth maximum of
  FLOPs / (peak × gemm_efficiency) and bytes moved / (bandwidth × memory_efficiency), or
  × tiled_memory_efficiency above ``SKINNY_GEMM_TOKENS`` tokens: cuBLAS serves the skinniest
  matrices with kernels that stream the weights at nearly the bus rate, and wider ones with
  tiled kernels that do not (Vidur's A40 profile of LLaMA-2-7B, ``data/ga102_linear_layers.csv``:
  the blocks' token operators take 26.4 ms at 32 tokens and 29.3 ms at 48, all memory-bound).
* Element-wise operators (norms, RoPE, SiLU·mul, residual add, KV-cache save): kernel cost +
  bytes moved / (bandwidth × memory_efficiency).
* Prefill attention: like a GEMM, with its own compute efficiency, causal FLOPs over the
  chunk and its context.
* Decode attention: reads the whole KV cache of the batch, through vLLM's PagedAttention
  kernel — a different kernel from the weight-streaming GEMMs, gathering 16-token blocks
  through a block table, so it gets its own bandwidth efficiency. (Llumnix runs vLLM 0.1.x,
  whose only decode kernel is PagedAttention V1: one thread block per sequence and head;
  vLLM later added V2 because V1 is slow at small batches,
  https://github.com/vllm-project/vllm/pull/1348.) A batch of few sequences × heads per GPU
  cannot keep all 72 SMs pulling from memory: bandwidth is further scaled by a saturating
  occupancy of (sequences × heads) / (SMs × blocks_per_sm_to_saturate); this is what makes
  the 8k-token, one-sequence LLaMA-30B decode (13 heads per GPU) slower than the 4k one.
  The A10 table's decode rows all hold ~8k tokens, so they cannot tell the weight stream
  from the KV stream; the Llumnix paper's Figure 4 ratio can (``build_profiles``).
* All-reduce (tensor parallelism over PCIe, ring): latency + 2(n−1)/n × bytes / bus bandwidth.
* Per-iteration work of the serving engine on the CPU (scheduling, input preparation,
  sampling, output processing): base + per_request × requests, from measurements of vLLM
  (``overheads``). Vidur 0.0.26 has no term for it, so ``ReplicaModel`` adds it; here it is
  only a fixed part of what the fit must reproduce.

All times are in milliseconds, as in Vidur's profiles. numpy in, numpy out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np
from numpy.typing import ArrayLike
from vidur.config import BaseDeviceSKUConfig, ReplicaConfig

BYTES_PER_VALUE = 2  # FP16 weights, activations and KV cache
# Sharpness of the smooth maxima: a p-norm of the two roofline times (p → ∞ is the hard
# max). Fixed, not fitted: the calibration rows are either clearly memory- or clearly
# compute-bound, so they cannot pin it down.
ROOFLINE_SHARPNESS = 4.0
OCCUPANCY_SHARPNESS = 4.0
# The widest batch cuBLAS's skinny-matrix kernels serve on GA102: Vidur's A40 token operators
# (LLaMA-2-7B, TP 1) stay within 10% of their one-token time up to 32 tokens and jump by 11%
# between 32 and 48 (the gate/up projection 0.36 -> 0.455 ms), a kernel change, not more bytes.
SKINNY_GEMM_TOKENS = 32


@dataclass(frozen=True)
class Device:
    """The datasheet figures the model divides by."""

    peak_flops: float  # FLOP/s, FP16 tensor, dense
    memory_bandwidth: float  # bytes/s
    num_sms: int

    @classmethod
    def from_vidur(cls, device_config: BaseDeviceSKUConfig) -> "Device":
        return cls(
            peak_flops=device_config.fp16_tflops * 1e12,
            memory_bandwidth=device_config.memory_bandwidth_gb_per_s * 1e9,
            num_sms=device_config.num_sms,
        )


@dataclass(frozen=True)
class Shape:
    """One tensor-parallel worker's share of a transformer block."""

    num_layers: int
    hidden: int
    mlp_per_worker: int
    q_heads_per_worker: int
    kv_heads_per_worker: int
    head_dim: int
    tensor_parallel: int
    gated_mlp: bool

    @classmethod
    def from_vidur(cls, replica_config: ReplicaConfig) -> "Shape":
        model = replica_config.model_config
        tp = replica_config.tensor_parallel_size
        return cls(
            num_layers=model.num_layers,
            hidden=model.embedding_dim,
            mlp_per_worker=model.mlp_hidden_dim // tp,
            q_heads_per_worker=replica_config.q_heads_per_tensor_parallel_worker,
            kv_heads_per_worker=replica_config.kv_heads_per_tensor_parallel_worker,
            head_dim=replica_config.attention_head_dim,
            tensor_parallel=tp,
            gated_mlp=model.use_gated_mlp,
        )


@dataclass(frozen=True)
class Constants:
    """The fitted constants (see ``build_profiles``); names say what each one scales."""

    gemm_efficiency: float  # fraction of peak FLOP/s a projection GEMM reaches
    attention_efficiency: float  # fraction of peak FLOP/s prefill attention reaches
    memory_efficiency: float  # fraction of peak bandwidth streaming kernels (skinny GEMMs) reach
    tiled_memory_efficiency: float  # ... the tiled GEMMs of more than SKINNY_GEMM_TOKENS tokens
    decode_attention_efficiency: float  # fraction of peak bandwidth paged decode attention reaches
    blocks_per_sm_to_saturate: float  # decode-attention thread blocks per SM for full bandwidth
    kernel_overhead_us: float  # fixed cost of every kernel (launch, tail)
    all_reduce_latency_us: float
    all_reduce_bus_gb_per_s: float
    overhead_base_ms: float  # CPU work per iteration, outside the transformer blocks
    overhead_per_request_ms: float  # CPU work per request in the batch

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def _smooth_max(a, b, sharpness: float):
    return (a**sharpness + b**sharpness) ** (1.0 / sharpness)


class PerfModel:
    """Operator times of one model shape on one device, in Vidur's operator vocabulary."""

    def __init__(self, device: Device, shape: Shape, constants: Constants) -> None:
        self.device = device
        self.shape = shape
        self.constants = constants

    def _kernel_ms(self):
        return self.constants.kernel_overhead_us * 1e-3

    def _memory_ms(self, num_bytes, efficiency=None):
        """Time to move ``num_bytes`` at ``efficiency`` × peak (default: the GEMMs' efficiency)."""
        if efficiency is None:
            efficiency = self.constants.memory_efficiency
        return num_bytes / (self.device.memory_bandwidth * efficiency) * 1e3

    def _compute_ms(self, flops, efficiency: float):
        return flops / (self.device.peak_flops * efficiency) * 1e3

    def _gemm_ms(self, num_tokens, k: int, n: int):
        flops = 2.0 * num_tokens * k * n
        moved = BYTES_PER_VALUE * (k * n + num_tokens * k + num_tokens * n)
        streaming = np.where(
            num_tokens > SKINNY_GEMM_TOKENS,
            self.constants.tiled_memory_efficiency,
            self.constants.memory_efficiency,
        )
        return self._kernel_ms() + _smooth_max(
            self._compute_ms(flops, self.constants.gemm_efficiency),
            self._memory_ms(moved, streaming),
            ROOFLINE_SHARPNESS,
        )

    def _elementwise_ms(self, num_bytes):
        return self._kernel_ms() + self._memory_ms(num_bytes)

    def token_ops(self, num_tokens: ArrayLike) -> dict[str, np.ndarray]:
        """Every operator Vidur keys by the batch's token count (``mlp.csv`` columns)."""
        s = self.shape
        t = np.asarray(num_tokens, dtype=float)
        q_width = s.q_heads_per_worker * s.head_dim
        kv_width = s.kv_heads_per_worker * s.head_dim
        up_width = (2 if s.gated_mlp else 1) * s.mlp_per_worker
        b = BYTES_PER_VALUE
        return {
            "attn_pre_proj": self._gemm_ms(t, s.hidden, q_width + 2 * kv_width),
            "attn_post_proj": self._gemm_ms(t, q_width, s.hidden),
            "mlp_up_proj": self._gemm_ms(t, s.hidden, up_width),
            "mlp_down_proj": self._gemm_ms(t, s.mlp_per_worker, s.hidden),
            # read gate and up, write their SiLU product
            "mlp_act": self._elementwise_ms(b * t * (up_width + s.mlp_per_worker)),
            # read and write one hidden vector per token
            "input_layernorm": self._elementwise_ms(b * t * 2 * s.hidden),
            "post_attention_layernorm": self._elementwise_ms(b * t * 2 * s.hidden),
            # rotate q and k in place
            "attn_rope": self._elementwise_ms(b * t * 2 * (q_width + kv_width)),
            # two inputs, one output
            "add": self._elementwise_ms(b * t * 3 * s.hidden),
        }

    def attn_kv_cache_save(self, num_tokens: ArrayLike) -> np.ndarray:
        """Copy the new tokens' K and V into the paged cache (read + write)."""
        kv_width = self.shape.kv_heads_per_worker * self.shape.head_dim
        return self._elementwise_ms(BYTES_PER_VALUE * np.asarray(num_tokens, float) * 4 * kv_width)

    def attn_prefill(self, kv_tokens: ArrayLike, chunk_tokens: ArrayLike) -> np.ndarray:
        """Causal attention of a chunk of ``chunk_tokens`` whose context, chunk included, is
        ``kv_tokens`` long (the way this Vidur release queries it: Batch.num_kv_tokens)."""
        s = self.shape
        kv = np.asarray(kv_tokens, dtype=float)
        q = np.asarray(chunk_tokens, dtype=float)
        # query i of the chunk sees the earlier context plus i+1 chunk tokens
        pairs = q * (kv - q) + q * (q + 1) / 2
        flops = 4.0 * s.head_dim * s.q_heads_per_worker * pairs
        moved = BYTES_PER_VALUE * s.head_dim * (
            2 * q * s.q_heads_per_worker + 2 * kv * s.kv_heads_per_worker
        )
        return self._kernel_ms() + _smooth_max(
            self._compute_ms(flops, self.constants.attention_efficiency),
            self._memory_ms(moved),
            ROOFLINE_SHARPNESS,
        )

    def decode_occupancy(self, batch_size: ArrayLike) -> np.ndarray:
        """Fraction of the memory bandwidth decode attention can draw with this many sequences."""
        work = np.asarray(batch_size, dtype=float) * self.shape.q_heads_per_worker
        x = work / (self.device.num_sms * self.constants.blocks_per_sm_to_saturate)
        return x / (1 + x**OCCUPANCY_SHARPNESS) ** (1 / OCCUPANCY_SHARPNESS)

    def attn_decode(self, batch_size: ArrayLike, kv_tokens: ArrayLike) -> np.ndarray:
        """One new token for each of ``batch_size`` sequences of ``kv_tokens`` context."""
        s = self.shape
        b = np.asarray(batch_size, dtype=float)
        kv = np.asarray(kv_tokens, dtype=float)
        moved = BYTES_PER_VALUE * s.head_dim * b * (
            2 * kv * s.kv_heads_per_worker + 2 * s.q_heads_per_worker
        )
        efficiency = self.constants.decode_attention_efficiency * self.decode_occupancy(b)
        return self._kernel_ms() + self._memory_ms(moved, efficiency)


def all_reduce_ms(size_bytes: ArrayLike, num_workers: int, constants: Constants) -> np.ndarray:
    """Ring all-reduce of ``size_bytes`` over ``num_workers`` GPUs on PCIe."""
    size = np.asarray(size_bytes, dtype=float)
    bus = constants.all_reduce_bus_gb_per_s * 1e9
    return constants.all_reduce_latency_us * 1e-3 + 2 * (num_workers - 1) / num_workers * size / bus * 1e3
