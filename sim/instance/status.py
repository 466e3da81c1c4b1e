"""What an instance is as a whole: draining (scaled in) or failed.

The llumlet owns it; the engine drains and undrains an instance through it, the llumlet
marks it failed, and its reporter and migration endpoint read it (a draining instance
reports an overwhelming load and takes no inbound migration; a failed one ends every
migration touching it)."""

from __future__ import annotations


class InstanceStatus:
    __slots__ = ("draining", "failed")

    def __init__(self) -> None:
        self.draining = False
        self.failed = False

    def drain(self) -> None:
        self.draining = True

    def undrain(self) -> None:
        self.draining = False

    def fail(self) -> None:
        self.failed = True
