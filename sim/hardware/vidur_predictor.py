"""Vidur's random-forest predictor on our shipped profiles: the cold path.

Importing this module imports scikit-learn (~2 s here), so only a cold start does. It fits
Vidur's predictor once and turns its prediction dictionaries into the arrays that
``ReplicaModel`` evaluates on every later start.
"""

from __future__ import annotations

import numpy as np
from sklearn.ensemble import RandomForestRegressor
from vidur.config import CacheConfig
from vidur.execution_time_predictor.random_forrest_execution_time_predictor import (
    RandomForrestExecutionTimePredictor,
)

import sim.hardware.predictor_settings as settings
from sim.hardware.catalog import Layout
from sim.hardware.timing import (
    KV_GRANULARITY,
    PREFILL_CHUNK_ROUNDING,
    TOKEN_OPS,
    block_token_ops_ms,
)


class LocalProfilePredictor(RandomForrestExecutionTimePredictor):
    """Vidur's RandomForrestExecutionTimePredictor, reading ``catalog.PROFILES_DIR`` offline.

    Vidur 0.0.26 reads profiles only via ``huggingface_hub.snapshot_download`` and, before
    training, always tries to download ready-made predictions. Both hooks are overridden;
    training, prediction grids, rounding and ExecutionTime are Vidur's own.
    """

    def __init__(self, layout: Layout, cache_dir: str) -> None:
        self._layout = layout
        super().__init__(
            predictor_config=settings.predictor_config(layout, cache_dir),
            replica_config=layout.replica_config(),
            cache_config=CacheConfig(block_size=settings.PROFILE_BLOCK_SIZE),
        )

    def _get_input_files(self) -> tuple[str, str, str, str]:
        return tuple(str(path) for path in self._layout.profile_files())

    def _load_predictions_from_hf(self) -> dict:
        """Called first by Vidur's constructor; we answer by fitting the local profiles."""
        return self._predict_from_models(self._train_models())

    def _get_estimator(self) -> RandomForestRegressor:
        # No bootstrap: every tree sees every profiled point, so the forest reproduces the
        # noise-free grid exactly (see predictor_settings).
        return RandomForestRegressor(bootstrap=False, random_state=0)


def _by_tokens(predictions: dict) -> np.ndarray:
    table = np.full(settings.MAX_TOKENS + 1, np.nan)
    for (num_tokens,), value in predictions.items():
        table[int(num_tokens)] = value
    return table


def _grid(predictions: dict, shape: tuple[int, int], scale: tuple[int, int]) -> np.ndarray:
    table = np.full(shape, np.nan)
    for (a, b), value in predictions.items():
        table[int(a) // scale[0], int(b) // scale[1]] = value
    return table


def prediction_tables(predictor: LocalProfilePredictor) -> dict[str, np.ndarray]:
    """Vidur's prediction dictionaries as arrays indexed by its lookup keys.

    ``block_token_ms[t]``: per-block time of every token-keyed operator and both
    all-reduces for ``t`` (rounded) tokens; ``attn_decode_ms[batch, kv // 256]``;
    ``attn_prefill_ms[kv // 256, chunk // 32]``; ``comm_ms[t]``: the all-reduce charge per call
    included in ``block_token_ms`` (twice), which an engine with its own all-reduce replaces.
    Missing keys are NaN.
    """
    predictions = predictor._predictions
    replica = predictor._replica_config
    ops = {name: _by_tokens(predictions[name]) for name in TOKEN_OPS}
    if not replica.model_config.post_attn_norm:
        ops["post_attention_layernorm"] = np.zeros(settings.MAX_TOKENS + 1)
    tp = replica.tensor_parallel_size
    all_reduce = _by_tokens(predictions["all_reduce"]) if tp > 1 else 0.0
    comm = settings.tensor_parallel_comm_ms(all_reduce, predictor._config, tp)
    comm_ms = comm if tp > 1 else np.zeros(settings.MAX_TOKENS + 1)
    kv_slots = settings.MAX_TOKENS // KV_GRANULARITY + 1
    return {
        "block_token_ms": block_token_ops_ms(ops, comm),
        "comm_ms": comm_ms,
        "attn_decode_ms": _grid(
            predictions["attn_decode"],
            (settings.MAX_DECODE_BATCH + 1, kv_slots),
            (1, KV_GRANULARITY),
        ),
        "attn_prefill_ms": _grid(
            predictions["attn_prefill"],
            (kv_slots, settings.MAX_TOKENS // PREFILL_CHUNK_ROUNDING + 1),
            (KV_GRANULARITY, PREFILL_CHUNK_ROUNDING),
        ),
    }
