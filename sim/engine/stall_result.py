"""The decode stall in a run's result: the request-seconds running requests waited behind
prefill iterations, summed over every instance, removed ones included (each batch former
counts its own, ``BatchFormer.decode_stall``)."""

from __future__ import annotations

from typing import Protocol

from sim.engine.instances import InstanceRuntime
from sim.engine.sections import result_section


class _Run(Protocol):
    instances: dict[int, InstanceRuntime]


def _stall(run: _Run) -> float:
    return sum(runtime.llumlet.batches.decode_stall for runtime in run.instances.values())


# every run has one (0 where no prefill ran beside a decode)
DECODE_STALL = result_section("decode_stall", _stall)
