"""How one iteration's time is assembled from per-operator times, exactly as Vidur does it.

Vidur's sklearn predictor does not evaluate its models at the batch's own sizes: it rounds
them to the keys of its prediction tables (``SklearnExecutionTimePredictor._get_*``) and sums
the operator times per transformer block (``ExecutionTime``). Both the constant fit in
``build_profiles`` and the run-time tables in ``replica_model`` go through this module, so the
function that is fitted is the function that is later evaluated.

Pure Python on purpose: it sits on the simulator's hot path.
"""

from __future__ import annotations

from typing import Mapping, Sequence

# Vidur 0.0.26 rounding rules (sklearn_execution_time_predictor.py, entities/batch.py).
NUM_TOKENS_ROUNDING = 8  # Batch._total_num_q_tokens_rounded
KV_GRANULARITY = 256  # BaseExecutionTimePredictorConfig.kv_cache_prediction_granularity
PREFILL_CHUNK_ROUNDING = 32  # _get_attention_prefill_execution_time

# Operators that Vidur keys by the batch's rounded number of tokens, and that its
# ExecutionTime adds once per transformer block. ``attn_kv_cache_save`` is predicted but
# left out of ExecutionTime's sum in this release, so it is not here either.
TOKEN_OPS = (
    "attn_pre_proj",
    "attn_post_proj",
    "attn_rope",
    "mlp_up_proj",
    "mlp_down_proj",
    "mlp_act",
    "input_layernorm",
    "post_attention_layernorm",
    "add",
)

LookupKey = tuple[int, int, int, tuple[tuple[int, int], ...], int]


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def lookup_key(
    prefills: Sequence[tuple[int, int]], num_decodes: int, decode_kv_tokens: int
) -> LookupKey:
    """The table keys Vidur would read for this batch, plus the request count for overheads.

    Returns (rounded total tokens, decode batch size, rounded mean decode KV, sorted
    (rounded KV, rounded chunk) per prefill, number of requests). A one-token prefill chunk
    is a decode to Vidur (it classifies by ``num_q_tokens == 1``), so it is counted as one.
    """
    total_tokens = num_decodes
    decode_batch = num_decodes
    decode_kv = decode_kv_tokens
    chunks = []
    for q_tokens, kv_tokens in prefills:
        total_tokens += q_tokens
        if q_tokens == 1:
            decode_batch += 1
            decode_kv += kv_tokens
        else:
            chunks.append(
                (round_up(kv_tokens, KV_GRANULARITY), round_up(q_tokens, PREFILL_CHUNK_ROUNDING))
            )
    # Vidur takes int(np.mean(kv)) (a floor for positive sizes) before rounding up.
    mean_kv = round_up(decode_kv // decode_batch, KV_GRANULARITY) if decode_batch else 0
    chunks.sort()
    return (
        round_up(total_tokens, NUM_TOKENS_ROUNDING),
        decode_batch,
        mean_kv,
        tuple(chunks),
        len(prefills) + num_decodes,
    )


def block_token_ops_ms(op_ms: Mapping[str, float], tp_comm_ms: float) -> float:
    """Per-block time of the token-keyed operators plus the two tensor-parallel all-reduces.

    Works on numpy arrays (whole tables) as well as on scalars. ``tp_comm_ms`` is Vidur's communication term
    (all-reduce prediction + NCCL CPU launch overhead), 0 without tensor parallelism;
    ExecutionTime charges it once in the attention layer and once in the MLP.
    """
    total = 2 * tp_comm_ms
    for name in TOKEN_OPS:
        total = total + op_ms[name]
    return total


def decode_attention_ms(table_ms: float, decode_batch: int, batching_overhead: float) -> float:
    """Vidur's decode-attention charge: the table value, plus its GQA batching overhead."""
    return table_ms * (1 + batching_overhead * (decode_batch > 1))


def iteration_seconds(
    num_layers: int,
    block_ms: float,
    overhead_base_ms: float,
    overhead_per_request_ms: float,
    num_requests: int,
    gpu_scale: float = 1.0,
) -> float:
    """Vidur's model time (blocks × layers, × ``gpu_scale``) plus the engine's CPU overhead.

    Vidur 0.0.26's ExecutionTime counts transformer blocks only; the serving engine's work
    around each forward pass (scheduling, input preparation, sampling, output processing)
    is the ``base + per_request × n`` term, which ``gpu_scale`` leaves alone.
    """
    return (
        block_ms * num_layers * gpu_scale
        + overhead_base_ms
        + overhead_per_request_ms * num_requests
    ) * 1e-3


def overlapped_iteration_seconds(
    num_layers: int,
    block_ms: float,
    overhead_base_ms: float,
    overhead_per_request_ms: float,
    overlapped_base_ms: float,
    overlapped_per_request_ms: float,
    num_requests: int,
    gpu_scale: float = 1.0,
) -> float:
    """An iteration whose host work partly runs beside the GPU's (async scheduling): the
    longer of the GPU time and the overlapped host phases, plus the host work that stays on
    the critical path."""
    gpu_ms = block_ms * num_layers * gpu_scale
    host_ms = overhead_base_ms + overhead_per_request_ms * num_requests
    beside_ms = overlapped_base_ms + overlapped_per_request_ms * num_requests
    return (max(gpu_ms, beside_ms) + host_ms - beside_ms) * 1e-3
