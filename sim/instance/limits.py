"""What a llumlet is given: its vLLM limits, and the replica model's iteration time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol, Sequence


class BatchTimer(Protocol):
    """What the llumlet needs from the replica model (``sim.hardware.ReplicaModel``)."""

    def batch_time(
        self, prefills: Sequence[tuple[int, int]], num_decodes: int, decode_kv_tokens: int
    ) -> float: ...


# a replica model that states no longest sequence (vLLM's max_model_len) sets no limit
NO_SEQUENCE_LIMIT: Final = 1 << 62


@dataclass(frozen=True)
class LlumletLimits:
    """Per-instance vLLM limits."""

    capacity_blocks: int
    block_size: int = 16
    max_batched_tokens: int = 12800
    max_batch_size: int = 256
    watermark_blocks: int = 0
    tiers: int = 1
    max_seq_len: int = NO_SEQUENCE_LIMIT  # the replica model's longest sequence (max_model_len)
    # prompts are chunked over steps (vLLM V1): a prompt longer than a step's budget still fits
    chunked_prefill: bool = False

    def can_prefill(self, tokens: int) -> bool:
        """Whether a prefill of ``tokens`` tokens fits an empty instance at all: the token
        budget (unless prompts are chunked), the longest sequence and every block above the
        watermark (vLLM ignores a prompt past its limit; llumsim aborts it
        ``exceeds_instance_limits``)."""
        return (
            (self.chunked_prefill or tokens <= self.max_batched_tokens)
            and tokens <= self.max_seq_len
            and blocks_for(tokens, self.block_size) <= self.capacity_blocks - self.watermark_blocks
        )


def blocks_for(tokens: int, block_size: int) -> int:
    """KV blocks that hold ``tokens`` tokens (vLLM rounds up to whole blocks)."""
    return -(-tokens // block_size)
