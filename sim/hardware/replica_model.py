"""The replica model the simulator calls: iteration times and KV capacity of one instance.

Iteration times are Vidur's random-forest predictor on a layout's shipped profiles (the GPU
time), plus the serving engine's CPU work per iteration (``overheads``: by default the line of
the device SKU entry's reference), which a run's config can change
along with a multiplier on the GPU time of decode-only iterations. Fitting it needs
scikit-learn and takes seconds, so it happens once per content hash of (profiles, fitted
constants, predictor settings, library versions): the cold start fits Vidur's predictor and
saves its prediction tables as arrays; every later start loads the arrays and evaluates them
with Vidur's own rounding and summation (``timing``). Tests check that this equals Vidur's
``get_execution_time(...).total_time`` on random batches.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import tempfile
from dataclasses import asdict
from importlib.metadata import version
from pathlib import Path
from typing import Optional

import numpy as np
from vidur.config import CacheConfig

import sim.hardware.custom_all_reduce as custom_all_reduce
import sim.hardware.flash_attention as flash_attention
import sim.hardware.overheads as overheads
import sim.hardware.predictor_settings as settings
from sim.hardware.catalog import DEFAULT_DEVICE, FIT_JSON, Layout, find_layout
from sim.hardware.iteration_memo import IterationMemo
from sim.hardware.memory import DEFAULT_MAX_NUM_SEQS, ProfileRunMemoryPlanner
from sim.hardware.skus import PERF_MODEL
from sim.hardware.timing import (
    KV_GRANULARITY,
    PREFILL_CHUNK_ROUNDING,
    LookupKey,
    decode_attention_ms,
    iteration_seconds,
    overlapped_iteration_seconds,
)

CACHE_FORMAT = 2  # bump when the saved tables change meaning (2: comm_ms)
COLD_START_HINT_S = 5  # what the one-line notice promises; benchmarks/ measures it
VIDUR_SUBDIR = "vidur"


def default_cache_dir() -> Path:
    return Path(os.environ.get("LLUMSIM_CACHE_DIR") or Path.home() / ".cache" / "llumsim")


def content_hash(layout: Layout) -> str:
    """Hash of everything the prediction tables are a function of."""
    digest = hashlib.sha256()
    device = layout.device_sku
    recipe = {
        "format": CACHE_FORMAT,
        "layout": asdict(layout),
        "settings": {
            "MAX_TOKENS": settings.MAX_TOKENS,
            "MAX_DECODE_BATCH": settings.MAX_DECODE_BATCH,
            "PROFILE_BLOCK_SIZE": settings.PROFILE_BLOCK_SIZE,
            **device.predictor.recipe(),
        },
        "versions": {pkg: version(pkg) for pkg in ("vidur", "scikit-learn")},
    }
    digest.update(json.dumps(recipe, sort_keys=True).encode())
    # built profiles come with the fit they were written from
    fit = (FIT_JSON,) if device.profiles == PERF_MODEL else ()
    for path in (*layout.profile_files(), *fit):
        if path.exists():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _fit_tables(layout: Layout, vidur_cache_dir: Path) -> dict[str, np.ndarray]:
    """Cold path: fit Vidur's predictor (quietly: Vidur logs to stdout) and tabulate it."""
    from sim.hardware.vidur_predictor import LocalProfilePredictor, prediction_tables

    vidur_logger = logging.getLogger("vidur")
    level = vidur_logger.level
    vidur_logger.setLevel(logging.WARNING)
    try:
        return prediction_tables(LocalProfilePredictor(layout, str(vidur_cache_dir)))
    finally:
        vidur_logger.setLevel(level)


def cache_entry(layout: Layout, cache_dir: str | os.PathLike | None = None) -> Path:
    """Our cache folder for the layout's current profiles: ``tables.npz`` and, under
    ``VIDUR_SUBDIR``, Vidur's own predictor cache (its keys are not content hashes)."""
    root = Path(cache_dir or default_cache_dir())
    return root / f"{layout.model}-{layout.device}-tp{layout.tensor_parallel}-{content_hash(layout)}"


