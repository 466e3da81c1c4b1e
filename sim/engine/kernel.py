"""The discrete-event kernel: the clock and the run's own processes — arrivals (a
conversation's later turns, and a workload's stages, each after the one before ended), the tick that runs the parts' jobs every
``load_report_interval`` while the cluster has something to do, and the count of requests
ended (INV-3 ends-once). It carries out
nothing itself: dispatch is the dispatcher's, each tick job belongs to the part it concerns
(``sim.engine.builder`` lists them in order), and the instances' step loops are their own
(``sim.engine.instances``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Optional, Sequence

import numpy as np
import simpy

from sim.engine.sections import result_section
from sim.instance.load import LoadReport
from sim.instance.request import Request

if TYPE_CHECKING:
    from sim.engine.instances import InstanceRuntime
    from sim.workload.build import Workload
    from sim.workload.stages import Stages

# a tick job: called with the tick's time and, when some job reads them this tick, every live
# instance's report
TickJob = Callable[[float, Optional[dict[int, LoadReport]]], None]

# grid times computed at once while the tick catches up with a long sleep (8 MiB of floats)
_GRID_CHUNK = 1 << 20


def grid_after(start: float, step: float, until: float) -> tuple[float, int]:
    """The first of ``start``, ``start + step``, ``(start + step) + step``, … at or after
    ``until`` — added one step at a time, as the tick's own timeouts add them, so a tick that
    slept lands on the times it would have run at, to the last bit — and how many come
    before it. ``np.add.accumulate`` adds left to right as that loop does, a chunk at once,
    so a day of 1-ms ticks takes milliseconds."""
    time, before = start, 0
    while time < until:
        count = min(_GRID_CHUNK, int((until - time) / step) + 2)
        grid = np.add.accumulate(np.concatenate(([time], np.full(count, step))))
        first = int(np.searchsorted(grid, until, side="left"))  # grid[first] >= until
        if first < len(grid):
            return float(grid[first]), before + first
        time, before = float(grid[-1]), before + count
    return time, before


def delay_to(now: float, when: float) -> float:
    """A timeout delay that lands at ``when``: simpy schedules at ``now + delay``, which
    ``when - now`` can miss by a rounding. Where no float sum ``now + delay`` equals
    ``when`` (a sum halfway between two floats rounds to the even one) it lands on the float
    just after it — never before."""
    delay = max(when - now, 0.0)
    while now + delay < when:
        delay += math.ulp(when)  # moves the sum by about one of its own units
    return delay


@dataclass
class _StageTimes:
    started: float  # the stage began (its timer starts ``Stages.lead`` later)
    last_end: float = math.nan  # its last request ended (NaN: not all have)


class StageRecord(NamedTuple):
    """One stage of a staged workload (``sim.workload.stages``) as the run played it out."""

    stage: int
    rate: float  # requested, requests/s
    duration: float  # requested, seconds
    first: int  # its requests' ids: first .. end - 1
    end: int
    started: float  # simulated seconds
    timer: float  # its timer started: its requests arrive at their offsets from here
    last_end: float  # its last request ended (NaN: the run stopped first)
    ended: float  # the generator found it over (NaN: the run stopped first)


class Kernel:
    """The clock, the requests that arrived, which of them ended, and the processes that
    bring them in and run the tick. ``dispatch`` sends a group of requests arriving at one
    instant into the cluster; ``on_end`` hears every request that ends, after it is counted."""

    def __init__(
        self,
        env: simpy.Environment,
        workload: "Workload",
        interval: float,
        dispatch: Callable[[Sequence[Request]], None],
        on_end: Callable[[Request], None],
    ) -> None:
        self.env = env
        self.workload = workload
        self.interval = interval
        # the llumlets read the clock ~3 times per batch: simpy's ``now`` property returns
        # ``_now``; reading the attribute directly is 2-3% of the event loop
        self.clock: Callable[[], float] = functools.partial(getattr, env, "_now")
        self.requests: list[Request] = []
        self.done = bytearray(len(workload))  # one flag per workload request: ended
        self.done_count = 0
        self.all_done = env.event()
        self.next_tick = 0.0  # when the tick next runs (periodic reports are due then)
        self._asleep: Optional[simpy.Event] = None  # the tick sleeps until it triggers (``wake``)
        # conversations: what each request's tokens are (a prefix cache's identity of its
        # blocks) and the turn each request's end lets arrive (sim.workload.sessions)
        sharing = workload.sharing
        self._contents = sharing.contents() if sharing is not None else None
        self._next_turns = sharing.next_turns() if sharing is not None else {}
        # stages (sim.workload.stages): each stage's requests arrive once the stage before
        # ended; per stage, its requests not yet ended, and the event of their ending
        stages = workload.stages
        self.stage_times: list[_StageTimes] = []
        self._stage_of: Optional[list[int]] = None
        self._stage_left: list[int] = []
        self._stage_over: list[simpy.Event] = []
        if stages is not None:
            self._stage_of = stages.of(range(len(workload))).tolist()
            self._stage_left = [int(n) for n in stages.first[1:] - stages.first[:-1]]
            self._stage_over = [env.event() for _ in range(len(stages))]
        self.dispatch = dispatch
        self.on_end = on_end

    # ------------------------------------------------------------------ arrivals
    def arrivals(self):
        """The requests that arrive at their own time (every one, without conversations:
        a later turn arrives when its previous one ends, ``_next_turn``; with stages, stage
        by stage, ``_staged_arrivals``)."""
        workload = self.workload
        env = self.env
        if workload.stages is not None:
            yield from self._staged_arrivals(workload.stages)
            return
        arrivals = workload.arrival.tolist()
        opening = workload.sharing.opening.tolist() if workload.sharing is not None else range(len(arrivals))
        position, count = 0, len(opening)
        while position < count:
            arrival = arrivals[opening[position]]
            if arrival > env.now:
                yield env.timeout(arrival - env.now)
            end = position + 1
            while end < count and arrivals[opening[end]] == arrival:
                end += 1
            self._arrive([self._new_request(opening[i], arrival) for i in range(position, end)])
            position = end

    def _staged_arrivals(self, stages: "Stages"):
        """Stage by stage: its requests at their offsets from its timer's start, then, once
        every one of them ended and the generator's check found it so, the interval before
        the next stage."""
        env = self.env
        offsets = stages.offset.tolist()
        bounds = stages.first.tolist()
        for stage in range(len(stages)):
            begin, end = bounds[stage], bounds[stage + 1]
            times = _StageTimes(env.now)
            self.stage_times.append(times)
            timer = times.started + stages.lead
            position = begin
            while position < end:
                arrival = timer + offsets[position]
                if arrival > env.now:
                    yield env.timeout(arrival - env.now)
                group = position + 1
                while group < end and offsets[group] == offsets[position]:
                    group += 1
                self._arrive([self._new_request(i, arrival) for i in range(position, group)])
                position = group
            if stage + 1 == len(stages):
                return
            if end > begin:
                yield self._stage_over[stage]
            ended = stages.ended(times.started, times.last_end, end - begin)
            yield env.timeout(ended + stages.interval - env.now)

    def stage_records(self) -> Optional[list[StageRecord]]:
        """Each stage begun, as played out (None: the workload has no stages)."""
        stages = self.workload.stages
        if stages is None:
            return None
        records = []
        for stage, times in enumerate(self.stage_times):
            begin, end = int(stages.first[stage]), int(stages.first[stage + 1])
            over = end == begin or not math.isnan(times.last_end)
            records.append(StageRecord(
                stage, float(stages.rate[stage]), float(stages.duration[stage]), begin, end, float(times.started),
                times.started + stages.lead, times.last_end,
                stages.ended(times.started, times.last_end, end - begin) if over else math.nan,
            ))
        return records

    def _new_request(self, index: int, arrival: float) -> Request:
        workload = self.workload
        content = self._contents[index] if self._contents is not None else None
        return Request(
            index,
            arrival,
            int(workload.prompt_tokens[index]),
            int(workload.output_tokens[index]),
            int(workload.tier[index]),
            content,
        )

    def _arrive(self, group: list[Request]) -> None:
        self.requests.extend(group)
        self.wake()
        self.dispatch(group)

    @property
    def in_flight(self) -> int:
        """Requests arrived and not ended."""
        return len(self.requests) - self.done_count

    def _next_turn(self, index: int):
        """A conversation's next turn: its message a think time after the last answer ended."""
        yield self.env.timeout(float(self.workload.sharing.think[index]))
        self._arrive([self._new_request(index, self.env.now)])

    # ------------------------------------------------------------------ endings
    def end_request(self, request: Request, reason: str) -> None:
        """Abort a request for good, with a reason (no instance left to take it, a failure)."""
        request.abort(reason, self.env.now)
        self.request_done(request)

    def request_done(self, request: Request) -> None:
        """Every request ends here exactly once: finished, or aborted with a reason (INV-3
        ends-once)."""
        if self.done[request.id]:
            raise AssertionError(f"request {request.id} ended twice")
        self.done[request.id] = 1
        self.done_count += 1
        follower = self._next_turns.get(request.id)
        if follower is not None:
            self.env.process(self._next_turn(follower))
        if self._stage_of is not None:
            stage = self._stage_of[request.id]
            self._stage_left[stage] -= 1
            if not self._stage_left[stage]:
                self.stage_times[stage].last_end = self.env.now
                self._stage_over[stage].succeed()
        self.on_end(request)
        if self.done_count == len(self.workload) and not self.all_done.triggered:
            self.all_done.succeed()

    # ------------------------------------------------------------------ the tick
    def tick(
        self,
        jobs: Sequence[TickJob],
        live: Mapping[int, "InstanceRuntime"],
        wants_reports: Callable[[float], bool],
        idle: Callable[[], bool] = lambda: False,
        slept: Callable[[int], None] = lambda rounds: None,
        settle: Optional[Callable[[float], None]] = None,
        quiet_until: Callable[[], Optional[float]] = lambda: None,
    ):
        """Every ``interval``: one snapshot of the live instances' reports when
        ``wants_reports`` says a job reads one this tick (with per-step reports an idle
        cluster costs no report per tick), then each job in turn, in order. After a tick
        that finds the cluster ``idle`` (nothing in flight, nothing that acts on the clock:
        ``sim.engine.builder.cluster_idle``) it sleeps until ``wake`` — no report round, job
        or sample while nothing can change — and resumes at the next time of its own grid;
        ``slept`` hears how many rounds it skipped. An idle stretch of a day costs what
        one tick costs, not a day of ticks. A busy cluster whose jobs have nothing to do
        before ``quiet_until()`` (a time; None: they may at the next tick) sleeps the same way
        until the grid's first time from then, or a wake. ``settle``, first at each tick,
        brings what its jobs read of the instances up to now (decode stretches)."""
        interval = self.interval
        env = self.env
        while True:
            now = env.now
            if settle is not None:
                settle(now)
            reports = (
                {instance_id: r.llumlet.reporter.report() for instance_id, r in live.items()}
                if wants_reports(now)
                else None
            )
            for job in jobs:
                job(now, reports)
            self.next_tick = now + interval
            if not idle():
                until = quiet_until()
                if until is None or until <= self.next_tick:
                    yield env.timeout(interval)
                    continue
                asleep = self._asleep = env.event()
                quiet_end, _ = grid_after(self.next_tick, interval, until)
                env.timeout(delay_to(now, quiet_end)).callbacks.append(
                    lambda _: self.wake() if self._asleep is asleep else None
                )
            else:
                self._asleep = env.event()
            yield self._asleep
            self._asleep = None
            self.next_tick, skipped = grid_after(self.next_tick, interval, env.now)
            slept(skipped)
            yield env.timeout(delay_to(env.now, self.next_tick))
            self.next_tick = env.now  # the grid's time, or the float after it (``delay_to``)

    def wake(self) -> None:
        """Something may give the tick work again (a request arrived, an instance came,
        left or drained, the scheduler went down or up): a sleeping tick resumes."""
        if self._asleep is not None and not self._asleep.triggered:
            self._asleep.succeed()


def _stage_records(run: Any) -> Optional[list[StageRecord]]:
    return run.kernel.stage_records()


# a staged workload's stages as the run played them out (None: the workload has no stages)
STAGES = result_section("stages", _stage_records)
