"""The llumlet's queue of requests waiting for admission, with the totals its load report
needs kept as requests come and go (so a report never walks the queue)."""

from __future__ import annotations

from collections import deque
from typing import Iterator

from sim.instance.limits import blocks_for
from sim.instance.request import Request


class WaitingQueue:
    """Queued requests: one FCFS lane, or one lane per tier served most critical first."""

    def __init__(self, lanes: int, tiers: int, block_size: int) -> None:
        self._lanes: list[deque[Request]] = [deque() for _ in range(lanes)]
        self.count = 0  # requests queued (read directly on the hot path: no __len__ call)
        self._block_size = block_size
        self.demand_blocks = 0  # blocks the queued requests need to be admitted (ceil per request)
        self.tokens = 0  # prompt + generated tokens of the queued requests
        self.per_tier = [0] * tiers
        self.preempted = 0  # requests queued again after a preemption (vLLM's ``killed``)
        # one more on every push, pop and clear: whoever reports the totals above (the load
        # reporter, every step) compares this one count instead of all of them
        self.changes = 0

    def _lane(self, request: Request) -> deque:
        return self._lanes[request.tier if len(self._lanes) > 1 else 0]

    def push(self, request: Request, front: bool = False) -> None:
        """Queue a request (at the head for a preempted or recompute-migrated one)."""
        request.queued()
        if front:
            self._lane(request).appendleft(request)
        else:
            self._lane(request).append(request)
        self._count(request, 1)

    def head(self) -> Request:
        for lane in self._lanes:
            if lane:
                return lane[0]
        raise IndexError("empty queue")

    def head_demand_blocks(self) -> int:
        """Blocks the head-of-line request needs to be admitted."""
        return blocks_for(self.head().seq_len, self._block_size)

    def pop_head(self) -> Request:
        for lane in self._lanes:
            if lane:
                request = lane.popleft()
                self._count(request, -1)
                request.dequeued()
                return request
        raise IndexError("empty queue")

    def _count(self, request: Request, sign: int) -> None:
        tokens = request.seq_len
        self.changes += 1
        self.count += sign
        self.tokens += sign * tokens
        self.demand_blocks += sign * blocks_for(tokens, self._block_size)
        self.per_tier[request.tier] += sign
        if request.requeued:
            self.preempted += sign

    def clear(self) -> None:
        """Empty the queue (the instance died; its requests are the caller's)."""
        for lane in self._lanes:
            lane.clear()
        self.count = self.demand_blocks = self.tokens = self.preempted = 0
        self.changes += 1
        self.per_tier = [0] * len(self.per_tier)

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def __iter__(self) -> Iterator[Request]:
        for lane in self._lanes:
            yield from lane
