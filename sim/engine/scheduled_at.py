"""A simpy environment that knows when the event it is processing was scheduled, and its
priority.

Why: a decode stretch (``sim.engine.instances.StepLoop``) forms its steps later, and a step
that ends at exactly the time of another event must be ordered as its own event would have
been. simpy orders events of one time by when they were scheduled; a step's end is scheduled
when the step starts. So an event at that time comes before the step's end if it was
scheduled before the step started, after it if later, and an urgent event (a process
starting, a run's end) before it — which this environment answers (``scheduled_at``,
``priority``), for runs with stretches only (other runs keep simpy's own loop).
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any

import simpy
from simpy.core import EmptySchedule, StopSimulation
from simpy.events import NORMAL, URGENT


class ScheduledAtEnvironment(simpy.Environment):
    """``simpy.Environment`` plus ``scheduled_at`` and ``priority``: the simulated time at
    which the event being processed (the last one popped) was scheduled, and its priority;
    and ``previous_time``, when the event before it was.
    Events pushed onto the queue directly carry their own (``_scheduled_at``), as the step
    loop's stretch ends do."""

    def __init__(self, initial_time: int | float = 0) -> None:  # simpy's default: the int 0
        super().__init__(initial_time)
        self.scheduled_at = initial_time
        self.priority: Any = NORMAL
        self.previous_time = -1.0  # when the event processed before this one was (-1: none)

    def schedule(self, event: simpy.Event, priority: Any = NORMAL, delay: Any = 0) -> None:
        event._scheduled_at = self._now  # type: ignore[attr-defined]
        heappush(self._queue, (self._now + delay, priority, next(self._eid), event))

    def step(self) -> None:
        """simpy's ``Environment.step``, noting when the event was scheduled."""
        self.previous_time = self._now
        try:
            self._now, self.priority, _, event = heappop(self._queue)
        except IndexError:
            raise EmptySchedule from None
        self.scheduled_at = event._scheduled_at
        callbacks, event.callbacks = event.callbacks, None
        try:
            for callback in callbacks:
                callback(event)
        except StopSimulation:
            # resumed later, its remaining callbacks first (as simpy does)
            event.callbacks = callbacks[callbacks.index(callback) + 1 :]
            self.schedule(event, URGENT - 1)
            raise
        if not event._ok and not hasattr(event, "_defused"):
            failure = type(event._value)(*event._value.args)
            failure.__cause__ = event._value
            raise failure
