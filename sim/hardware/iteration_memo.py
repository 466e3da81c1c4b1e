"""Iteration times memoised on Vidur's lookup key: the replica model's hot path (one lookup
per executed step, a repeat costs a key and a dict hit), part of the compiled engine
(``sim.native``)."""

from __future__ import annotations

from typing import Callable, Sequence

from sim.hardware.timing import KV_GRANULARITY, NUM_TOKENS_ROUNDING, LookupKey, lookup_key


class IterationMemo:
    """Seconds per iteration by lookup key; ``evaluate`` computes a key seen for the first time."""

    def __init__(self, evaluate: Callable[[LookupKey], float]) -> None:
        self.seconds: dict[LookupKey, float] = {}
        self.evaluate = evaluate

    def __reduce__(self) -> tuple:
        """Pickled without its entries, which the copy computes again as it meets them
        (compiled by ``sim.native``, a native class has no default way)."""
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
        iterations are these), its lookup key built directly."""
        key = (
            -(-num_decodes // NUM_TOKENS_ROUNDING) * NUM_TOKENS_ROUNDING,
            num_decodes,
            -(-(decode_kv_tokens // num_decodes) // KV_GRANULARITY) * KV_GRANULARITY,
            (),
            num_decodes,
        )
        try:
            return self.seconds[key]
        except KeyError:
            seconds = self.seconds[key] = self.evaluate(key)
            return seconds
