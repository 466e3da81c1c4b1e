"""Paged KV-cache accounting for one instance.

Three kinds of blocks exist: free, allocated to a request resident here, and reserved for an
incoming migration (pre-allocated before a stage, turned into an allocation at commit or
released at abort). ``free + allocated + reserved == capacity`` always holds; ``check`` proves
it against the requests that claim to hold blocks.
"""

from __future__ import annotations

from typing import Hashable, Iterable

from sim.instance.errors import BlockLeakError
from sim.instance.request import Request


class BlockLedger:
    __slots__ = ("capacity", "allocated", "reservations", "reserved")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.allocated = 0
        self.reserved = 0
        self.reservations: dict[Hashable, int] = {}

    def clear(self) -> None:
        """Every block free again (the instance died with its KV cache)."""
        self.allocated = self.reserved = 0
        self.reservations.clear()

    @property
    def free(self) -> int:
        return self.capacity - self.allocated - self.reserved

    def allocate(self, request: Request, blocks: int) -> None:
        if blocks > self.free:
            raise BlockLeakError(f"allocating {blocks} blocks with {self.free} free")
        request.blocks += blocks
        self.allocated += blocks

    def release(self, request: Request) -> int:
        """Free every block ``request`` holds here; returns how many."""
        blocks = request.blocks
        self.allocated -= blocks
        request.blocks = 0
        return blocks

    def reserve(self, key: Hashable, blocks: int) -> bool:
        """Pre-allocate ``blocks`` for an incoming migration stage (ACK) or refuse (ABORT)."""
        if blocks > self.free:
            return False
        self.reservations[key] = self.reservations.get(key, 0) + blocks
        self.reserved += blocks
        return True

    def cancel(self, key: Hashable) -> int:
        """Release a migration's reservation (abort); returns how many blocks came back."""
        blocks = self.reservations.pop(key, 0)
        self.reserved -= blocks
        return blocks

    def commit(self, key: Hashable, request: Request) -> None:
        """Turn a migration's reservation into the request's allocation here."""
        blocks = self.reservations.pop(key, 0)
        self.reserved -= blocks
        self.allocated += blocks
        request.blocks = blocks

    def check(self, holders: Iterable[Request]) -> None:
        """Raise unless the holders' blocks and the reservations account for every block."""
        held = sum(r.blocks for r in holders)
        if held != self.allocated:
            raise BlockLeakError(f"requests hold {held} blocks but {self.allocated} are allocated")
        if sum(self.reservations.values()) != self.reserved:
            raise BlockLeakError("reservations do not add up")
        if not (0 <= self.free <= self.capacity) or self.allocated < 0 or self.reserved < 0:
            raise BlockLeakError(
                f"free {self.free}, allocated {self.allocated}, reserved {self.reserved}, "
                f"capacity {self.capacity}"
            )
