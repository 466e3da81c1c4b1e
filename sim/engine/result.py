"""What a run produced: requests, load samples, logs, and each feature's own section
(``sim.engine.sections``). ``sim.metrics`` turns it into tables, summaries and plots; every
log row is a named tuple, never a positional one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Optional

import numpy as np

from sim.config import SimulationConfig
from sim.instance.load import LoadReport
from sim.instance.request import Request


class LoadSample(NamedTuple):
    """Every live instance's load report at one sampling time."""

    time: float
    starting: int  # scale-outs still in their cold start (billed, not yet reporting)
    reports: tuple[LoadReport, ...]
    headroom: tuple[float, ...] = ()  # adaptive-headroom: each tier's H_p as a fraction of M


class BatchRecord(NamedTuple):
    instance: int
    start: float
    duration: float
    is_prefill: bool
    size: int


@dataclass
class SimulationResult:
    config: SimulationConfig
    requests: list[Request]
    load_samples: list[LoadSample]
    instance_lifetimes: dict[int, tuple[float, float]]
    instance_pools: dict[int, str]  # the pool each instance came from
    end_time: float
    wall_seconds: float
    capacity_blocks: int  # KV blocks of an instance of the first pool
    workload_description: str
    interrupted: bool = False
    batches: int = 0
    batch_log: list[BatchRecord] = field(default_factory=list)
    not_arrived: int = 0  # requests of the workload that had not arrived when the run stopped
    leaked_blocks: int = 0  # allocated or reserved blocks left on any instance at the end (removed ones too)
    # INV-4 idle-view (sim.engine.idle_watch): idle stretches checked, and the instance-seconds
    # of them the scheduler's view still showed the instance busy after its report was due
    idle_stretches: int = 0
    stale_idle_seconds: float = 0.0
    # each request's urgency on the SLO contract's span, by request id (None: no contract)
    urgency: Optional[np.ndarray] = None
    instance_busy_seconds: dict[int, float] = field(default_factory=dict)  # iterations run
    # each feature's raw result by section name, only for the features the run has
    # (sim.engine.sections: read through the feature's ResultSection)
    sections: dict[str, object] = field(default_factory=dict)
