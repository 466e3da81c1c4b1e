"""The watchdog: a run that stops making progress ends with an error, it never spins.

Two ways a run can get stuck, two cheap checks, neither on the per-event path:

* **No request progresses** while requests are pending (arrived, not ended): a process
  wakes every quarter of the stall span and compares a progress counter (arrivals, tokens
  generated, migrations committed, requests ended). If nothing moved for ``stall_span`` simulated
  seconds it raises. The span is ``STALL_SECONDS`` plus the longest wait the config itself
  can impose — a cold start, an instance restart, the handshake timeout — so a healthy run
  never trips it.
* **Simulated time stops advancing**: the run loop steps simpy in chunks of
  ``EVENTS_PER_CHECK`` events (the same loop ``Environment.run`` is) and raises when
  ``FROZEN_CHECKS`` chunks in a row end at the same instant.

Either raises ``SimulationStalled``, whose message names the stuck requests and where they
are; the CLI prints it on one line and exits with code 3.
"""

from __future__ import annotations

from typing import Callable, Generator, Hashable

import simpy
from simpy.core import EmptySchedule, StopSimulation

from sim.config import SimulationConfig

STALL_SECONDS = 600.0  # simulated seconds without progress, on top of the config's own waits
EVENTS_PER_CHECK = 1 << 16
FROZEN_CHECKS = 16  # ~1M events at one instant


class SimulationStalled(RuntimeError):
    """The run stopped making progress; the message names the stuck requests and instances."""


def stall_span(config: SimulationConfig) -> float:
    """Simulated seconds a healthy run can go without any request progressing."""
    restarts = [f.restart_after or 0.0 for f in config.faults if f.kind == "instance_failure"]
    return (
        STALL_SECONDS
        + config.autoscale.cold_start
        + config.migration.prealloc_timeout
        + max(restarts, default=0.0)
    )


class Watchdog:
    """Watches one simulation through three callables: ``progress()`` changes whenever any
    request moves on, ``pending()`` counts requests arrived and not ended, ``describe()``
    says which requests are stuck and where."""

    def __init__(
        self,
        env: simpy.Environment,
        span: float,
        progress: Callable[[], Hashable],
        pending: Callable[[], int],
        describe: Callable[[], str],
    ) -> None:
        self.env = env
        self.span = span
        self.progress = progress
        self.pending = pending
        self.describe = describe

    def watch(self) -> Generator[simpy.Event, None, None]:
        """The periodic check (a simpy process)."""
        env = self.env
        last, since = self.progress(), env.now
        while True:
            yield env.timeout(self.span / 4)
            progress = self.progress()
            if progress != last or not self.pending():
                last, since = progress, env.now
            elif env.now - since >= self.span:
                raise SimulationStalled(
                    f"simulation stalled: no request progressed from t={since:.3f} to "
                    f"t={env.now:.3f} s (simulated); {self.describe()}"
                )

    def run(self, until: simpy.Event) -> None:
        """``env.run(until=until)``, stepping in chunks so a frozen clock is noticed."""
        env = self.env
        if until.callbacks is None:  # already processed
            return
        until.callbacks.append(StopSimulation.callback)
        step = env.step
        frozen, last = 0, env.now
        try:
            while True:
                for _ in range(EVENTS_PER_CHECK):
                    step()
                if env.now != last:
                    frozen, last = 0, env.now
                    continue
                frozen += 1
                if frozen >= FROZEN_CHECKS:
                    raise SimulationStalled(
                        f"simulation stalled: simulated time stopped at t={env.now:.3f} s "
                        f"({FROZEN_CHECKS * EVENTS_PER_CHECK:,} events without time advancing); "
                        f"{self.describe()}"
                    )
        except StopSimulation:
            return
        except EmptySchedule:
            raise SimulationStalled(
                f"simulation stalled: nothing left to happen at t={env.now:.3f} s; "
                f"{self.describe()}"
            ) from None
