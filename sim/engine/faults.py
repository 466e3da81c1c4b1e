"""Fault injection: each configured fault is a process that breaks something on time.

* ``scheduler_down``: from ``start`` to ``end`` the global scheduler is away. Frontends
  dispatch round-robin (or at random) over the live instances; no migration pairing, no
  scaling. At ``end`` it comes back and schedules from fresh load reports.
* ``instance_failure``: at ``at`` the instance dies with everything on it; its requests are
  aborted (or, with ``on_failure: retry``, dispatched again from scratch); migrations that
  touch it abort through the handshake. With ``restart_after``, a fresh instance with zero
  load joins that many seconds later.
* ``transfer_failure``: every migration stage in [start, end] fails with ``probability``.

Windows compose. Overlapping ``scheduler_down`` windows keep the scheduler away until the
last one ends, with the fallback of the most recently started window still open. Each open
``transfer_failure`` window fails a stage independently with its probability (a stage fails
if any of them does). Several ``instance_failure`` faults each act; one that finds its
instance already gone is logged and skipped.

The injector keeps its own state and acts only through ``ClusterActions``.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional, Protocol, Sequence

import numpy as np
import simpy

from sim.config import FaultConfig
from sim.engine.actions import ClusterActions
from sim.engine.sections import result_section
from sim.instance.request import Request

ABORT_INSTANCE_FAILED = "instance_failed"


class FaultEvent(NamedTuple):
    time: float
    event: str
    detail: str | int


class FaultInjector:
    def __init__(
        self,
        env: simpy.Environment,
        faults: Sequence[FaultConfig],
        actions: ClusterActions,
        rng: np.random.Generator,
    ) -> None:
        self.env = env
        self.faults = list(faults)
        self.actions = actions
        self.rng = rng  # stage-failure draws (shared with the frontends' random fallback)
        self.log: list[FaultEvent] = []
        self.transfer_windows = [
            (fault.probability, 0.0 if fault.start is None else fault.start,
             math.inf if fault.end is None else fault.end)
            for fault in self.faults
            if fault.kind == "transfer_failure"
        ]
        # the open scheduler_down windows (their index in ``faults``), oldest first
        self._outages: list[int] = []

    def start(self) -> None:
        """Start one process per timed fault."""
        for index, fault in enumerate(self.faults):
            if fault.kind == "scheduler_down":
                self.env.process(self._scheduler_outage(index))
            elif fault.kind == "instance_failure":
                self.env.process(self._instance_failure(fault))

    def stage_fails(self) -> bool:
        """Draw whether this migration stage's transfer fails (``transfer_failure`` windows)."""
        now = self.env.now
        for probability, start, end in self.transfer_windows:
            if start <= now <= end and self.rng.random() < probability:
                return True
        return False

    def fail_instance(self, instance_id: int, on_failure: str = "abort") -> list[Request]:
        """An instance dies with its KV cache: its requests are aborted, or dispatched again
        from scratch (``retry``)."""
        lost = self.actions.fail(instance_id)
        self.log.append(FaultEvent(self.env.now, "instance_failed", instance_id))
        for request in lost:
            if on_failure == "retry":
                request.restart_from_scratch(instance_id)
                self.actions.dispatch(request)
            else:
                self.actions.end_request(request, ABORT_INSTANCE_FAILED)
        return lost

    def _scheduler_outage(self, index: int):
        env = self.env
        fault = self.faults[index]
        yield env.timeout(fault.start)
        self._outages.append(index)
        self.actions.set_scheduler_down(fault.fallback)
        self.log.append(FaultEvent(env.now, "scheduler_down", fault.fallback))
        yield env.timeout(fault.end - fault.start)
        self._outages.remove(index)  # by window, not by fallback: two may share one
        if self._outages:  # an overlapping window goes on, with the latest one's fallback
            self.actions.set_scheduler_down(self.faults[self._outages[-1]].fallback)
            return
        self.actions.set_scheduler_down(None)
        self.log.append(FaultEvent(env.now, "scheduler_up", ""))

    def _instance_failure(self, fault: FaultConfig):
        env = self.env
        yield env.timeout(fault.at)
        if not self.actions.is_alive(fault.instance):
            self.log.append(FaultEvent(env.now, "instance_failure_skipped", fault.instance))
            return
        self.fail_instance(fault.instance, fault.on_failure)
        if fault.restart_after is not None:
            yield env.timeout(fault.restart_after)
            new_id = self.actions.add_instance(self.actions.pool_of(fault.instance))
            self.log.append(FaultEvent(env.now, "instance_restarted", new_id))


class _Injected(Protocol):
    faults: FaultInjector


def _fault_log(run: _Injected) -> Optional[list[FaultEvent]]:
    return run.faults.log or None


# what broke and came back, when (None: nothing did)
FAULT_LOG = result_section("fault_log", _fault_log)
