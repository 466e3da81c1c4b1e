"""KV-cache capacity per instance: vLLM's profile-run sizing on Vidur's memory accounting.

Vidur's MemoryPlanner reserves a fixed margin and nothing for activations, which gives
~1,220 blocks for LLaMA-7B on an A10 where vLLM (and the Llumnix paper) get 851. vLLM sizes
the cache after a forward pass over ``max_batched_tokens`` dummy tokens:

    blocks = floor((utilisation × device memory − peak memory of that pass) / bytes per block)

with the peak = weights + the largest set of live activations. We compute the same from
shapes: weights from Vidur's ParamCounter (transformer blocks) plus the embedding and LM head
it leaves out; KV bytes per token from Vidur's MemoryPlanner; the activation peak from the
MLP of vLLM's LLaMA layer, the widest point of the pass (see ``activation_peak_bytes``).
"""

from __future__ import annotations

from vidur.config import CacheConfig, ReplicaConfig
from vidur.utils.memory_planner import MemoryPlanner

from sim.hardware.perf_model import BYTES_PER_VALUE


class ProfileRunMemoryPlanner(MemoryPlanner):
    def __init__(
        self,
        replica_config: ReplicaConfig,
        cache_config: CacheConfig,
        gpu_memory_utilization: float,
        max_batched_tokens: int,
    ) -> None:
        super().__init__(replica_config, cache_config)
        self._gpu_memory_utilization = gpu_memory_utilization
        self._max_batched_tokens = max_batched_tokens

    def embedding_bytes_per_device(self) -> int:
        """Input embedding and LM head (untied in LLaMA), split over the vocabulary by TP."""
        model = self._replica_config.model_config
        return (
            BYTES_PER_VALUE
            * 2
            * model.vocab_size
            * model.embedding_dim
            // self._replica_config.tensor_parallel_size
        )

    def weight_bytes_per_device(self) -> int:
        """Every weight one GPU holds — and streams from memory once per decode step."""
        return self._get_parameter_memory_per_device() + self.embedding_bytes_per_device()

    def activation_peak_bytes(self) -> int:
        """Live activations at the widest point of a forward pass of ``max_batched_tokens``.

        In vLLM's LlamaMLP the down projection runs while the residual, the MLP input, the
        gate/up output (2 × MLP width), the SiLU·mul output (1 × MLP width) and the down
        projection's output are all alive: 3 × hidden + 3 × MLP width per GPU, per token.
        Attention's peak (q, k, v, output: ~7 × hidden) and the sampler's (a few
        fp32 [sequences × vocabulary] buffers) are smaller for the models here.
        """
        model = self._replica_config.model_config
        mlp_per_device = model.mlp_hidden_dim // self._replica_config.tensor_parallel_size
        per_token = 3 * model.embedding_dim + 3 * mlp_per_device
        return BYTES_PER_VALUE * self._max_batched_tokens * per_token

    def kv_bytes_per_token_per_device(self) -> int:
        return self._get_kv_cache_memory_per_device_per_token()

    def get_num_blocks(self) -> int:
        usable = self._gpu_memory_utilization * self._device_config.visible_memory_bytes
        peak = self.weight_bytes_per_device() + self.activation_peak_bytes()
        block_bytes = self.kv_bytes_per_token_per_device() * self._cache_config.block_size
        blocks = int((usable - peak) // block_bytes)
        if blocks < 1:
            raise ValueError(
                f"{self._replica_config.model_name} leaves no room for a KV block on "
                f"{self._replica_config.device} with tensor_parallel="
                f"{self._replica_config.tensor_parallel_size} and max_batched_tokens="
                f"{self._max_batched_tokens}"
            )
        return blocks

    def get_max_kv_cache_size_in_tokens(self) -> int:
        """Vidur's entry point, answered with the profile-run capacity."""
        return self.get_num_blocks() * self._cache_config.block_size
