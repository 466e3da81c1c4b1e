"""KV-cache capacity per instance: the profile run of the artifact's vLLM, tensor by tensor.

The Llumnix artifact serves with vLLM 0.1.2 (branch ``osdi24ae``: ``vllm/__init__.py``; torch
2.0.1 and xformers 0.0.22 in ``requirements.txt``). Its ``Worker.profile_num_available_blocks``
(``vllm/worker/worker.py``) resets torch's peak-memory counter, runs one forward pass of
``max_num_seqs`` dummy prompts holding ``max_num_batched_tokens`` tokens between them, sampler
included, and sizes the cache as

    blocks = floor((total_memory × utilisation − torch.cuda.max_memory_allocated()) / block bytes)

``total_memory`` is what CUDA reports for the device (``vllm/utils.py: get_gpu_memory``), the
device SKU entry's ``visible_memory_bytes`` (``skus.DeviceData``);
``max_memory_allocated`` counts only live blocks of torch's caching allocator, so the CUDA
context, NCCL's buffers and the allocator's cached-but-free segments do not enter the rule (they
live in the 10% that utilisation 0.9 leaves). What does enter, each below from the code that
allocates it:

* persistent at the reset: the weights, each attention layer's rotary ``cos_sin_cache``, the
  cuBLAS workspace, and with tensor parallelism the all-reduce launcher's output buffer;
* the profile run's inputs (token ids, positions, slot mapping);
* the widest moment of the pass: the largest of the MLP, attention and sampler phases.

Vidur's MemoryPlanner supplies the KV bytes per token and the transformer weights (its
ParamCounter; the embedding and LM head it leaves out are added here).
"""

from __future__ import annotations

import math

from vidur.config import CacheConfig, ReplicaConfig
from vidur.utils.memory_planner import MemoryPlanner

from sim.hardware.perf_model import BYTES_PER_VALUE
from sim.hardware.skus import device_data

# vLLM 0.1.2's default max_num_seqs (``vllm/engine/arg_utils.py``); the artifact never sets it.
DEFAULT_MAX_NUM_SEQS = 256
# ``PagedAttentionWithRoPE(max_position=16384)`` in the artifact's
# ``vllm/model_executor/layers/attention.py``: one [16384, rotary_dim] cache per layer, in the
# model's dtype (fp16), kept on the GPU as a buffer.
ROTARY_MAX_POSITION = 16384
# torch >= 1.13 allocates cuBLAS's workspace through its caching allocator (pytorch#86645), so
# it counts in max_memory_allocated once the first matmul has run (inside the profile run here).
# Default config ":4096:2:16:8" on pre-Hopper GPUs = 4096 KiB × 2 + 16 KiB × 8 = 8,519,680 B
# (aten/src/ATen/cuda/CublasHandlePool.cpp; the 8,519,680 B block is also what users observe:
# discuss.pytorch.org/t/178671).
CUBLAS_WORKSPACE_BYTES = 4096 * 1024 * 2 + 16 * 1024 * 8
# Token ids and positions (int64, the list padded to a multiple of 8: ``_pad_to_alignment``)
# and the slot mapping (int32) that ``Worker._prepare_inputs`` builds for the profile run.
TOKEN_ID_BYTES, SLOT_BYTES, TOKEN_ALIGNMENT = 8, 4, 8
FP32_BYTES, INT64_BYTES, BOOL_BYTES = 4, 8, 1
# torch 2.0's CUDA sort of rows longer than 1,024 int64 / 2,048 other keys
# (aten/src/ATen/native/cuda/Sort.cu, ``launch_stable_sort_kernel``) takes one of three paths
# by the number of rows; each allocates an int64 iota of the indices and cub's temporary
# storage, which (cub's non-double-buffer API) holds an alternate copy of keys and values.
SEGMENTED_SORT_MIN_ROWS = 128
INT2_BYTES = 8


