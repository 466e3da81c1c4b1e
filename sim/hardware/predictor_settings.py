"""The profile grid and the settings of Vidur's random-forest predictor.

Shared by the profile build (what grid to write), the cold fit (how to configure Vidur) and
the run-time tables (their extents), so the three cannot drift apart. The grid is Vidur's
lookup resolution, the same for every device; the forest setting is a device's
(``DeviceData.predictor``, a ``PredictorSetting`` in ``skus``). Imports only ``vidur.config``,
which is cheap; the predictor itself (sklearn) lives in ``vidur_predictor``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vidur.config import (
    BaseExecutionTimePredictorConfig,
    BaseModelConfig,
    RandomForrestExecutionTimePredictorConfig,
)

from sim.hardware.timing import KV_GRANULARITY, NUM_TOKENS_ROUNDING, PREFILL_CHUNK_ROUNDING

if TYPE_CHECKING:
    from sim.hardware.catalog import Layout

# Profile grid = Vidur's own lookup resolution, so every key the predictor can be asked
# for is a profiled point and nothing is interpolated.
MAX_TOKENS = 16384  # per batch (rounded q tokens), per request (KV) and per prefill chunk
MAX_DECODE_BATCH = 256  # vLLM's default max_num_seqs
PROFILE_BLOCK_SIZE = 16  # paging granularity of the profiled attention kernels
TOKEN_GRID = range(NUM_TOKENS_ROUNDING, MAX_TOKENS + 1, NUM_TOKENS_ROUNDING)
KV_GRID = range(KV_GRANULARITY, MAX_TOKENS + 1, KV_GRANULARITY)
CHUNK_GRID = range(PREFILL_CHUNK_ROUNDING, MAX_TOKENS + 1, PREFILL_CHUNK_ROUNDING)
DECODE_BATCH_GRID = range(1, MAX_DECODE_BATCH + 1)
# Collective sizes in bytes: every 8 KiB is every size an all-reduce of a multiple of 8 FP16
# tokens takes for any hidden size that is a multiple of 512 (4096 and 6656 are).
ALL_REDUCE_SIZE_STEP = 8 * 1024
ALL_REDUCE_MAX_SIZE = 256 * 1024 * 1024


def predictor_config(layout: Layout, cache_dir: str) -> RandomForrestExecutionTimePredictorConfig:
    """Vidur's predictor config for one profiled layout, with its device's forest setting."""
    setting = layout.device_sku.predictor
    return RandomForrestExecutionTimePredictorConfig(
        model_profiling_dataset=f"llumsim/{layout.device}-{layout.vidur_model.replace('/', '-')}",
        network_profiling_dataset=f"llumsim/{layout.node}",
        prediction_hf_org="llumsim",
        prediction_hf_collection=setting.collection,
        prediction_max_tokens_per_request=MAX_TOKENS,
        prediction_max_prefill_chunk_size=MAX_TOKENS,
        prediction_max_batch_size=MAX_DECODE_BATCH,
        k_fold_cv_splits=setting.k_fold_cv_splits,
        num_training_job_threads=1,
        cache_dir=cache_dir,
        num_estimators=[setting.num_estimators],
        max_depth=[setting.max_depth],
        min_samples_split=[setting.min_samples_split],
    )


def tensor_parallel_comm_ms(
    all_reduce_ms: float, config: BaseExecutionTimePredictorConfig, tensor_parallel: int
) -> float:
    """Vidur's per-all-reduce charge: prediction + NCCL CPU launch (+ skew) overheads.

    ``all_reduce_ms`` may be a numpy array (a whole table).
    """
    if tensor_parallel == 1:
        return 0.0
    return (
        all_reduce_ms
        + config.nccl_cpu_launch_overhead_ms
        + config.nccl_cpu_skew_overhead_per_device_ms * tensor_parallel**1.25
    )


def decode_batching_overhead(
    config: BaseExecutionTimePredictorConfig, model_config: BaseModelConfig
) -> float:
    """Vidur adds a batching overhead to decode attention for grouped-query models only."""
    if model_config.num_q_heads > model_config.num_kv_heads:
        return config.attention_decode_batching_overhead_fraction
    return 0.0
