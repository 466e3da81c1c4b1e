"""An instance's life in the simulation: its llumlet, billing times, and its step loop."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from heapq import heappush
from typing import Any, Callable, Final, Optional

import simpy

from sim.cluster.step_reports import StepReports
from sim.engine.idle_watch import IdleWatch
from sim.engine.result import BatchRecord
from sim.engine.scheduled_at import ScheduledAtEnvironment
from sim.instance.batch import Batch
from sim.instance.llumlet import Llumlet
from sim.instance.load import LoadReport

# simpy's normal event priority, held in a C static by the compiled engine (a module
# attribute lookup per batch otherwise)
NORMAL: Final = simpy.events.NORMAL
# how many steps a decode stretch plans: at first, and at most. A loop's plan doubles after
# each stretch that ran to its end and is twice what the last one used after a cut, so the
# planning a cut throws away costs about what the stretches used
STRETCH_FIRST: Final = 16
STRETCH_MOST: Final = 4096


class StretchTie(Exception):
    """A stretch's step ended at exactly the time of another event whose order against it
    the stretch cannot tell as stepping would (both scheduled at one instant, or two events
    of one time where one came from a stretch): ``Simulation`` makes the run again step by
    step, so no result ever depends on it."""


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
    # decode stretches: a step loop whose batch can only decode forms its next steps later,
    # unscheduled (``StepLoop``); off when every step must be seen (records, checks) or asked for
    stretches: bool = False
    stretched: dict[int, "StepLoop"] = field(default_factory=dict)  # instance id -> loop in a stretch
    batches: int = 0
    batch_log: list[BatchRecord] = field(default_factory=list)

    def settle(self) -> None:
        """Every stretched loop forms the steps that ended before now: what reads instances'
        state (their reports, a request's progress) reads it as step-by-step runs leave it."""
        for loop in list(self.stretched.values()):
            loop.settle()

    def cut(self, instance_id: int) -> None:
        """Something is about to change the instance: its stretch ends at the step running now."""
        loop = self.stretched.get(instance_id)
        if loop is not None:
            loop.cut()

    def make_exact(self) -> None:
        """Every stretch ends at the step running now (the scheduler goes or comes back:
        reports reach it, or nobody, from now)."""
        for loop in list(self.stretched.values()):
            loop.cut()


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
        self.endpoint = runtime.llumlet.endpoint
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
        # a decode stretch: the ends of the steps running unscheduled (each but the last one's
        # end is a boundary formed later, in ``settle``), their seconds, the next to form
        self._stretches = log.stretches and runtime.llumlet.batches.plans_its_steps()
        self._ends: list[float] = []
        self._seconds: list[float] = []
        self._formed = 0
        self._start = 0.0  # when the stretch's first step started
        self._pushed_at = -1.0  # when this loop's event queued by a stretch is (-1: none)
        self._plan = STRETCH_FIRST  # how many steps the next stretch may plan
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
            self.log.stretched.pop(self.llumlet.id, None)
            pending = self._pending
            if pending is not None and pending.callbacks is not None:
                pending.callbacks.remove(self._step)
            if self.log.idle_watch is not None:
                self.log.idle_watch.forget(self.llumlet.id)

    def _step(self, event: Optional[simpy.Event]) -> None:
        if self._pushed_at >= 0.0:  # a stretch's step end, queued when the stretch began or was cut
            self._pushed_at = -1.0
            env = self.env
            assert isinstance(env, ScheduledAtEnvironment)
            if env.previous_time == env.now or env.peek() == env.now:
                raise StretchTie(f"instance {self.llumlet.id}: a stretch's step end ties another event at t={env.now}")
        if self._batch is not None:  # a batch just ended
            if self._ends:
                self._end_stretch()
                self._plan = min(2 * self._plan, STRETCH_MOST)
            self._complete()
            if not self.alive:
                return  # what the batch or its report started removed this instance
        else:
            self.runtime.wake = None
        batch = self.batches.next_batch()
        env = self.env
        if batch is None:
            wake = self.runtime.wake = env.event()
            wake.callbacks.append(self._step)
            self._pending = wake
            self._went_idle()
            return
        self._form(batch)
        batch_end = self._batch_end
        if self._stretches and self._may_stretch(batch):
            seconds = self.batches.decode_stretch(self._plan)
            if seconds:
                self._start_stretch(batch.seconds, seconds)
                return
        if batch_end is None:
            batch_end = self._batch_end = env.timeout(batch.seconds)
        else:
            env.schedule(batch_end, NORMAL, batch.seconds)
        batch_end.callbacks = self._batch_end_callbacks
        self._pending = batch_end

    def _complete(self) -> None:
        """The batch running ended: its effects, and the report taken when it was formed
        delivered."""
        batch = self._batch
        assert batch is not None
        self._batch = None
        self.batches.complete(batch)
        self.log.batches += 1
        if self._check:
            self.llumlet.check()
        report, step_reports = self._report, self._step_reports
        if report is not None and step_reports is not None:  # a report exists only with both
            self._report = None
            step_reports.deliver(report)

    def _form(self, batch: Batch) -> None:
        """``batch`` runs from now: the report it carries, the instance's busy time."""
        if self._step_reports is not None:
            self._report = self.reporter.report()
            self._drops_reported = self.batches.drops  # this report shows any drop of this step
        duration = batch.seconds
        self.runtime.busy_seconds += duration
        if self._record:
            self.log.batch_log.append(
                BatchRecord(self.batches.id, self.env.now, duration, batch.is_prefill, batch.size)
            )
        self._batch = batch

    # ------------------------------------------------------------------ decode stretches
    def _may_stretch(self, batch: Batch) -> bool:
        """Only a decode step with nothing else on the instance: nothing queued, joining or
        suspended, no migration touching it, no copy slowing it (``BatchFormer.quiet``)."""
        return not batch.is_prefill and not self.endpoint.in_flight and self.batches.quiet()

    def _start_stretch(self, first: float, seconds: list[float]) -> None:
        """The step formed now ends at ``now + first``; the steps of ``seconds`` follow it,
        formed later (``settle``), and the last one's end is this loop's next event. Each end is
        the sum simpy would compute, in the same order."""
        env = self.env
        end = env.now + first
        ends = self._ends
        ends.append(end)
        for duration in seconds:
            end = end + duration
            ends.append(end)
        self._seconds = seconds
        self._formed = 0
        self._start = env.now
        self._push_end(end, ends[-2])
        self.log.stretched[self.llumlet.id] = self

    def settle(self) -> None:
        """Form the stretch's steps whose start has passed (a step ending at exactly now is
        ordered against whatever asks as the step's own event would be, ``_ended_first``), at
        once: the former
        applies them (``BatchFormer.decoded``), their times are added to the busy time one
        by one, as the step loop adds them, and of their reports only the last delivered one
        is built and stored — a view keeps only the latest, and nothing read the others (a
        report differs from the one before only where a step took blocks)."""
        formed = self._formed
        due = bisect_left(self._ends, self.env.now, formed, len(self._seconds))  # boundaries before now
        if due < len(self._seconds) and self._ends[due] == self.env.now and self._ended_first(due):
            due += 1
        if due == formed:
            return
        steps = due - formed
        batches, reporter, ledger = self.batches, self.reporter, self.llumlet.ledger
        report = self._report
        blocks = ledger.allocated  # what a report of this stretch can differ in
        if steps > 1:  # the boundaries before the last: the last one delivers the report formed at them
            batches.decoded(steps - 1, self._seconds[due - 2])
            if report is not None and ledger.allocated != blocks:
                report = reporter.report()
                blocks = ledger.allocated
        self._batch = batches.decoded(1, self._seconds[due - 1])
        self._formed = due
        self.log.batches += steps
        seconds = self._seconds
        busy = self.runtime.busy_seconds
        for index in range(formed, due):  # added one by one, as the step loop adds them
            busy += seconds[index]
        self.runtime.busy_seconds = busy
        step_reports = self._step_reports
        if report is not None and step_reports is not None:
            self._report = reporter.report() if ledger.allocated != blocks else report
            step_reports.deliver_unscheduled(report)

    def _ended_first(self, step: int) -> bool:
        """Whether the stretch's ``step``-th step, ending at exactly now, ends before the
        event being processed: its own event would have been scheduled when the step started,
        so it comes first if that event is not urgent and was scheduled later
        (``sim.engine.scheduled_at``)."""
        env = self.env
        assert isinstance(env, ScheduledAtEnvironment)
        started = self._ends[step - 1] if step else self._start
        if env.priority == NORMAL and env.scheduled_at == started:
            raise StretchTie(f"instance {self.llumlet.id}: a step ending at t={env.now} and the event asking were scheduled at one instant")
        return env.priority == NORMAL and env.scheduled_at > started

    def _push_end(self, end: float, started: float) -> None:
        """This loop's next event at ``end`` exactly (a simpy timeout adds a delay to now),
        scheduled, as the step's own event would have been, when the step ``started``."""
        env = self.env
        batch_end = self._batch_end
        if batch_end is None:
            batch_end = self._batch_end = env.event()
            batch_end._ok = True  # a timeout's state: succeeded, no value
            batch_end._value = None
        batch_end._scheduled_at = started  # type: ignore[attr-defined]
        self._pushed_at = end
        batch_end.callbacks = self._batch_end_callbacks
        heappush(env._queue, (end, NORMAL, next(env._eid), batch_end))
        self._pending = batch_end

    def cut(self) -> None:
        """The stretch ends with the step running now: its end becomes this loop's event."""
        if not self._ends:
            return
        self.settle()
        formed = self._formed
        unformed = len(self._seconds) - formed
        if unformed:
            abandoned = self._batch_end
            assert abandoned is not None
            abandoned.callbacks = []  # its place in the queue passes without effect (an event
            # of no effect: a tie with it is no tie, but ``_step`` cannot tell and steps anyway)
            self._batch_end = None
            self._push_end(self._ends[formed], self._ends[formed - 1] if formed else self._start)
            self._plan = max(STRETCH_FIRST, 2 * formed)
        self._end_stretch()

    def _end_stretch(self) -> None:
        self.settle()
        self._ends = []
        self._seconds = []
        self._formed = 0
        del self.log.stretched[self.llumlet.id]

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
