"""An instance's life in the simulation: its llumlet, billing times, and its step loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import simpy

from sim.engine.result import BatchRecord
from sim.instance.llumlet import Llumlet
from sim.instance.load import LoadReport


@dataclass
class InstanceRuntime:
    """An instance's llumlet plus its life in the simulation."""

    llumlet: Llumlet
    started_at: float  # billed from here (a scale-out's cold start is paid for)
    stopped_at: Optional[float] = None
    wake: Optional[simpy.Event] = None
    loop: Optional["StepLoop"] = None


@dataclass
class StepLog:
    """What the step loops of all instances record (and check) as they go."""

    record_batches: bool = False  # keep a BatchRecord per iteration (timeline export, benches)
    check_every_step: bool = False  # verify block conservation after every iteration (tests)
    # per-step load reports: the state at a step's scheduling, delivered when it ends
    on_report: Optional[Callable[[LoadReport], None]] = None
    batches: int = 0
    batch_log: list[BatchRecord] = field(default_factory=list)


class StepLoop:
    """An instance's loop — form a batch, take the replica model's time for it, apply it,
    sleep while idle — driven by event callbacks rather than a simpy process: one timeout
    per batch and no generator to resume (a process resume was ~10% of the event loop).
    Event for event it runs as the process did: the first step waits for an urgent event at
    the start time, as a process's initialisation does."""

    def __init__(self, env: simpy.Environment, runtime: InstanceRuntime, log: StepLog) -> None:
        self.env = env
        self.runtime = runtime
        self.log = log
        self.llumlet = runtime.llumlet
        self._pending: Optional[simpy.Event] = None  # the timeout or wake event waited on
        self._batch = None
        self._report: Optional[LoadReport] = None
        self.alive = True
        start = simpy.Event(env)
        start.callbacks.append(self._step)
        start._ok = True
        start._value = None
        env.schedule(start, simpy.events.URGENT)
        self._pending = start

    def stop(self) -> None:
        """The instance was removed or failed: nothing it waits for runs any more."""
        if self.alive:
            self.alive = False
            pending = self._pending
            if pending is not None and pending.callbacks is not None:
                pending.callbacks.remove(self._step)

    def _step(self, event: simpy.Event) -> None:
        runtime, llumlet, log = self.runtime, self.llumlet, self.log
        batch = self._batch
        if batch is not None:  # a batch just ended
            self._batch = None
            llumlet.complete(batch)
            log.batches += 1
            if log.check_every_step:
                llumlet.check()
            report = self._report
            if report is not None:
                self._report = None
                log.on_report(report)
            if not self.alive:
                return  # the report started something that removed this instance
        else:
            runtime.wake = None
        batch = llumlet.next_batch()
        env = self.env
        if batch is None:
            llumlet.busy = False
            wake = runtime.wake = env.event()
            wake.callbacks.append(self._step)
            self._pending = wake
            return
        llumlet.busy = True
        if log.on_report is not None:
            self._report = llumlet.report()
        duration = llumlet.iteration_time(batch)
        if log.record_batches:
            log.batch_log.append(BatchRecord(llumlet.id, env.now, duration, batch.is_prefill, batch.size))
        self._batch = batch
        timeout = env.timeout(duration)
        timeout.callbacks.append(self._step)
        self._pending = timeout
