"""Paged KV-cache accounting for one instance: the ledger owns the blocks (INV-1 blocks,
``docs/ARCHITECTURE.md``).

Every block has an id. A block is free, in a resident request's block table, or reserved for
an incoming migration (pre-allocated before a stage, moved into the request's table at commit
or freed at abort). ``check`` counts every block's references — the tables and reservations
that hold it — and proves each is held once or free, and ``free + allocated + reserved ==
capacity``. This ledger shares no block, so a reference count per block would always be 1
and is not kept on the hot path; a ledger that shares blocks (the prefix cache,
``sim.instance.prefix_cache``) keeps one, and the same check, counting references, is its
invariant too. What a sharing ledger adds is asked of every ledger, answered here for one
that caches nothing: ``allocate`` returns the prompt tokens found cached (none),
``lacking`` the blocks of a transfer the destination must receive (all of them), and
``counters`` what the cache did over the run (None: no cache).

Only the ledger changes block counts: allocation at admission, growth token by token (one
block every ``block_size`` tokens), release, reservation, commit and abort all go through it,
and a request's table here is the one place its blocks on this instance are written down
(during a migration the source's and the destination's ledgers each hold their own).
"""

from __future__ import annotations

from typing import ClassVar, Collection, Hashable, Iterable, Optional

from mypy_extensions import mypyc_attr

from sim.instance.errors import BlockLeakError
from sim.instance.request import Request


