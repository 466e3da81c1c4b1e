"""Progress for whoever watches: a bar on a terminal, lines in a log.

A sweep or a run logged to a file (CI, a cluster job, ``nohup``) would show nothing until it
ends if it only drew a bar, and a bar redrawn into a file is thousands of lines, so off a
terminal it writes one line to stderr every ``interval`` seconds or each ``step`` of the
total, whichever comes first, and a last one at the end. ``Progress`` counts a sweep's runs
(how many were reused from the store, how many failed); ``RequestProgress`` one run's
requests as they end (finished or aborted, so the count reaches the total only when the run
has drained). Both give the time so far and an ETA from the rate of what this process did.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable, TextIO

LOG_INTERVAL = 30.0  # seconds between lines in a log at most (the "every ~30 s")
LOG_STEP = 0.05  # ... or each 5% of the runs, whichever comes first


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """Counts runs as they finish and shows them: ``update()`` per run, ``close()`` at the end.

    ``total`` runs of which ``reused`` came from the store before anything ran; ``show``
    False shows nothing (``--quiet``). ``stream`` and ``clock`` are for tests; ``delay``
    seconds pass before a bar appears (a short run shows none).
    """

    unit = "run"

    def __init__(
        self,
        name: str,
        total: int,
        reused: int = 0,
        show: bool = True,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval: float = LOG_INTERVAL,
        step: float = LOG_STEP,
        delay: float = 0.0,
    ) -> None:
        self.name, self.total, self.reused = name, total, reused
        self.done, self.failed = reused, 0
        self.stream = stream if stream is not None else sys.stderr
        self.clock, self.interval, self.step = clock, interval, step
        self.step_runs = max(1, math.ceil(step * total))
        self.started = self.last_time = clock()
        self.last_done = self.done
        self.bar = None
        self.lines = show and not _is_terminal(self.stream)
        if show and not self.lines:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total, initial=reused, unit=self.unit, desc=name, file=self.stream, smoothing=0.1,
                delay=delay,
            )
        elif self.lines and self.done < total:
            self._line()

    def plan(self, runs: int, reused: int = 0, more: int = 0) -> None:
        """A search that learns its runs as it goes (capacity): ``runs`` more are planned, of
        which ``reused`` come from the store, and about ``more`` after those (the total and
        the ETA count them)."""
        self.total = self.done + runs + more
        self.step_runs = max(1, math.ceil(self.step * self.total))
        self.reused += reused
        self.done += reused
        if self.bar is not None:
            self.bar.total = self.total
            self.bar.update(reused)

    def update(self, failed: bool = False, count: int = 1) -> None:
        """``count`` more finished (``failed``: one without a result)."""
        self.done += count
        self.failed += failed
        if self.bar is not None:
            self.bar.update(count)
            if failed:
                self.bar.set_postfix(failed=self.failed)
        elif self.lines:
            now = self.clock()
            if now - self.last_time >= self.interval or self.done - self.last_done >= self.step_runs:
                self._line(now)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.lines and self.done != self.last_done:
            self._line()

    def line(self, now: float | None = None) -> str:
        """``name: 48/96 runs (50%): 20 reused, 28 computed, 1 failed; 35 s, ETA 35 s``."""
        now = self.clock() if now is None else now
        elapsed = now - self.started
        computed = self.done - self.reused
        left = self.total - self.done
        eta = elapsed / computed * left if computed else math.inf
        share = 100 * self.done / self.total if self.total else 100.0
        return (
            f"{self.name}: {self.done}/{self.total} {self.unit}s ({share:.0f}%): {self.details()}; "
            f"{_duration(elapsed)}, ETA {_duration(eta) if left else 'done'}"
        )

    def details(self) -> str:
        return f"{self.reused} reused, {self.done - self.reused - self.failed} computed, {self.failed} failed"

    def _line(self, now: float | None = None) -> None:
        now = self.clock() if now is None else now
        print(self.line(now), file=self.stream, flush=True)
        self.last_time, self.last_done = now, self.done


class RequestProgress(Progress):
    """One run's requests as they end: ``advance(ended, now)`` from the run's sampling
    callback (a count of requests finished or aborted, and the simulated time)."""

    unit = "request"

    def __init__(self, name: str, total: int, **options: Any) -> None:
        self.simulated = 0.0  # before the first line, which shows it
        super().__init__(name, total, **options)

    def advance(self, ended: int, now: float) -> None:
        self.simulated = now
        if ended > self.done:
            self.update(count=ended - self.done)

    def details(self) -> str:
        return f"{self.simulated:,.0f} simulated s"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False
