"""An instance's life in the simulation: its llumlet, billing times, and its step loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Final, Optional

import simpy

from sim.cluster.step_reports import StepReports
from sim.engine.idle_watch import IdleWatch
from sim.engine.result import BatchRecord
from sim.instance.batch import Batch
from sim.instance.llumlet import Llumlet
from sim.instance.load import LoadReport

# simpy's normal event priority, held in a C static by the compiled engine (a module
# attribute lookup per batch otherwise)
NORMAL: Final = simpy.events.NORMAL


@dataclass
class InstanceRuntime:
    """An instance's llumlet plus its life in the simulation."""

    llumlet: Llumlet
    pool: Any  # the sim.engine.setup.InstancePool it was built from
    started_at: float  # billed from here (a scale-out's cold start is paid for)
    stopped_at: Optional[float] = None
    wake: Optional[simpy.Event] = None
    loop: Optional["StepLoop"] = None
    busy_seconds: float = 0.0  # iterations run (per-role utilisation)

    def start(self, env: simpy.Environment, log: "StepLog") -> None:
        """Its step loop starts (its first step at the current time)."""
        self.loop = StepLoop(env, self, log)

    def stop(self, now: float) -> None:
        """It leaves the cluster (drained, or failed): billed until ``now``, nothing it
        waits for runs any more."""
        self.stopped_at = now
        if self.loop is not None:
            self.loop.stop()


@dataclass
class StepLog:
    """What the step loops of all instances record (and check) as they go."""

    record_batches: bool = False  # keep a BatchRecord per iteration (timeline export, benches)
    check_every_step: bool = False  # verify block conservation after every iteration (tests)
    # per-step load reports: the state at a step's scheduling, delivered when it ends
    step_reports: Optional[StepReports] = None
    idle_watch: Optional[IdleWatch] = None  # INV-4 idle-view: idle stretches against the view
    # an idle loop reports whenever the view holds another state (scheduler.idle_reports
    # "always"), or only after a drop ("artifact")
    idle_reports_always: bool = True
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
        self.batches = runtime.llumlet.batches  # the part a step drives
        self.reporter = runtime.llumlet.reporter
        # a StepLog's switches are fixed when the simulation is built: read them once
        self._step_reports = log.step_reports
        self._check = log.check_every_step
        self._idle_reports_always = log.idle_reports_always
        self._drops_reported = 0  # the former's drops when this loop last reported idle
        self._record = log.record_batches
        self._pending: Optional[simpy.Event] = None  # the timeout or wake event waited on
        self._batch: Optional[Batch] = None
        self._report: Optional[LoadReport] = None
        self.alive = True
        # one Timeout, built for the first batch and rescheduled (env.schedule) for every later
        # batch's end: what env.timeout(duration) would schedule (same time, priority and
        # insertion order) without building a Timeout per batch (~6% of the event loop); a
        # processed Timeout stays successful, so nothing of simpy's is written
        self._batch_end: Optional[simpy.Event] = None
        # and one callback list for it: simpy only iterates an event's callbacks (stop()
        # removes ours, after which the loop never schedules again)
        self._batch_end_callbacks: list[Callable[[simpy.Event], None]] = [self._step]
        env.process(self._first_step())  # at the start time, urgent, as a process's initialisation

    def _first_step(self):
        """The loop's first step, run by a process whose only job is to start it (simpy's
        public way to act on an urgent event now); every later step is an event callback."""
        if self.alive:
            self._step(None)
        return
        yield  # a generator, as env.process requires

    def stop(self) -> None:
        """The instance was removed or failed: nothing it waits for runs any more."""
        if self.alive:
            self.alive = False
            pending = self._pending
            if pending is not None and pending.callbacks is not None:
                pending.callbacks.remove(self._step)
            if self.log.idle_watch is not None:
                self.log.idle_watch.forget(self.llumlet.id)

    def _step(self, event: Optional[simpy.Event]) -> None:
        batches = self.batches
        batch = self._batch
        if batch is not None:  # a batch just ended
            self._batch = None
            batches.complete(batch)
            self.log.batches += 1
            if self._check:
                self.llumlet.check()
            report, step_reports = self._report, self._step_reports
            if report is not None and step_reports is not None:  # a report exists only with both
                self._report = None
                step_reports.deliver(report)
            if not self.alive:
                return  # what the batch or its report started removed this instance
        else:
            self.runtime.wake = None
        batch = batches.next_batch()
        env = self.env
        if batch is None:
            wake = self.runtime.wake = env.event()
            wake.callbacks.append(self._step)
            self._pending = wake
            self._went_idle()
            return
        if self._step_reports is not None:
            self._report = self.reporter.report()
            self._drops_reported = batches.drops  # this report shows any drop of this step
        duration = batch.seconds
        self.runtime.busy_seconds += duration
        if self._record:
            self.log.batch_log.append(
                BatchRecord(batches.id, env.now, duration, batch.is_prefill, batch.size)
            )
        self._batch = batch
        batch_end = self._batch_end
        if batch_end is None:
            batch_end = self._batch_end = env.timeout(duration)
        else:
            env.schedule(batch_end, NORMAL, duration)
        batch_end.callbacks = self._batch_end_callbacks
        self._pending = batch_end

    def _went_idle(self) -> None:
        """Nothing to run: the scheduler hears the instance as it is now if its view holds
        anything else — after a drop, as the artifact's early return of ``step`` reports;
        with ``scheduler.idle_reports: always`` also after the last request finished or
        migrated out, which the artifact leaves stale (INV-4 idle-view,
        ``sim.engine.idle_watch``) — and an empty instance starts an idle stretch. The wake
        event is already set, so whatever the report starts may wake this loop."""
        llumlet = self.llumlet
        step_reports = self._step_reports
        drops = self.batches.drops
        if step_reports is not None and (self._idle_reports_always or drops != self._drops_reported):
            self._drops_reported = drops
            step_reports.deliver_if_changed(self.reporter.report())
        watch = self.log.idle_watch
        # empty, nothing reserved, and no migration in flight (a destination reserves later)
        idle = llumlet.is_empty and not llumlet.ledger.reserved and not llumlet.endpoint.in_flight
        if watch is not None and self.alive and idle:
            watch.idle(llumlet.id, self.env.now)