@mypyc_attr(allow_interpreted_subclasses=True)  # a pool's own part subclasses it (sim.instance.parts)
class BlockLedger:
    __slots__ = ("capacity", "block_size", "allocated", "reserved", "free", "reservations", "_tables", "_free")

    # whether blocks may be found cached (then ``cached_tokens`` is worth asking before an
    # admission: vLLM's token budget counts only what a prefill computes)
    shares_blocks: ClassVar[bool] = False

    def __init__(self, capacity: int, block_size: int = 16) -> None:
        self.capacity = capacity
        self.block_size = block_size  # tokens per block (a sharing ledger's block identity)
        self.allocated = 0  # blocks in some request's table
        self.reserved = 0  # blocks held by reservations
        # blocks on the free list: len(_free), kept as a count by the places that change the
        # list (_take, _drop, grow_current, clear): the batch former reads it every step
        self.free = capacity
        self.reservations: dict[Hashable, list[int]] = {}  # migration key -> the blocks it holds
        self._tables: dict[Request, list[int]] = {}  # resident request -> its blocks, in order
        self._free: list[int] = []
        self.clear()

    def clear(self) -> None:
        """Every block free again (the instance died with its KV cache)."""
        self.allocated = self.reserved = 0
        self.reservations.clear()
        self._tables.clear()
        self._free = list(range(self.capacity - 1, -1, -1))  # handed out from block 0 up
        self.free = self.capacity

    def held(self, request: Request) -> int:
        """Blocks ``request`` holds here."""
        table = self._tables.get(request)
        return len(table) if table is not None else 0

    def table(self, request: Request) -> tuple[int, ...]:
        """The ids of the blocks ``request`` holds here, in token order."""
        return tuple(self._tables.get(request, ()))

    def cached_tokens(self, request: Request) -> int:
        """Of ``request``'s tokens, how many its prefill here would find cached now (none)."""
        return 0

    def counters(self) -> Optional[dict[str, object]]:
        """What a cache did on this instance over the run, for the run's result (None: this
        ledger caches nothing)."""
        return None

    def allocate(self, request: Request, blocks: int) -> int:
        """``blocks`` more blocks into ``request``'s table (its prefill's, at admission, or
        one more as it grows); returns how many of its tokens were found cached (none here)."""
        if blocks > self.free:
            raise BlockLeakError(f"allocating {blocks} blocks with {self.free} free")
        table = self._tables.get(request)
        if table is None:
            table = self._tables[request] = []
        table.extend(self._take(blocks))
        self.allocated += blocks
        return 0

    def grow_current(self, due: list[tuple[Request, int]], max_blocks: int) -> Optional[list[Request]]:
        """A decode step's growth in one call: one more block for each ``(request, epoch)``
        in ``due`` whose request is still in that epoch (a free block must exist for each).
        ``due`` keeps only the entries that grew, in order (their next calendar bucket); the
        requests already at ``max_blocks`` (vLLM's max_model_len) are returned, nothing
        allocated for them (None when there is none)."""
        tables, free = self._tables, self._free
        at_limit: Optional[list[Request]] = None
        grown = 0
        left_out = False
        for request, epoch in due:
            if request.epoch != epoch:
                left_out = True  # left the batch (finished, preempted, suspended) since
                continue
            table = tables[request]
            if len(table) >= max_blocks:
                if at_limit is None:
                    at_limit = []
                at_limit.append(request)
                left_out = True
                continue
            table.append(free.pop())
            grown += 1
        self.allocated += grown
        self.free -= grown
        if left_out:  # rare: keep only the entries that grew
            skip = at_limit or ()
            due[:] = [(r, e) for r, e in due if r.epoch == e and r not in skip]
        return at_limit

    def release(self, request: Request) -> int:
        """Free every block ``request`` holds here; returns how many."""
        table = self._tables.pop(request, None)
        if table is None:
            return 0
        self._drop(table)
        self.allocated -= len(table)
        return len(table)

    def lacking(self, key: Hashable, request: Request, first: int, blocks: int) -> int:
        """Of ``request``'s blocks ``first`` to ``first + blocks`` on their way here under
        ``key``, how many must be copied (every one: this ledger caches nothing)."""
        return blocks

    def reserve(self, key: Hashable, blocks: int, request: Optional[Request] = None, first: int = 0) -> bool:
        """Pre-allocate ``blocks`` for an incoming migration stage (ACK) or refuse (ABORT):
        ``request``'s blocks ``first`` onwards (a caching ledger's identity of them)."""
        if blocks > self.free:
            return False
        held = self.reservations.get(key)
        if held is None:
            held = self.reservations[key] = []
        held.extend(self._take(blocks))
        self.reserved += blocks
        return True

    def cancel(self, key: Hashable) -> int:
        """Release a migration's reservation (abort); returns how many blocks came back."""
        held = self.reservations.pop(key, [])
        self._drop(held)
        self.reserved -= len(held)
        return len(held)

    def commit(self, key: Hashable, request: Request) -> None:
        """Turn a migration's reservation into the request's table here (the same blocks:
        their references move from the reservation to the table)."""
        held = self.reservations.pop(key, [])
        self.reserved -= len(held)
        self.allocated += len(held)
        table = self._tables.get(request)
        if table is None:
            self._tables[request] = held
        else:
            table.extend(held)

    def unowned(self, holders: Collection[Request], live_keys: Collection) -> int:
        """Blocks in the table of a request not among ``holders``, plus blocks reserved
        under a key not in ``live_keys`` (the migrations still in flight): leaked blocks."""
        stray = sum(len(table) for request, table in self._tables.items() if request not in holders)
        orphaned = sum(len(held) for key, held in self.reservations.items() if key not in live_keys)
        return stray + orphaned

    def check(self, holders: Iterable[Request]) -> None:
        """Raise unless every block's references are the tables and reservations that hold
        it, the holders' tables are every table, and the counts add up to the capacity."""
        refs = self.references(holders)
        shared = [b for b in range(self.capacity) if refs[b] > 1]
        if shared:
            raise BlockLeakError(
                f"blocks {shared[:10]} have {[refs[b] for b in shared[:10]]} references; this ledger shares none"
            )
        in_tables = {block for table in self._tables.values() for block in table}
        in_reservations = {block for held in self.reservations.values() for block in held}
        if len(in_tables) != self.allocated or len(in_reservations) != self.reserved:
            raise BlockLeakError(
                f"tables hold {len(in_tables)} blocks and reservations {len(in_reservations)}, "
                f"but {self.allocated} are allocated and {self.reserved} reserved"
            )
        unreferenced = {b for b in range(self.capacity) if not refs[b]}
        if (
            sorted(self._free) != sorted(unreferenced)
            or len(self._free) != self.free
            or self.free + self.allocated + self.reserved != self.capacity
        ):
            raise BlockLeakError(
                f"{len(self._free)} blocks on the free list, {len(unreferenced)} unreferenced, "
                f"free {self.free} (capacity {self.capacity}, allocated {self.allocated}, reserved {self.reserved})"
            )

    def references(self, holders: Iterable[Request]) -> list[int]:
        """Each block's count of the tables and reservations holding it, once the holders'
        tables are found to be every table (raises otherwise): what INV-1 checks count."""
        holders = list(holders)
        if set(holders) != set(self._tables):
            raise BlockLeakError(
                f"requests {sorted(r.id for r in holders)} are resident but "
                f"{sorted(r.id for r in self._tables)} hold blocks"
            )
        refs = [0] * self.capacity
        for held in [*self._tables.values(), *self.reservations.values()]:
            for block in held:
                refs[block] += 1
        return refs

    def _take(self, blocks: int) -> list[int]:
        """``blocks`` free blocks (the free list's last, in the order ``pop`` would give
        them): one slice, not a call per block."""
        free = self._free
        taken = free[len(free) - blocks :]
        del free[len(free) - blocks :]
        taken.reverse()
        self.free -= blocks
        return taken

    def _drop(self, blocks: list[int]) -> None:
        """``blocks`` are free again."""
        self._free.extend(blocks)
        self.free += len(blocks)
