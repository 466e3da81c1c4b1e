"""What an instance is as a whole, set by the engine: draining (scaled in) or failed.

The llumlet owns it; its reporter and migration endpoint read it (a draining instance
reports an overwhelming load and takes no inbound migration; a failed one ends every
migration touching it)."""

from __future__ import annotations


class InstanceStatus:
    __slots__ = ("draining", "failed")

    def __init__(self) -> None:
        self.draining = False
        self.failed = False
