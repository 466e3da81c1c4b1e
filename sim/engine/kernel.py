"""The discrete-event kernel: the clock and the run's own processes — arrivals (and a
conversation's later turns), the tick that runs the parts' jobs every
``load_report_interval``, and the count of requests ended (INV-3 ends-once). It carries out
nothing itself: dispatch is the dispatcher's, each tick job belongs to the part it concerns
(``sim.engine.builder`` lists them in order), and the instances' step loops are their own
(``sim.engine.instances``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence

import simpy

from sim.instance.load import LoadReport
from sim.instance.request import Request

if TYPE_CHECKING:
    from sim.engine.instances import InstanceRuntime
    from sim.workload.build import Workload

# a tick job: called with the tick's time and, when some job reads them this tick, every live
# instance's report
TickJob = Callable[[float, Optional[dict[int, LoadReport]]], None]


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
        # conversations: what each request's tokens are (a prefix cache's identity of its
        # blocks) and the turn each request's end lets arrive (sim.workload.sessions)
        sharing = workload.sharing
        self._contents = sharing.contents() if sharing is not None else None
        self._next_turns = sharing.next_turns() if sharing is not None else {}
        self.dispatch = dispatch
        self.on_end = on_end

    # ------------------------------------------------------------------ arrivals
    def arrivals(self):
        """The requests that arrive at their own time (every one, without conversations:
        a later turn arrives when its previous one ends, ``_next_turn``)."""
        workload = self.workload
        env = self.env
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
        self.dispatch(group)

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
        self.on_end(request)
        if self.done_count == len(self.workload) and not self.all_done.triggered:
            self.all_done.succeed()

    # ------------------------------------------------------------------ the tick
    def tick(
        self,
        jobs: Sequence[TickJob],
        live: Mapping[int, "InstanceRuntime"],
        wants_reports: Callable[[float], bool],
    ):
        """Every ``interval``: one snapshot of the live instances' reports when
        ``wants_reports`` says a job reads one this tick (with per-step reports an idle
        cluster costs no report per tick), then each job in turn, in order."""
        interval = self.interval
        while True:
            now = self.env.now
            reports = (
                {instance_id: r.llumlet.reporter.report() for instance_id, r in live.items()}
                if wants_reports(now)
                else None
            )
            for job in jobs:
                job(now, reports)
            self.next_tick = now + interval
            yield self.env.timeout(interval)
