"""One iteration of an instance: a prefill of admitted requests, or a decode step."""

from __future__ import annotations

from sim.instance.request import Request


class Batch:
    """One iteration: a prefill of ``requests``, or a decode step of the running batch, and
    how long the replica model says it takes (``seconds``, set by the former that forms it)."""

    __slots__ = ("is_prefill", "requests", "prefill_tokens", "num_decodes", "kv_tokens", "seconds")

    def __init__(
        self,
        requests: list[Request],
        prefill_tokens: list[int],
        num_decodes: int = 0,
        kv_tokens: int = 0,
    ) -> None:
        self.is_prefill = bool(requests)
        self.requests = requests
        self.prefill_tokens = prefill_tokens
        self.num_decodes = num_decodes
        self.kv_tokens = kv_tokens
        self.seconds = 0.0

    @property
    def size(self) -> int:
        return len(self.requests) if self.is_prefill else self.num_decodes
