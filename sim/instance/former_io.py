"""What a batch former is told and what it tells: its pool's role, and the events it reports.

A former decides and reports; it writes no other part's records and calls no policy. What
happened to a request — its prefill ended, it joined the batch, it ended — goes to its
``BatchEvents``, which the engine implements (``sim.engine.former_events``): the migration
launcher brings a moved request's record up to date, prefill/decode disaggregation takes a
prefilled request for its hand-off, the run counts the request ended. A former of one's own
(``sim.instance.parts``) reports the same events and gets its pool's role the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sim.instance.request import Request


@dataclass(frozen=True)
class Role:
    """A pool's role as its instances' batch former sees it (``pools[*].role``)."""

    name: str = "mixed"  # mixed, prefill or decode
    # a prefill instance keeps a prefilled request out of its batch, with its blocks, until
    # it is handed off (``pd.copy: blocking``; Llumnix's PD: one step on a prefill instance)
    holds_prefilled: bool = False


MIXED = Role()


class BatchEvents:
    """The events a batch former reports; this one hands endings to ``on_end`` and ignores
    the rest (an instance built alone, in tests)."""

    def __init__(self, on_end: Callable[[Request], None] = lambda request: None) -> None:
        self.on_end = on_end

    def prefilled(self, request: Request, seconds: float) -> None:
        """A prefill (first, or a recompute) of ``seconds`` gave ``request`` a token; it is
        placed already: batched, held out of the batch (its role's), or finished."""

    def joined(self, request: Request) -> None:
        """``request`` is batched again: it arrived by a migration, or one was aborted."""

    def ended(self, request: Request) -> None:
        """``request`` finished, or was dropped as exceeding the instance."""
        self.on_end(request)
