"""The llumlet's queue of requests waiting for admission."""

from __future__ import annotations

from collections import deque
from typing import Iterator

from sim.instance.request import Request


class WaitingQueue:
    """Queued requests: one FCFS lane, or one lane per tier served most critical first."""

    def __init__(self, lanes: int) -> None:
        self._lanes = [deque() for _ in range(lanes)]
        self._length = 0

    def _lane(self, request: Request) -> deque:
        return self._lanes[request.tier if len(self._lanes) > 1 else 0]

    def push(self, request: Request, front: bool = False) -> None:
        if front:
            self._lane(request).appendleft(request)
        else:
            self._lane(request).append(request)
        self._length += 1

    def head(self) -> Request:
        for lane in self._lanes:
            if lane:
                return lane[0]
        raise IndexError("empty queue")

    def pop_head(self) -> Request:
        for lane in self._lanes:
            if lane:
                self._length -= 1
                return lane.popleft()
        raise IndexError("empty queue")

    def remove(self, request: Request) -> None:
        self._lane(request).remove(request)
        self._length -= 1

    def __len__(self) -> int:
        return self._length

    def __bool__(self) -> bool:
        return self._length > 0

    def __iter__(self) -> Iterator[Request]:
        for lane in self._lanes:
            yield from lane
