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
    process: Optional[simpy.Process] = None


@dataclass
class StepLog:
    """What the step loops of all instances record (and check) as they go."""

    record_batches: bool = False  # keep a BatchRecord per iteration (timeline export, benches)
    check_every_step: bool = False  # verify block conservation after every iteration (tests)
    # per-step load reports: the state at a step's scheduling, delivered when it ends
    on_report: Optional[Callable[[LoadReport], None]] = None
    batches: int = 0
    batch_log: list[BatchRecord] = field(default_factory=list)


def step_loop(env: simpy.Environment, runtime: InstanceRuntime, log: StepLog):
    """Form a batch, take the replica model's time for it, apply it; sleep while idle."""
    llumlet = runtime.llumlet
    next_batch, iteration_time, complete = llumlet.next_batch, llumlet.iteration_time, llumlet.complete
    timeout = env.timeout
    on_report, record, check = log.on_report, log.record_batches, log.check_every_step
    try:
        while True:
            batch = next_batch()
            if batch is None:
                llumlet.busy = False
                runtime.wake = env.event()
                yield runtime.wake
                runtime.wake = None
                continue
            llumlet.busy = True
            report = llumlet.report() if on_report is not None else None
            duration = iteration_time(batch)
            if record:
                log.batch_log.append(
                    BatchRecord(llumlet.id, env.now, duration, batch.is_prefill, batch.size)
                )
            yield timeout(duration)
            complete(batch)
            log.batches += 1
            if check:
                llumlet.check()
            if report is not None:
                on_report(report)
    except simpy.Interrupt:
        return  # the instance was removed or failed
