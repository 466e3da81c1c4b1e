"""The typed shape of a llumsim run: one dataclass per YAML section.

Defaults here are the simulator's defaults (see REFERENCE facts in the README). Validation
of a single value happens in ``__post_init__`` and names the field; checks that need other
parts of ``sim`` (is this model known? this scheduler?) happen where those parts are built,
and also raise ``ConfigError`` naming the dotted key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from sim.config.loader import ConfigError


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


@dataclass
class ClusterConfig:
    """The instances: which model on which device, and the per-instance vLLM limits."""

    model: str = "llama-7b"
    device: str = "a10"
    instances: int = 16
    tensor_parallel: Optional[int] = None  # None: the model's default layout (7B: 1, 30B: 4)
    block_size: int = 16
    gpu_memory_utilization: float = 0.9
    kv_capacity_blocks: Optional[int] = None  # None: from memory planning
    max_batched_tokens: int = 12800
    max_batch_size: int = 256
    watermark_fraction: float = 0.01

    def __post_init__(self) -> None:
        _require(self.instances >= 1, f"instances: must be >= 1, got {self.instances}")
        _require(self.block_size >= 1, f"block_size: must be >= 1, got {self.block_size}")
        _require(
            0 < self.gpu_memory_utilization <= 1,
            f"gpu_memory_utilization: must be in (0, 1], got {self.gpu_memory_utilization}",
        )
        _require(
            self.kv_capacity_blocks is None or self.kv_capacity_blocks >= 1,
            f"kv_capacity_blocks: must be >= 1, got {self.kv_capacity_blocks}",
        )
        _require(
            self.max_batched_tokens >= 1,
            f"max_batched_tokens: must be >= 1, got {self.max_batched_tokens}",
        )
        _require(
            self.max_batch_size >= 1, f"max_batch_size: must be >= 1, got {self.max_batch_size}"
        )
        _require(
            0 <= self.watermark_fraction < 1,
            f"watermark_fraction: must be in [0, 1), got {self.watermark_fraction}",
        )
        _require(
            self.tensor_parallel is None or self.tensor_parallel >= 1,
            f"tensor_parallel: must be >= 1, got {self.tensor_parallel}",
        )


@dataclass
class ArrivalConfig:
    """When requests arrive: a renewal process at ``rate``, or the trace's own timestamps."""

    process: Literal["poisson", "gamma", "trace"] = "poisson"
    rate: Optional[float] = 7.5  # requests/s; for ``trace``: time-scale to this rate (None: as recorded)
    cv: float = 1.0  # coefficient of variation of inter-arrival times (gamma only)

    def __post_init__(self) -> None:
        _require(
            self.rate is None or self.rate > 0, f"rate: must be > 0 requests/s, got {self.rate}"
        )
        _require(
            self.process == "trace" or self.rate is not None,
            f"rate: required for the {self.process} arrival process",
        )
        _require(self.cv > 0, f"cv: must be > 0, got {self.cv}")
        _require(
            self.process == "gamma" or self.cv == 1.0,
            f"cv: only the gamma arrival process takes a CV (got {self.cv} with {self.process!r})",
        )


@dataclass
class SyntheticLengthsConfig:
    """Power-law lengths by class (S=128, M=256, L=512 mean tokens), as in the Llumnix paper."""

    input: str = "M"
    output: str = "M"
    max_tokens: int = 6144

    def __post_init__(self) -> None:
        for name in ("input", "output"):
            value = getattr(self, name)
            _require(
                value in ("S", "M", "L"), f"{name}: length class must be S, M or L, got {value!r}"
            )
        _require(self.max_tokens >= 1, f"max_tokens: must be >= 1, got {self.max_tokens}")


@dataclass
class PriorityConfig:
    """How each request gets its tier (0 = most critical, K-1 = background)."""

    sampler: Literal["uniform", "gaussian", "enterprise", "share"] = "uniform"
    tiers: int = 1
    high_share: float = 0.1  # ``share`` sampler: fraction of requests in tier 0 (paper: 10%)

    def __post_init__(self) -> None:
        _require(1 <= self.tiers <= 64, f"tiers: must be in 1..64, got {self.tiers}")
        _require(
            0 <= self.high_share <= 1, f"high_share: must be in [0, 1], got {self.high_share}"
        )


@dataclass
class WorkloadConfig:
    """Where requests come from: a length table, a timestamped trace, or a generator."""

    source: Literal["lengths", "timestamped", "synthetic"] = "lengths"
    trace: Optional[str] = "traces/sharegpt/sharegpt_v3_first_turn.csv"
    format: Literal["auto", "lengths", "burstgpt", "azure"] = "auto"
    num_requests: Optional[int] = 2000  # None: the whole trace (required for synthetic)
    arrival: ArrivalConfig = field(default_factory=ArrivalConfig)
    synthetic: SyntheticLengthsConfig = field(default_factory=SyntheticLengthsConfig)
    priority: PriorityConfig = field(default_factory=PriorityConfig)
    burstgpt_model: Optional[str] = None  # BurstGPT: keep rows of this Model (None: all)
    burstgpt_log_type: Optional[str] = None  # BurstGPT: keep rows of this Log Type (None: all)

    def __post_init__(self) -> None:
        _require(
            self.num_requests is None or self.num_requests >= 1,
            f"num_requests: must be >= 1, got {self.num_requests}",
        )
        _require(
            self.source != "synthetic" or self.num_requests is not None,
            "num_requests: required for source 'synthetic' (a generator has no end)",
        )
        _require(
            self.source == "synthetic" or bool(self.trace),
            f"trace: required for source {self.source!r}",
        )
        _require(
            self.arrival.process != "trace" or self.source == "timestamped",
            "arrival.process: 'trace' needs source 'timestamped' (a trace with timestamps)",
        )


@dataclass
class SchedulerConfig:
    """The global scheduler and how often instances report load to it."""

    name: str = "infaas++"
    load_report_interval: float = 0.05  # seconds between load reports (Llumnix polls at 50 ms)
    count_dispatched_load: bool = True  # add a dispatched request's demand to the view until the next report

    def __post_init__(self) -> None:
        _require(
            self.load_report_interval > 0,
            f"load_report_interval: must be > 0 s, got {self.load_report_interval}",
        )


@dataclass
class OutputConfig:
    """What a run writes under ``<dir>/<name>/``."""

    dir: str = "results"
    timeseries_interval: float = 1.0  # seconds between instance samples
    plots: bool = True
    progress: Optional[bool] = None  # None: show a progress bar on a terminal

    def __post_init__(self) -> None:
        _require(
            self.timeseries_interval > 0,
            f"timeseries_interval: must be > 0 s, got {self.timeseries_interval}",
        )


@dataclass
class SimulationConfig:
    """A whole run: a pure function of this config (and its seed)."""

    name: str = "run"
    seed: int = 0
    time_limit: Optional[float] = None  # stop after this many simulated seconds (None: drain)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    output: OutputConfig = field(default_factory=OutputConfig)

    def __post_init__(self) -> None:
        _require(
            self.time_limit is None or self.time_limit > 0,
            f"time_limit: must be > 0 s, got {self.time_limit}",
        )
