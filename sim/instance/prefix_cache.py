"""A block ledger with a prefix cache: vLLM's automatic prefix caching, block by block.

Reference semantics: vLLM's v1 KV-cache manager (``vllm/v1/core/kv_cache_manager.py``,
``block_pool.py``, ``kv_cache_utils.py``; automatic prefix caching came with vLLM 0.4 and is
on by default in the v1 engine). The paper's presets keep it off: the artifact's vLLM 0.1.2
had none.

* A block's identity is its content: a full block (``block_size`` tokens) is keyed by
  ``Content.block_key`` — the chained hash of vLLM, as a path in a tree of token streams
  (``sim.instance.content``). A partly filled block has no identity and is never shared.
* A prefill looks its prompt up block by block from the start and stops at the first miss;
  the hit is capped one token short of the prompt, so at least one token is computed (vLLM
  computes the last token's logits). Hit blocks are shared: their reference count goes up,
  and a hit on a free cached block takes it off the free queue.
* Every full block a request computed is cached: its prompt's at admission, the blocks its
  decode filled when it leaves (finishes, is preempted or migrates away); a key already
  cached keeps its first block, and the duplicate stays uncached.
* A block whose last reference goes is free but keeps its content, in one queue of free
  blocks ordered by when they were freed (a request's blocks tail first, so its last
  blocks go first); a new block is the queue's head, and taking a cached block evicts its
  content (counted). Free blocks, cached or not, are ``free``: what the batch former admits
  against, as vLLM counts evictable blocks free.
* A migration or hand-off copies only the blocks the destination lacks: the request's
  leading blocks already cached there are pinned by the reservation, not copied.

Counters for the run's metrics (``sim.metrics.prefix``): prompt tokens and full prompt
blocks looked up, those found, evictions, blocks a transfer did not copy.

INV-1 blocks with sharing: every block's reference count is the number of tables and
reservations holding it; only cached blocks are shared, and a cached block in a request's
table holds that request's tokens (its key is the request's for that position); the free
queue is exactly the unreferenced blocks; ``free + allocated + reserved == capacity``, where ``reserved`` counts
the blocks reservations took fresh (to be copied into) and ``allocated`` every other held
block.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Hashable, Iterable, Optional

from sim.instance.blocks import BlockLedger
from sim.instance.errors import BlockLeakError
from sim.instance.request import Request


class PrefixCachingLedger(BlockLedger):
    """Paged KV blocks that keep their content after release and are shared by prefix."""

    shares_blocks = True

    def __init__(self, capacity: int, block_size: int = 16) -> None:
        self._refs: list[int] = [0] * capacity
        self._key_of: list[Optional[Hashable]] = [None] * capacity
        self._cached: dict[Hashable, int] = {}  # content key -> the block holding it
        self._queue: OrderedDict[int, None] = OrderedDict()  # free blocks, oldest freed first
        self._fresh: dict[Hashable, int] = {}  # reservation key -> blocks it took fresh
        self._leading: dict[Hashable, int] = {}  # reservation key -> its leading blocks found cached
        self._incoming: dict[Hashable, int] = {}  # reservation key -> blocks reserved (counted at commit)
        self.prompt_tokens = 0  # looked up at admission
        self.hit_tokens = 0
        self.prompt_blocks = 0  # full prompt blocks looked up
        self.hit_blocks = 0
        self.evictions = 0
        self.transfer_blocks = 0  # blocks of committed incoming transfers
        self.transfer_hits = 0  # of which found cached here, not copied
        # tier -> [prompt tokens looked up, found, full prompt blocks looked up, found]
        self.by_tier: dict[int, list[int]] = {}
        super().__init__(capacity, block_size)

    def counters(self) -> dict[str, object]:
        """What the cache did on this instance over the run (survives ``clear``)."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "hit_tokens": self.hit_tokens,
            "prompt_blocks": self.prompt_blocks,
            "hit_blocks": self.hit_blocks,
            "evictions": self.evictions,
            "transfer_blocks": self.transfer_blocks,
            "transfer_hits": self.transfer_hits,
            "by_tier": {tier: tuple(counts) for tier, counts in self.by_tier.items()},
        }

    def clear(self) -> None:
        """Every block free and empty (the instance died with its KV cache)."""
        self.allocated = self.reserved = 0
        self.reservations.clear()
        self._tables.clear()
        self._fresh.clear()
        self._leading.clear()
        self._incoming.clear()
        self._refs = [0] * self.capacity
        self._key_of = [None] * self.capacity
        self._cached.clear()
        self._queue = OrderedDict.fromkeys(range(self.capacity))
        self.free = self.capacity

    # ------------------------------------------------------------------ requests' tables
    def allocate(self, request: Request, blocks: int) -> int:
        """``blocks`` more blocks for ``request``: at admission its cached leading blocks
        shared and the rest fresh, returning the tokens found cached; growing, fresh ones."""
        if blocks > self.free:
            raise BlockLeakError(f"allocating {blocks} blocks with {self.free} free")
        table = self._tables.get(request)
        if table is not None:
            table.extend(self._take(blocks))
            self._recount()
            return 0
        tokens, size = request.seq_len, self.block_size
        hits = self._leading_hits(request, 0, min(blocks, (tokens - 1) // size))
        self._acquire(hits)
        table = self._tables[request] = hits + self._take(blocks - len(hits))
        self._recount()
        self._remember(request, table, tokens // size)  # the prefill computes every token
        self.prompt_tokens += tokens
        self.hit_tokens += len(hits) * size
        per_tier = self.by_tier.setdefault(request.tier, [0, 0, 0, 0])
        per_tier[0] += tokens
        per_tier[1] += len(hits) * size
        per_tier[2] += tokens // size
        per_tier[3] += len(hits)
        self.prompt_blocks += tokens // size
        self.hit_blocks += len(hits)
        return len(hits) * size

    def grow_current(self, due: list[tuple[Request, int]], max_blocks: int) -> Optional[list[Request]]:
        """A decode step's growth (``BlockLedger.grow_current``'s contract), from the free
        queue's head."""
        at_limit: Optional[list[Request]] = None
        kept: list[tuple[Request, int]] = []
        for request, epoch in due:
            if request.epoch != epoch:
                continue
            table = self._tables[request]
            if len(table) >= max_blocks:
                if at_limit is None:
                    at_limit = []
                at_limit.append(request)
                continue
            table.extend(self._take(1))
            kept.append((request, epoch))
        due[:] = kept
        self._recount()
        return at_limit

    def release(self, request: Request) -> int:
        """Free ``request``'s blocks here, caching the full ones it computed; returns how many."""
        table = self._tables.pop(request, None)
        if table is None:
            return 0
        self._remember(request, table, (request.seq_len - 1) // self.block_size)  # the last token's KV is not computed
        self._drop(table)
        self._recount()
        return len(table)

    def cached_prefix(self, request: Request) -> int:
        """How many of ``request``'s leading blocks (up to its next prefill's hit cap) are
        cached here now."""
        tokens = request.seq_len
        return len(self._leading_hits(request, 0, (tokens - 1) // self.block_size))

    def cached_tokens(self, request: Request) -> int:
        return self.cached_prefix(request) * self.block_size

    # ------------------------------------------------------------------ incoming transfers
    def lacking(self, key: Hashable, request: Request, first: int, blocks: int) -> int:
        return blocks - len(self._leading_hits(request, first, blocks, key))

    def reserve(self, key: Hashable, blocks: int, request: Optional[Request] = None, first: int = 0) -> bool:
        hits = self._leading_hits(request, first, blocks, key)
        fresh = blocks - len(hits)
        newly_referenced = fresh + sum(1 for block in hits if not self._refs[block])
        if newly_referenced > self.free:
            return False
        self._acquire(hits)
        held = self.reservations.setdefault(key, [])
        held.extend(hits)
        held.extend(self._take(fresh))
        self._leading[key] = self._leading.get(key, 0) + len(hits)
        self._fresh[key] = self._fresh.get(key, 0) + fresh
        self.reserved += fresh
        self._incoming[key] = self._incoming.get(key, 0) + blocks
        self._recount()
        return True

    def cancel(self, key: Hashable) -> int:
        held = self.reservations.pop(key, [])
        self.reserved -= self._fresh.pop(key, 0)
        self._leading.pop(key, None)
        self._incoming.pop(key, None)
        self._drop(held)
        self._recount()
        return len(held)

    def commit(self, key: Hashable, request: Request) -> None:
        """The reservation is ``request``'s table here; the copied blocks are cached."""
        held = self.reservations.pop(key, [])
        self.reserved -= self._fresh.pop(key, 0)
        self.transfer_blocks += self._incoming.pop(key, 0)
        self.transfer_hits += self._leading.pop(key, 0)
        table = self._tables.setdefault(request, [])
        table.extend(held)
        self._recount()
        self._remember(request, table, (request.seq_len - 1) // self.block_size)

    # ------------------------------------------------------------------ invariant
    def check(self, holders: Iterable[Request]) -> None:
        """INV-1 with sharing (module docstring)."""
        refs = self.references(holders)
        if refs != self._refs:
            wrong = [b for b in range(self.capacity) if refs[b] != self._refs[b]][:10]
            raise BlockLeakError(f"blocks {wrong} have {[refs[b] for b in wrong]} holders but counts {[self._refs[b] for b in wrong]}")
        uncached_shared = [b for b in range(self.capacity) if refs[b] > 1 and self._key_of[b] is None]
        if uncached_shared:
            raise BlockLeakError(f"blocks {uncached_shared[:10]} are shared but hold no cached content")
        for content_key, block in self._cached.items():
            if self._key_of[block] != content_key:
                raise BlockLeakError(f"cached {content_key!r} points at block {block}, which holds {self._key_of[block]!r}")
        if sum(key is not None for key in self._key_of) != len(self._cached):
            raise BlockLeakError("a block holds content the cache does not list")
        for request, table in self._tables.items():  # a cached block holds its holders' tokens
            content = request.content
            for index, block in enumerate(table):
                key = self._key_of[block]
                if key is not None and (content is None or key != content.block_key(index, self.block_size)):
                    raise BlockLeakError(f"request {request.id}'s block {index} is block {block}, cached as {key!r}")
        unreferenced = {b for b in range(self.capacity) if not refs[b]}
        if (
            set(self._queue) != unreferenced
            or len(self._queue) != self.free
            or self.reserved != sum(self._fresh.values())
            or self.free + self.allocated + self.reserved != self.capacity
        ):
            raise BlockLeakError(
                f"{len(self._queue)} blocks on the free queue, {len(unreferenced)} unreferenced, "
                f"free {self.free} (capacity {self.capacity}, allocated {self.allocated}, reserved {self.reserved})"
            )

    # ------------------------------------------------------------------ blocks
    def _leading_hits(self, request: Optional[Request], first: int, blocks: int, key: Hashable = None) -> list[int]:
        """The cached blocks holding ``request``'s blocks ``first`` onwards, up to ``blocks``
        of them, while every block before them was found too (a transfer's earlier stages,
        under reservation ``key``). A lookup: nothing changes."""
        content = request.content if request is not None else None
        if content is None or (first and self._leading.get(key, 0) != first):
            return []
        size, cached, hits = self.block_size, self._cached, []
        for index in range(first, first + blocks):
            block = cached.get(content.block_key(index, size))
            if block is None:
                break
            hits.append(block)
        return hits

    def _acquire(self, hits: list[int]) -> None:
        """One more reference on each of ``hits`` (cached blocks found); a free one leaves the
        free queue."""
        for block in hits:
            if not self._refs[block]:
                del self._queue[block]
                self.free -= 1
            self._refs[block] += 1

    def _take(self, blocks: int) -> list[int]:
        """``blocks`` blocks from the free queue's head, their old content evicted."""
        queue, refs, key_of = self._queue, self._refs, self._key_of
        taken = []
        for _ in range(blocks):
            block, _ = queue.popitem(last=False)
            old = key_of[block]
            if old is not None:
                del self._cached[old]
                key_of[block] = None
                self.evictions += 1
            refs[block] = 1
            taken.append(block)
        self.free -= blocks
        return taken

    def _drop(self, blocks: list[int]) -> None:
        """One reference fewer on each of ``blocks``; the unreferenced join the free queue's
        tail, last block first (vLLM frees a request's blocks in reverse)."""
        refs, queue = self._refs, self._queue
        for block in reversed(blocks):
            refs[block] -= 1
            if not refs[block]:
                queue[block] = None
                self.free += 1

    def _remember(self, request: Request, table: list[int], full_blocks: int) -> None:
        """Cache the content of ``request``'s first ``full_blocks`` blocks (in ``table``)."""
        content = request.content
        if content is None:
            return
        size, cached, key_of = self.block_size, self._cached, self._key_of
        for index in range(min(full_blocks, len(table))):
            block = table[index]
            if key_of[block] is not None:
                continue
            key = content.block_key(index, size)
            if key not in cached:
                cached[key] = block
                key_of[block] = key

    def _recount(self) -> None:
        """Held blocks that no reservation took fresh (kept in step with ``free`` and
        ``reserved``)."""
        self.allocated = self.capacity - self.free - self.reserved
