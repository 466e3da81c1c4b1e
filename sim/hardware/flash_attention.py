"""vLLM V1's decode attention: FlashAttention's paged decode kernel, not the artifact's.

The attention tables of the catalog's GPUs model the Llumnix artifact's kernel (PagedAttention
V1 streaming the KV cache at the fraction of bandwidth fitted on the A10, ``operator_profiles``).
vLLM V1 decodes with FlashAttention's kernel (``vllm/v1/attention/backends/flash_attn.py``, the
default backend on these GPUs), which streams the cache near the memory's bandwidth once the
batch is large: Vidur measured it (``attention_backend FLASH_ATTENTION``, LLaMA-2-7B, batch
1-128 × 256-4,032 tokens) on an A100 80GB, at up to half the time of the artifact's kernel,
and on an A40; each device entry names the measurement it takes (``decode_attention``).

A decode step's attention reads each sequence's KV once, so another shape is carried over by
the bytes a sequence streams — ``kv_tokens`` × KV heads per GPU × head size × 2 (keys and
values) × 2 bytes — looked up at the measured model's context of the same bytes; another GPU of
the same measurement by the ratio of the datasheets' memory bandwidths (the H100, whose kernel
is FlashAttention 3, from the A100's FlashAttention 2: a stated transfer). Between measured
points the time is linear in batch and context; outside them it goes in proportion to the bytes
(bandwidth-bound), but never under one short sequence's measured time (the kernel's launch and
latency floor).
"""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

import numpy as np

from sim.hardware.catalog import DATA_DIR, Layout, find_layout

BYTES_PER_ELEMENT = 2


@lru_cache(maxsize=None)
def _grid(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, str]:
    """Batches, contexts, ms per layer [batch, context], the measuring GPU's bandwidth and the
    measured model (the catalog's name of its shape)."""
    with open(Path(DATA_DIR / name), newline="") as handle:
        rows = list(csv.DictReader(handle))
    batches = np.array(sorted({int(r["batch"]) for r in rows}), dtype=float)
    contexts = np.array(sorted({int(r["kv_tokens"]) for r in rows}), dtype=float)
    times = np.full((len(batches), len(contexts)), np.nan)
    for r in rows:
        times[np.searchsorted(batches, int(r["batch"])), np.searchsorted(contexts, int(r["kv_tokens"]))] = float(
            r["measured_ms_per_layer"]
        )
    if np.isnan(times).any():
        raise ValueError(f"{name}: the measurement is not a full batch × context grid")
    return batches, contexts, times, float(rows[0]["memory_bandwidth_gb_per_s"]), rows[0]["model"]


def kv_bytes_per_token(layout: Layout) -> int:
    """Bytes of one token's keys and values in one layer on one GPU of ``layout``."""
    model = layout.replica_config().model_config
    heads_per_gpu = max(1, model.num_kv_heads // layout.tensor_parallel)
    return heads_per_gpu * (model.embedding_dim // model.num_q_heads) * 2 * BYTES_PER_ELEMENT


def _along(points: np.ndarray, values: np.ndarray, x: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """``values`` at ``x`` along one axis: linear between points, in proportion past the last
    and below the first, never under ``floor``."""
    inside = np.interp(x, points, values)
    above = values[-1] * x / points[-1]
    below = np.maximum(values[0] * x / points[0], floor)
    return np.where(x > points[-1], above, np.where(x < points[0], below, inside))


def decode_table(layout: Layout, max_batch: int, kv_granularity: int, max_tokens: int) -> np.ndarray:
    """ms per layer of decode attention, ``[batch, mean context // kv_granularity]`` as the
    replica model looks it up (batch 0 and context slot 0 unused: NaN)."""
    batches, contexts, times, measured_bandwidth, model = _grid(layout.device_sku.decode_attention)
    scale = kv_bytes_per_token(layout) / kv_bytes_per_token(find_layout(model, layout.device, 1))
    slots = np.arange(max_tokens // kv_granularity + 1)
    equivalent = slots * kv_granularity * scale  # the measured model's context of the same bytes
    floor = times[0, 0]  # one sequence of the shortest context: the kernel's launch and latency
    by_context = np.array([_along(contexts, row, equivalent, floor) for row in times])  # [measured batch, slot]
    wanted = np.arange(max_batch + 1, dtype=float)
    table = np.array([_along(batches, column, wanted, floor) for column in by_context.T]).T
    table *= measured_bandwidth / layout.device_sku.memory_bandwidth_gb_per_s
    table[0, :] = np.nan
    table[:, 0] = np.nan
    return table
