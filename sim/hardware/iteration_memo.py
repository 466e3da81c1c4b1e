"""Iteration times memoised on Vidur's lookup key: the replica model's hot path (one lookup
per executed step, a repeat costs a key and a dict hit)."""

from __future__ import annotations

from typing import Callable, Final, Sequence

from sim.hardware.timing import KV_GRANULARITY, NUM_TOKENS_ROUNDING, LookupKey, lookup_key

# decode counts packed below this (batch caps are hundreds; a larger count raises)
DECODE_COUNT_SPAN: Final = 1_048_576  # 2**20


class IterationMemo:
    """Seconds per iteration by lookup key; ``evaluate`` computes a key seen for the first time."""

    def __init__(self, evaluate: Callable[[LookupKey], float]) -> None:
        self.seconds: dict[LookupKey, float] = {}
        # decode-only iterations (most of them) by one int, their key's two free numbers
        # (decode count, mean-KV bucket) packed: an int hashes in a fraction of a 5-tuple
        self.decode_seconds: dict[int, float] = {}
        self.evaluate = evaluate

    def __reduce__(self) -> tuple:
        """Pickled without its entries (there can be many), which the copy computes again as
        it meets them."""
        return (IterationMemo, (self.evaluate,))

    def batch_time(
        self, prefills: Sequence[tuple[int, int]], num_decodes: int, decode_kv_tokens: int
    ) -> float:
        key = lookup_key(prefills, num_decodes, decode_kv_tokens)
        try:
            return self.seconds[key]
        except KeyError:
            seconds = self.seconds[key] = self.evaluate(key)
            return seconds

    def decode_batch_time(self, num_decodes: int, decode_kv_tokens: int) -> float:
        """``batch_time((), num_decodes, decode_kv_tokens)``: a decode-only iteration (most
        iterations are these), looked up by its packed int; a first sight builds the lookup
        key and shares ``batch_time``'s entry."""
        if num_decodes >= DECODE_COUNT_SPAN:  # would collide with another entry's key
            raise ValueError(f"{num_decodes:,} decodes in one batch: the memo packs at most {DECODE_COUNT_SPAN - 1:,}")
        kv_bucket = -(-(decode_kv_tokens // num_decodes) // KV_GRANULARITY)
        packed = kv_bucket * DECODE_COUNT_SPAN + num_decodes
        try:
            return self.decode_seconds[packed]
        except KeyError:
            pass
        key = (
            -(-num_decodes // NUM_TOKENS_ROUNDING) * NUM_TOKENS_ROUNDING,
            num_decodes,
            kv_bucket * KV_GRANULARITY,
            (),
            num_decodes,
        )
        seconds = self.seconds.get(key)
        if seconds is None:
            seconds = self.seconds[key] = self.evaluate(key)
        self.decode_seconds[packed] = seconds
        return seconds