def load_tables(layout: Layout, cache_dir: str | os.PathLike | None = None) -> dict[str, np.ndarray]:
    """The prediction tables of a layout, fitting Vidur's predictor first if not cached."""
    entry = cache_entry(layout, cache_dir)
    tables_file = entry / "tables.npz"
    if not tables_file.exists():
        print(
            f"llumsim: fitting Vidur's predictor for {layout.model} on {layout.device} "
            f"(first run, ~{COLD_START_HINT_S} s)…",
            file=sys.stderr,
        )
        entry.mkdir(parents=True, exist_ok=True)
        tables = _fit_tables(layout, entry / VIDUR_SUBDIR)
        with tempfile.NamedTemporaryFile(dir=entry, suffix=".npz", delete=False) as handle:
            np.savez(handle, **tables)
        os.replace(handle.name, tables_file)  # atomic: concurrent cold starts are safe
    with np.load(tables_file) as saved:
        return {name: saved[name] for name in saved.files}


class ReplicaModel:
    """Iteration time and KV capacity of one instance (all its tensor-parallel GPUs)."""

    def __init__(
        self,
        layout: Layout,
        tables: dict[str, np.ndarray],
        *,
        block_size: int,
        kv_capacity_blocks: int,
        kv_bytes_per_token: int,
        overhead_base: float,
        overhead_per_request: float,
        decode_scale: float,
        prefill_scale: float = 1.0,
        overhead_per_output_token: float = 0.0,
        overlapped_base: float = 0.0,
        overlapped_per_request: float = 0.0,
        all_reduce_ms: Optional[np.ndarray] = None,
        decode_attention_ms: Optional[np.ndarray] = None,
    ) -> None:
        replica = layout.replica_config()
        self.layout = layout
        self.model = layout.model
        self.device = layout.device
        self.tensor_parallel = layout.tensor_parallel
        self.block_size = block_size
        self.kv_capacity_blocks = kv_capacity_blocks
        self.kv_bytes_per_token = kv_bytes_per_token
        self.max_tokens = settings.MAX_TOKENS  # profiled: per iteration and per sequence
        self.max_batch_size = settings.MAX_DECODE_BATCH  # profiled decode batch sizes
        self._num_layers = replica.num_layers_per_pipeline_stage
        self.num_layers = replica.model_config.num_layers  # the layers a KV cache spans
        self._batching_overhead = settings.decode_batching_overhead(
            settings.predictor_config(layout, cache_dir=""), replica.model_config
        )
        self.overhead_base = overhead_base  # s per iteration (engine CPU work)
        self.overhead_per_request = overhead_per_request  # s per request in the batch
        # s per output token the batch's requests hold: the engine re-detokenizes each whole
        # output every step (vLLM 0.1.x); the batch former, which knows the outputs, adds it
        self.overhead_per_output_token = overhead_per_output_token
        self.decode_scale = decode_scale  # × GPU time of iterations without a prefill chunk
        self.prefill_scale = prefill_scale  # × GPU time of iterations with one
        self._overhead_base_ms = overhead_base * 1e3
        self._overhead_per_request_ms = overhead_per_request * 1e3
        # async scheduling: the part of the host work run beside the GPU's (s; 0: none)
        self._overlapped_ms = (overlapped_base * 1e3, overlapped_per_request * 1e3)
        # Python lists: scalar indexing is several times faster than on numpy arrays.
        self._block_token_ms = _with_all_reduce(tables, all_reduce_ms).tolist()
        # the engine's decode kernel where it is not the profiles' (vLLM V1: flash_attention)
        self._attn_decode_ms = (tables["attn_decode_ms"] if decode_attention_ms is None else decode_attention_ms).tolist()
        self._attn_prefill_ms = tables["attn_prefill_ms"].tolist()
        # batch_time(prefills, num_decodes, decode_kv_tokens): seconds for one iteration.
        # ``prefills``: (q_tokens, kv_tokens after this iteration) per prefilling request (a
        # fresh prefill has q == kv); ``num_decodes`` requests decode one token each, and
        # ``decode_kv_tokens`` is the sum of their KV tokens after this iteration.
        # decode_batch_time(num_decodes, decode_kv_tokens): the same for a decode-only one.
        # Both are memoised on Vidur's lookup key (``_evaluate`` computes a new key) and are
        # the memo's own bound methods, so the hot path runs no frame of this class.
        memo = IterationMemo(self._evaluate)
        self.batch_time = memo.batch_time
        self.decode_batch_time = memo.decode_batch_time

    def overhead_time(self, num_requests: int) -> float:
        """Seconds of engine CPU work in an iteration of ``num_requests`` requests: the part of
        ``batch_time`` that ``overhead_base``/``overhead_per_request`` set, added exactly."""
        return self.overhead_base + self.overhead_per_request * num_requests

    def prefill_time(self, tokens: int) -> float:
        """Seconds to prefill one fresh sequence of ``tokens`` tokens on an idle instance."""
        return self.batch_time(((tokens, tokens),), 0, 0)

    def decode_time(self, batch_size: int, kv_tokens_per_request: int) -> float:
        """Seconds for one decode step of ``batch_size`` requests of equal context."""
        return self.batch_time((), batch_size, batch_size * kv_tokens_per_request)

    def _evaluate(self, key: LookupKey) -> float:
        num_tokens, decode_batch, decode_kv, chunks, num_requests = key
        _check(num_requests > 0, "empty batch: no prefills and no decodes")
        _check(
            num_tokens <= settings.MAX_TOKENS,
            f"{num_tokens} tokens in one iteration; the profiles cover {settings.MAX_TOKENS}",
        )
        block_ms = self._block_token_ms[num_tokens]
        if decode_batch:
            _check(
                0 < decode_kv <= settings.MAX_TOKENS,
                f"mean decode KV of {decode_kv} tokens (rounded); must be in 1.."
                f"{settings.MAX_TOKENS} (decode_kv_tokens counts each request's new token too)",
            )
            # Past the profiled batch (vLLM admits max_num_seqs by prefill, but the artifact's
            # migrate_in checks free blocks only, so an instance with a large KV cache can run
            # more), decode attention streams each further sequence's KV at the bandwidth the
            # profiled batch reached: linear in sequences.
            profiled = min(decode_batch, settings.MAX_DECODE_BATCH)
            attention = self._attn_decode_ms[profiled][decode_kv // KV_GRANULARITY]
            if decode_batch > profiled:  # (within the profiles the table value, bit for bit)
                attention = attention * decode_batch / profiled
            block_ms += decode_attention_ms(attention, decode_batch, self._batching_overhead)
        for kv_tokens, chunk in chunks:
            _check(
                0 < chunk <= kv_tokens <= settings.MAX_TOKENS,
                f"prefill chunk {chunk} with KV {kv_tokens} (rounded); need 0 < q <= kv <= "
                f"{settings.MAX_TOKENS} (kv counts the tokens of this iteration)",
            )
            block_ms += self._attn_prefill_ms[kv_tokens // KV_GRANULARITY][
                chunk // PREFILL_CHUNK_ROUNDING
            ]
        scale = self.prefill_scale if chunks else self.decode_scale
        if self._overlapped_ms != (0.0, 0.0):
            return overlapped_iteration_seconds(
                self._num_layers,
                block_ms,
                self._overhead_base_ms,
                self._overhead_per_request_ms,
                *self._overlapped_ms,
                num_requests,
                scale,
            )
        return iteration_seconds(
            self._num_layers, block_ms, self._overhead_base_ms, self._overhead_per_request_ms, num_requests, scale
        )


def _with_all_reduce(tables: dict[str, np.ndarray], all_reduce_ms: Optional[np.ndarray]) -> np.ndarray:
    """The per-block time by tokens with the engine's own all-reduce per call (``all_reduce_ms``,
    NaN: keep the profile's) in place of the profile's two calls per block."""
    block = tables["block_token_ms"]
    if all_reduce_ms is None:
        return block
    own = ~np.isnan(all_reduce_ms)
    replaced = block.copy()
    replaced[own] = block[own] - 2 * tables["comm_ms"][own] + 2 * all_reduce_ms[own]
    return replaced


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def load_replica_model(
    model: str = "llama-7b",
    device: str = DEFAULT_DEVICE,
    tensor_parallel: int | None = None,
    *,
    block_size: int = 16,
    gpu_memory_utilization: float = 0.9,
    max_batched_tokens: int = 12800,
    max_batch_size: int = DEFAULT_MAX_NUM_SEQS,
    kv_capacity_blocks: int | None = None,
    cache_dir: str | None = None,
    overhead_base: float | None = None,
    overhead_per_request: float | None = None,
    overhead_per_output_token: float | None = None,
    decode_scale: float = 1.0,
    prefill_scale: float = 1.0,
    kv_scale: float = 1.0,
    engine: str = "vllm-0.1.2",
    async_scheduling: bool = False,
) -> ReplicaModel:
    """A ready replica model; the first call per profile version fits Vidur's predictor.

    ``kv_capacity_blocks=None`` sizes the KV cache like vLLM (``memory``); a number
    overrides it. ``max_batched_tokens`` and ``max_batch_size`` (vLLM's max_num_seqs) shape
    the profile run whose peak memory the cache is sized after. ``overhead_base`` (s per iteration) and ``overhead_per_request``
    (s per request in the batch) are the engine's CPU work, added to every iteration; None
    (the default) is vLLM's, measured: the line of the device entry's ``cpu_overheads``
    reference (``overheads``), which the calibration assumes. ``overhead_per_output_token``
    (s per output token the batched requests hold; None: vLLM 0.1.2's detokenizer,
    ``overheads.DETOKENIZE_PER_OUTPUT_TOKEN_MS``) is carried for the batch former, which
    adds it: ``batch_time`` does not see the requests' outputs.
    ``decode_scale`` multiplies the GPU time of iterations without a prefill chunk (1.0:
    the calibration) and ``prefill_scale`` those with one; ``kv_scale`` multiplies the
    planned KV blocks (not an explicit ``kv_capacity_blocks``): the bands of model error a
    conclusion is checked against. None of them changes the prediction tables or their cache.
    ``engine`` names the serving engine whose host work the overheads left at None are:
    ``vllm-0.1.2`` (the artifact's) or ``vllm-v1`` (``overheads.V1_PHASES``, no detokenizer
    on the step's critical path; ``overheads.HOST_LINES``). ``async_scheduling`` (V1 only) runs
    the scheduler and input preparation of the measured line beside the GPU
    (``overheads.V1_OVERLAPPED_PHASES``); with overheads given explicitly it does not apply.
    """
    layout = find_layout(model, device, tensor_parallel)
    _check(engine in overheads.HOST_LINES, f"unknown serving engine {engine!r} (known: {', '.join(overheads.HOST_LINES)})")
    line = overheads.HOST_LINES[engine](layout.device_sku.cpu_overheads)
    _check(not async_scheduling or engine == "vllm-v1", f"async scheduling is vLLM V1's; engine {engine!r} has none")
    overlapped = (
        overheads.v1_overlapped(layout.device_sku.cpu_overheads)
        if async_scheduling and overhead_base is None and overhead_per_request is None
        else overheads.EngineOverheads(0.0, 0.0)
    )
    if overhead_base is None:
        overhead_base = line.base_ms * 1e-3
    if overhead_per_request is None:
        overhead_per_request = line.per_request_ms * 1e-3
    if overhead_per_output_token is None:
        overhead_per_output_token = line.per_output_token_ms * 1e-3
    _check(
        0 < max_batched_tokens <= settings.MAX_TOKENS,
        f"max_batched_tokens must be in 1..{settings.MAX_TOKENS} (the profiled range), "
        f"got {max_batched_tokens}",
    )
    planner = ProfileRunMemoryPlanner(
        layout.replica_config(),
        CacheConfig(block_size=block_size),
        gpu_memory_utilization,
        max_batched_tokens,
        max_batch_size,
    )
    _check(
        kv_capacity_blocks is None or kv_capacity_blocks >= 1,
        f"kv_capacity_blocks must be >= 1, got {kv_capacity_blocks}",
    )
    for name, value in (
        ("overhead_base", overhead_base),
        ("overhead_per_request", overhead_per_request),
        ("overhead_per_output_token", overhead_per_output_token),
    ):
        _check(value >= 0, f"{name} must be >= 0 s, got {value}")
    for name, value in (("decode_scale", decode_scale), ("prefill_scale", prefill_scale), ("kv_scale", kv_scale)):
        _check(value > 0, f"{name} must be > 0, got {value}")
    return ReplicaModel(
        layout,
        load_tables(layout, cache_dir),
        block_size=block_size,
        kv_capacity_blocks=(
            max(1, round(planner.get_num_blocks() * kv_scale)) if kv_capacity_blocks is None else kv_capacity_blocks
        ),
        kv_bytes_per_token=planner.kv_bytes_per_token_per_device() * layout.tensor_parallel,
        overhead_base=overhead_base,
        overhead_per_request=overhead_per_request,
        decode_scale=decode_scale,
        prefill_scale=prefill_scale,
        overhead_per_output_token=overhead_per_output_token,
        overlapped_base=overlapped.base_ms * 1e-3,
        overlapped_per_request=overlapped.vectorised_per_request_ms * 1e-3,
        # vLLM V1 all-reduces with its own kernel on an NVLink node (custom_all_reduce)
        all_reduce_ms=(
            custom_all_reduce.per_call_ms(layout, np.arange(settings.MAX_TOKENS + 1))
            if engine == "vllm-v1" and layout.tensor_parallel > 1
            else None
        ),
        decode_attention_ms=(
            flash_attention.decode_table(layout, settings.MAX_DECODE_BATCH, KV_GRANULARITY, settings.MAX_TOKENS)
            if engine == "vllm-v1"
            else None
        ),
    )