def sort_temporary_bytes(rows: int, row_length: int, key_bytes: int) -> int:
    """Peak of what torch 2.0 allocates inside one ``sort`` of ``rows`` × ``row_length`` keys,
    besides its two outputs (sorted keys, int64 indices)."""
    elements = rows * row_length
    if rows == 1:  # segmented_sort_large_segments: one iota row, one cub sort per row
        return row_length * INT64_BYTES + row_length * (key_bytes + INT64_BYTES)
    if rows < SEGMENTED_SORT_MIN_ROWS:  # segmented_sort_pairs_by_full_sort
        index_and_segment = 2 * elements * INT2_BYTES
        keys_out = elements * key_bytes
        return index_and_segment + keys_out + elements * (key_bytes + INT2_BYTES)
    # segmented_sort_pairs: an iota of every element, cub's segmented radix sort
    return elements * INT64_BYTES + elements * (key_bytes + INT64_BYTES)


class ProfileRunMemoryPlanner(MemoryPlanner):
    def __init__(
        self,
        replica_config: ReplicaConfig,
        cache_config: CacheConfig,
        gpu_memory_utilization: float,
        max_batched_tokens: int,
        max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    ) -> None:
        super().__init__(replica_config, cache_config)
        self._gpu_memory_utilization = gpu_memory_utilization
        self._max_batched_tokens = max_batched_tokens
        # vLLM: max_num_seqs = min(max_num_seqs, max_num_batched_tokens) (arg_utils.py)
        self._profile_sequences = min(max_num_seqs, max_batched_tokens)

    # -- the model's shapes on one GPU ------------------------------------------------------

    @property
    def _model(self):
        return self._replica_config.model_config

    @property
    def _tensor_parallel(self) -> int:
        return self._replica_config.tensor_parallel_size

    def embedding_bytes_per_device(self) -> int:
        """Input embedding and LM head (untied in LLaMA), split over the vocabulary by TP."""
        return (
            BYTES_PER_VALUE * 2 * self._model.vocab_size * self._model.embedding_dim
            // self._tensor_parallel
        )

    def norm_bytes_per_device(self) -> int:
        """RMSNorm weights (two per layer and the final one), which every TP rank holds whole
        and Vidur's ParamCounter leaves out."""
        layers = self._model.num_layers // self._replica_config.num_pipeline_stages
        return (2 * layers + 1) * self._model.embedding_dim * BYTES_PER_VALUE

    def weight_bytes_per_device(self) -> int:
        """Every weight one GPU holds — and streams from memory once per decode step."""
        return (
            self._get_parameter_memory_per_device()
            + self.embedding_bytes_per_device()
            + self.norm_bytes_per_device()
        )

    def kv_bytes_per_token_per_device(self) -> int:
        return self._get_kv_cache_memory_per_device_per_token()

    # -- what is allocated before the profile run ------------------------------------------

    def rotary_cache_bytes(self) -> int:
        """One cos/sin table per layer (every TP rank holds all of it)."""
        head_dim = self._model.embedding_dim // self._model.num_q_heads
        layers = self._model.num_layers // self._replica_config.num_pipeline_stages
        return layers * ROTARY_MAX_POSITION * head_dim * BYTES_PER_VALUE

    def all_reduce_buffer_bytes(self) -> int:
        """``GraphAllReduce.buffer`` (parallel_state.py): [max_num_batched_tokens, hidden] fp16,
        which RowParallelLinear writes its output into; none without tensor parallelism."""
        if self._tensor_parallel == 1:
            return 0
        return self._max_batched_tokens * self._model.embedding_dim * BYTES_PER_VALUE

    def persistent_bytes(self) -> int:
        return (
            self.weight_bytes_per_device()
            + self.rotary_cache_bytes()
            + CUBLAS_WORKSPACE_BYTES
            + self.all_reduce_buffer_bytes()
        )

    # -- the profile run ---------------------------------------------------------------------

    def input_bytes(self) -> int:
        tokens = self._max_batched_tokens
        padded = math.ceil(tokens / TOKEN_ALIGNMENT) * TOKEN_ALIGNMENT
        return 2 * padded * TOKEN_ID_BYTES + tokens * SLOT_BYTES

    def mlp_phase_bytes(self) -> int:
        """Live while ``down_proj`` writes its output (LlamaMLP / LlamaDecoderLayer, llama.py):
        the layer's input (still held by LlamaModel.forward's loop variable), the residual, the
        post-attention norm's output, gate_up (2 × MLP width), SiLU·mul (1 × MLP width) and,
        without TP, the down projection's output (with TP it lands in the all-reduce buffer)."""
        hidden = self._model.embedding_dim
        mlp = self._model.mlp_hidden_dim // self._tensor_parallel
        hidden_tensors = 4 if self._tensor_parallel == 1 else 3
        return self._max_batched_tokens * (hidden_tensors * hidden + 3 * mlp) * BYTES_PER_VALUE

    def attention_phase_bytes(self) -> int:
        """Live while xformers' output is copied into the attention output (attention.py): the
        layer input, the input norm's output, qkv (query heads and, under grouped-query
        attention, fewer key and value heads), the output and xformers' own output (one query
        width each)."""
        hidden = self._model.embedding_dim
        head_dim = self._replica_config.attention_head_dim
        q_width = self._replica_config.q_heads_per_tensor_parallel_worker * head_dim
        kv_width = self._replica_config.kv_heads_per_tensor_parallel_worker * head_dim
        qkv = q_width + 2 * kv_width
        return self._max_batched_tokens * (2 * hidden + qkv + 2 * q_width) * BYTES_PER_VALUE

    def sampler_phase_bytes(self) -> int:
        """Live at the sampler's widest point (sampler.py, top_p 0.99 / top_k vocab − 1 as the
        profile run asks): the model's output for every token, and for each sampled sequence
        the pruned hidden state, fp16 logits, fp32 probs and logprobs, and inside
        ``_apply_top_p_top_k`` the sorted probs, their int64 indices, the cumulative sum, two
        bool masks — while ``argsort`` of the indices sorts (its int64 outputs and temporaries)."""
        hidden = self._model.embedding_dim
        rows = self._profile_sequences
        vocab_cells = rows * self._model.vocab_size
        model_output = self._max_batched_tokens * hidden * BYTES_PER_VALUE
        pruned = rows * hidden * BYTES_PER_VALUE
        before_top_p = vocab_cells * (BYTES_PER_VALUE + 2 * FP32_BYTES)  # logits, probs, logprobs
        top_p_top_k = vocab_cells * (2 * FP32_BYTES + INT64_BYTES + 2 * BOOL_BYTES)
        argsort = vocab_cells * 2 * INT64_BYTES + sort_temporary_bytes(
            rows, self._model.vocab_size, INT64_BYTES
        )
        return model_output + pruned + before_top_p + top_p_top_k + argsort

    def phase_bytes(self) -> dict[str, int]:
        return {
            "mlp": self.mlp_phase_bytes(),
            "attention": self.attention_phase_bytes(),
            "sampler": self.sampler_phase_bytes(),
        }

    def widest_phase(self) -> str:
        """The phase that sets the peak (the sampler's at small token budgets, then the MLP's)."""
        phases = self.phase_bytes()
        return max(phases, key=phases.__getitem__)

    def activation_peak_bytes(self) -> int:
        """What the profile run adds to the persistent bytes at its peak."""
        return self.input_bytes() + max(self.phase_bytes().values())

    def peak_bytes(self) -> int:
        """``torch.cuda.max_memory_allocated()`` after the profile run."""
        return self.persistent_bytes() + self.activation_peak_bytes()

    def get_num_blocks(self) -> int:
        total = device_data(self._device_config).visible_memory_bytes
        usable = self._gpu_memory_utilization * total
        block_bytes = self.kv_bytes_per_token_per_device() * self._cache_config.block_size
        blocks = int((usable - self.peak_bytes()) // block_bytes)
        if blocks < 1:
            raise ValueError(
                f"{self._replica_config.model_name} leaves no room for a KV block on "
                f"{self._replica_config.device} with tensor_parallel="
                f"{self._tensor_parallel} and max_batched_tokens="
                f"{self._max_batched_tokens}"
            )
        return blocks

    def get_max_kv_cache_size_in_tokens(self) -> int:
        """Vidur's entry point, answered with the profile-run capacity."""
        return self.get_num_blocks() * self._cache_config.block_size
