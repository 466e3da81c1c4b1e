"""The typed shape of a llumsim run: one dataclass per YAML section.

Defaults here are the simulator's defaults (the facts behind them: docs/replica-model.md and docs/schedulers.md). Validation
of a single value happens in ``__post_init__`` and names the field; checks that need other
parts of ``sim`` (is this model known? this scheduler?) happen where those parts are built,
and also raise ``ConfigError`` naming the dotted key.

Every numeric key has a finite ``Range`` in its section's ``RANGES`` (``sim.config.ranges``).
The ``workload`` section lives in ``sim.config.workload_schema``.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import ClassVar, Literal, Optional

from sim.config.loader import OMIT_WHEN_DEFAULT, OMIT_WHEN_EMPTY
from sim.config.prerequisites import Needs, check as check_prerequisites
from sim.config.ranges import (
    DURATION,
    FRACTION,
    FREENESS,
    INSTANCES,
    SECONDS,
    Range,
    check_ranges,
    check_run_name,
    require,
)
from sim.config.slo_schema import SloConfig
from sim.config.spot_schema import SpotConfig
from sim.config.workload_schema import WorkloadConfig

# the ledger that keeps a prefix cache (sim.instance.parts.LEDGERS)
PREFIX_CACHING = "prefix-caching"
# dispatch rules that rank instances by the cached prefix each holds (those whose class says
# ``reads_cache``; tests/test_prerequisites.py keeps the two lists one)
CACHE_READING_DISPATCH = ("cache-aware",)


def _caches(config: "SimulationConfig") -> bool:
    """Some pool keeps a prefix cache."""
    return any(pool.ledger == PREFIX_CACHING for pool in config.instance_pools())


_NEEDS_CACHE = f"cluster.ledger: {PREFIX_CACHING} (pools[*].ledger) in some pool"


@dataclass
class OverheadConfig:
    """The serving engine's CPU work per iteration, added to every iteration's GPU time.

    Defaults: vLLM's scheduling, input preparation, sampling, output processing and Ray
    hand-off, measured by Vidur for LLaMA-2-7B on the A10's GA102 die (A40): the line through
    https://github.com/microsoft/vidur/blob/main/data/profiling/a40/cpu_overheads.csv
    (means, batch 8-48), plus the per-sequence sampler loop of the artifact's vLLM 0.1.2 and
    its detokenizer, which turns every batched request's whole output back into text at every
    step, as measured on its tokenizer stack (``sim/hardware/overheads.py``,
    ``sim/hardware/detokenizer.py``). The A10 calibration assumes them. A pool whose
    ``base`` and ``per_request`` are left at these defaults takes its own GPU's measured line
    instead (the device entry's ``cpu_overheads`` in ``sim/hardware/skus.py``: the A10's is
    this one, the A100's and H100's an A100 host's).
    """

    base: float = 1.6328e-3  # s per iteration
    per_request: float = 3.7305e-4  # s per request in the iteration's batch
    per_output_token: float = 2.1086e-7  # s per output token the batched requests hold

    RANGES: ClassVar[dict[str, Range]] = {
        "base": Range(0.0, 1.0, "s"),
        "per_request": Range(0.0, 0.1, "s"),
        "per_output_token": Range(0.0, 1e-3, "s"),
    }

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class ClusterConfig:
    """The instances: which model on which device, and the per-instance vLLM limits."""

    # llama-7b (one A10) or llama-30b (4 x A10, tensor parallel 4); on a100_80gb and h100_80gb
    # also llama-3.1-8b (one GPU), llama-2-70b and llama-3.1-70b (2, 4 or 8 GPUs)
    model: str = "llama-7b"
    device: str = "a10"  # the GPU the replica model is profiled on
    instances: int = 16  # instances at the start (with autoscale: the count it starts from)
    # GPUs per instance; None: the model's only layout on the device (7B: 1, 30B: 4, 8B: 1;
    # the 70B models, profiled at 2, 4 and 8, need it named)
    tensor_parallel: Optional[int] = None
    block_size: int = 16  # tokens per KV block (vLLM's 16)
    # share of GPU memory vLLM may use; the KV cache gets what the profile run leaves
    gpu_memory_utilization: float = 0.9
    kv_capacity_blocks: Optional[int] = None  # None: from memory planning
    # tokens one iteration may batch (vLLM's max_num_batched_tokens)
    max_batched_tokens: int = 12800
    max_batch_size: int = 256  # requests one iteration may batch (vLLM's max_num_seqs)
    watermark_fraction: float = 0.01  # share of KV blocks admission keeps free (vLLM's watermark)
    overhead: OverheadConfig = field(default_factory=OverheadConfig)
    # × the GPU time of iterations without a prefill chunk (1.0: the A10 calibration, whose
    # light-batch decode follows the Llumnix paper's Figure 4; see docs/replica-model.md)
    decode_scale: float = 1.0
    # × the GPU time of iterations with a prefill chunk, and × the KV blocks memory planning
    # gives: the replica model's error bands (a conclusion is robust where it survives step
    # time ×0.9/×1.1 and KV ±5%)
    prefill_scale: float = field(default=1.0, metadata={OMIT_WHEN_DEFAULT: True})
    kv_scale: float = field(default=1.0, metadata={OMIT_WHEN_DEFAULT: True})
    # the serving engine the instances run (sim.instance.parts.ENGINES): vllm-0.1.2, the Llumnix
    # artifact's (a step prefills or decodes; its host work, sim/hardware/overheads.py), or
    # vllm-v1, vLLM V1 (one token budget a step, prompts chunked into batches with decodes,
    # sim/instance/v1_batching.py; its host work without the detokenizer): it names the batch
    # former, unless batch_former does, and the host work the overheads left at their defaults are
    engine: str = field(default="vllm-0.1.2", metadata={OMIT_WHEN_DEFAULT: True})
    # vllm-v1 only: schedule step n+1 and build its inputs while the GPU runs step n (vLLM's
    # --async-scheduling: from 0.10.0, on by default from 0.14.0), so that host work costs a
    # step only where it outlasts the GPU's (sim/hardware/overheads.py, V1_OVERLAPPED_PHASES)
    async_scheduling: bool = field(default=False, metadata={OMIT_WHEN_DEFAULT: True})
    # the llumlet's replaceable parts, by registered name (sim.instance.parts): the batch
    # former ("": the engine's; vllm: vLLM 0.1.2's continuous batching, vllm-v1: V1's) and the
    # block ledger (paged: its blocks; prefix-caching: vLLM's automatic prefix caching,
    # sim.instance.prefix_cache)
    batch_former: str = field(default="", metadata={OMIT_WHEN_DEFAULT: True})
    ledger: str = field(default="paged", metadata={OMIT_WHEN_DEFAULT: True})

    # batch limits above what the replica model is profiled for are refused by the engine
    # (sim.engine.setup.check_profiled_limits), before the model is built
    RANGES: ClassVar[dict[str, Range]] = {
        "instances": INSTANCES,
        "tensor_parallel": Range(1, 64),
        "block_size": Range(1, 1024, "tokens"),
        "gpu_memory_utilization": Range(0.0, 1.0, open_low=True),
        "kv_capacity_blocks": Range(1, 10_000_000, "blocks"),
        "max_batched_tokens": Range(1, 10_000_000, "tokens"),
        "max_batch_size": Range(1, 100_000),
        "watermark_fraction": Range(0.0, 1.0, open_high=True),
        "decode_scale": Range(0.0, 100.0, open_low=True),
        "prefill_scale": Range(0.0, 100.0, open_low=True),
        "kv_scale": Range(0.0, 100.0, open_low=True),
    }

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class PoolConfig(ClusterConfig):
    """A named pool of instances: one replica model and one set of vLLM limits (every key of
    ``cluster``). A run's instances come from ``pools``; ``cluster`` is the one-pool
    shorthand (its pool is named ``cluster``)."""

    name: str = "cluster"  # the pool's name, unique among the pools
    # prefill/decode disaggregation (``pd``): mixed instances do both, as vLLM does; prefill
    # instances take new requests and hand each one's KV to a decode instance after its first
    # token; decode instances take only hand-offs
    role: Literal["mixed", "prefill", "decode"] = field(default="mixed", metadata={OMIT_WHEN_DEFAULT: True})
    # a spot pool: its price, preemption source and grace period (sim.config.spot_schema; left
    # out when unset, so other configs keep their hash)
    spot: Optional[SpotConfig] = field(default=None, metadata={OMIT_WHEN_EMPTY: True})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_run_name("name", self.name)


def as_pool(cluster: ClusterConfig, name: str = "cluster") -> PoolConfig:
    """The ``cluster`` section as a pool of that name."""
    return PoolConfig(name=name, **{f.name: getattr(cluster, f.name) for f in fields(ClusterConfig)})


@dataclass
class HeadroomConfig:
    """K-tier headroom: tier p reserves H_p = M * h_max * exp(-decay * p) blocks while it runs."""

    h_max: float = 0.20  # tier 0's headroom, as a fraction of an instance's blocks M
    decay: float = 1.0  # lambda: how fast headroom shrinks from one tier to the next
    lowest_tier_none: bool = True  # the background tier (K-1) gets no headroom
    max_total: float = 0.5  # cap on the headroom of all tiers together, as a fraction of M
    blocks: Optional[list[float]] = None  # explicit per-tier headroom, e.g. [100, 0] (the paper's scheme)

    RANGES: ClassVar[dict[str, Range]] = {
        "h_max": FRACTION,
        "decay": Range(0.0, 100.0),
        "max_total": FRACTION,
        "blocks": Range(0.0, 10_000_000.0, "blocks"),
    }

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class AdaptiveHeadroomConfig:
    """The ``adaptive-headroom`` mode's controller (``sim.cluster.adaptive_headroom``): every
    ``interval`` seconds a tier missing its SLO gets ``step``·M more headroom, one with slack
    gives ``step``·M back. Defaults: a window of 10 s holds ~75 requests at the quickstart's
    7.5 req/s, enough to tell 99% from 95%; 2% of M is ~16 blocks of a 782-block A10 instance,
    one 256-token request's KV cache."""

    interval: float = 10.0  # seconds between controller steps: the attainment window
    step: float = 0.02  # headroom moved per step, as a fraction of an instance's blocks M

    RANGES: ClassVar[dict[str, Range]] = {
        "interval": Range(0.001, 86_400.0, "s"),
        "step": Range(0.0, 1.0, open_low=True),
    }

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class SchedulerPriorityConfig:
    """How tiers turn into load (``sim.cluster.priority``); None: the preset's choice."""

    mode: Optional[str] = None  # none, load-target (the artifact's), headroom (the K-tier scheme)
    # load-target: tokens an instance led by tier p may hold before it looks full, for tiers
    # 0..K-2 (None: 1,600 for tier 0 — the paper's — then geometric steps to capacity)
    load_targets: Optional[list[float]] = None
    local: Optional[Literal["fcfs", "tier"]] = None  # the llumlet's queue/preemption order
    # the adaptive-headroom mode's controller (None: its defaults; left out of the resolved
    # config when unset, so configs without it keep their hash)
    adaptive: Optional[AdaptiveHeadroomConfig] = field(default=None, metadata={OMIT_WHEN_EMPTY: True})

    RANGES: ClassVar[dict[str, Range]] = {
        "load_targets": Range(0.0, 1e9, "tokens", open_low=True),
    }

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class SchedulerConfig:
    """The global scheduler: a preset of named rules, their overrides, and their knobs.

    ``None`` means "the preset's" (``sim.cluster.PRESETS``): the artifact's presets
    (round-robin, infaas++, llumnix, llumnix-base) report per engine step and count no
    dispatched load, and all but round-robin use load control; the paper-prose presets (llumnix-prose,
    llumnix-prose-base) report every ``load_report_interval`` and count dispatched load.
    """

    name: str = "infaas++"  # a preset bundle of the parts below (sim.cluster.PRESETS)
    dispatch: Optional[str] = None  # dispatch rule, sim.cluster.DISPATCH_RULES
    pairing: Optional[str] = None  # migration pairing rule, or "none"
    ordering: Optional[str] = None  # order of simultaneous arrivals
    priority: SchedulerPriorityConfig = field(default_factory=SchedulerPriorityConfig)
    reports: Optional[Literal["per-step", "periodic"]] = None  # when instances report load
    # what a per-step loop that finds nothing to run reports: "always" its state then, if the
    # view holds another (INV-4 idle-view); "artifact" only after it dropped a request, as the
    # artifact's early return of step does (after the last request finished or migrated out,
    # its view keeps the last busy snapshot)
    idle_reports: Literal["always", "artifact"] = "always"
    load_report_interval: float = 0.05  # seconds between periodic reports and samples (50 ms)
    count_dispatched_load: Optional[bool] = None  # add dispatched demand to the view until the next report
    load_control: Optional[bool] = None  # the artifact's --enable-load-control-prefill
    # pairing every N load-report rounds (per-step reports: every N x instances reports,
    # the artifact's need_migrate_frequency = 4)
    pairing_every: int = 4
    source_below: float = 3.0  # freeness under this makes an instance a migration source
    destination_above: float = 3.0  # freeness over this makes an instance a migration destination
    headroom: HeadroomConfig = field(default_factory=HeadroomConfig)

    RANGES: ClassVar[dict[str, Range]] = {
        "load_report_interval": Range(0.001, 3600.0, "s"),
        "pairing_every": Range(1, 1_000_000),
        "source_below": FREENESS,
        "destination_above": FREENESS,
    }
    NEEDS: ClassVar[dict[str, Needs]] = {
        "dispatch": Needs(_NEEDS_CACHE + " (it ranks instances by their cached prefix)", _caches,
                          values=CACHE_READING_DISPATCH),
    }

    def __post_init__(self) -> None:
        check_ranges(self)
        require(
            self.destination_above >= self.source_below,
            f"destination_above: must be >= source_below ({self.source_below}), "
            f"got {self.destination_above}",
        )


@dataclass
class TransferConfig:
    """KV-cache transfer model overrides (None: the A10 calibration)."""

    stage_latency: Optional[float] = None  # seconds per stage: pre-allocate, ACK, send set-up
    gpu_bandwidth: Optional[float] = None  # bytes/s one GPU moves (GPU->CPU staging + Gloo)
    network_bandwidth: Optional[float] = None  # bytes/s one instance's network link carries

    RANGES: ClassVar[dict[str, Range]] = {
        "stage_latency": Range(0.0, 60.0, "s", open_low=True),
        "gpu_bandwidth": Range(1e6, 1e13, "bytes/s"),  # 1 MB/s .. 10 TB/s
        "network_bandwidth": Range(1e6, 1e13, "bytes/s"),
    }

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class MigrationConfig:
    """How a request moves between instances (used by the llumnix schedulers)."""

    # live: staged copies while decoding; blocking: one copy with the request stopped;
    # recompute: the destination prefills it again
    mode: Literal["live", "blocking", "recompute"] = "live"
    candidate: Optional[str] = None  # which running request a source moves (None: the preset's)
    # enter the last stage when at most this many blocks remain (0: never before max_stages,
    # so max_stages 2 is the artifact's protocol: all but the last block live, then the rest)
    last_stage_blocks: int = 16
    max_stages: int = 3  # the stage after this many is the last one regardless
    colocated_slowdown: float = 0.01  # iterations overlapping a copy take this much longer
    prealloc_timeout: float = 10.0  # seconds before a destination frees an orphaned reservation
    transfer: TransferConfig = field(default_factory=TransferConfig)
    # with a prefix cache (cluster.ledger: prefix-caching): copy only the blocks the
    # destination does not hold already; false copies every block, as a cache-blind engine
    skip_cached: bool = field(default=True, metadata={OMIT_WHEN_DEFAULT: True})

    RANGES: ClassVar[dict[str, Range]] = {
        "last_stage_blocks": Range(0, 10_000_000, "blocks"),
        "max_stages": Range(1, 1000),
        "colocated_slowdown": Range(0.0, 1.0, open_high=True),
        "prealloc_timeout": Range(0.0, 3600.0, "s", open_low=True),
    }
    NEEDS: ClassVar[dict[str, Needs]] = {"skip_cached": Needs(_NEEDS_CACHE, _caches)}

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class PdConfig:
    """Prefill/decode disaggregation (rules: ``sim.cluster.handoff``): when and how a request's KV
    leaves the prefill instance that produced its first token for a decode instance.

    ``pairing``: ``immediate`` hands it off at its first token, to the decode instance the
    dispatch rule picks (DistServe, Splitwise); ``llumnix`` waits for the next tick, which
    pairs the most loaded prefill instances with the freest decode instances, one hand-off
    per instance at a time (Llumnix's PD migration, AlibabaPAI/llumnix main 24220fb,
    ``migration_scheduler.py`` lines 162-170, 231-235; ``Defrag``, ``migration_policy.py``
    76-86). ``copy``: ``blocking`` holds the request after its first token and copies its
    KV in one stage (Llumnix's code: ``blocking_migration``, ``request.py`` 141-143);
    ``live`` lets it decode on the prefill instance while staged live migration copies it
    (``migration.*`` sets the stages; Llumnix v0 as issue 34 describes it). A decode instance without
    room refuses the copy (a hand-off aborted with ``destination_out_of_memory``); the
    request stays where it is and is handed off at a later tick. ``adaptive``: Llumnix's
    adaptive PD (``dispatch_scheduler.py`` 87-105): new requests go to the decode instance
    with the lowest KV load when every prefill instance's KV (used + queued) is full, and a
    request decodes on its prefill instance when no decode instance has 10 steps of
    blocks left per request; such requests move to a decode instance once one has; and each
    tick packs decoding onto fewer prefill instances while no decode instance has steps to
    spare, and moves a request from a busy decode instance to a prefill instance running
    nothing (``migration_scheduler.py`` 250-271)."""

    pairing: str = "immediate"  # a hand-off rule (sim.cluster.handoff.HANDOFF_RULES)
    copy: Literal["blocking", "live"] = "blocking"
    adaptive: bool = False
    # the prefill instance sends each layer's KV as the layer is computed (Splitwise, ISCA'24,
    # transfers the KV cache layer by layer during the prompt phase), so a hand-off at the
    # first token has only the last layer's share left to copy, or what the prefill did not
    # cover; needs immediate, blocking
    layerwise: bool = field(default=False, metadata={OMIT_WHEN_DEFAULT: True})


@dataclass
class AutoscaleConfig:
    """Keep the cluster's average freeness within [low, high] by adding or draining instances
    (the rule decides how: ``artifact`` or ``sustained-band``)."""

    enabled: bool = False  # scale the cluster (otherwise its instances stay as they started)
    rule: str = "artifact"  # scaling rule, sim.cluster.SCALING_RULES (or sustained-band)
    low: float = 10.0  # scale out when the average freeness is below this
    high: float = 60.0  # scale in when it is above this (artifact: low + 50)
    interval: float = 10.0  # artifact rule: seconds between checks (scaling_interval)
    first_check: float = 110.0  # artifact rule: the first check (100 s after start + interval)
    sustain: float = 10.0  # sustained-band rule: seconds the condition must hold before acting
    cold_start: float = 0.0  # seconds from a scale-out decision until the instance serves
    min_instances: int = 1  # fewest instances scale-in leaves
    max_instances: int = 16  # most instances scale-out adds up to
    queue_aware: bool = False  # scale on freeness that counts queued demand (Llumnix's code)
    # the pool a scale-out adds to: first (the pool listed first), least-free (the pool whose
    # serving instances are least free), or a pool's name (sim.cluster.scaling.SCALE_OUT_POOLS)
    pool: str = field(default="first", metadata={OMIT_WHEN_DEFAULT: True})

    RANGES: ClassVar[dict[str, Range]] = {
        "low": FREENESS,
        "high": FREENESS,
        "interval": Range(0.0, 86_400.0, "s", open_low=True),
        "first_check": SECONDS,
        "sustain": DURATION,
        "cold_start": DURATION,
        "min_instances": INSTANCES,
        "max_instances": INSTANCES,
    }
    NEEDS: ClassVar[dict[str, Needs]] = {"pool": Needs("autoscale.enabled: true", lambda run: run.autoscale.enabled)}

    def __post_init__(self) -> None:
        check_ranges(self)
        require(self.high > self.low, f"high: must be > low ({self.low}), got {self.high}")
        require(
            self.max_instances >= self.min_instances,
            f"max_instances: must be >= min_instances ({self.min_instances}), got {self.max_instances}",
        )


@dataclass
class FaultConfig:
    """One injected fault. Kinds and their keys:

    * ``scheduler_down`` (start, end, fallback): the global scheduler is away; dispatch falls
      back to round-robin or random over live instances and migration/scaling stop;
    * ``instance_failure`` (at, instance, on_failure, restart_after): the instance dies; its
      requests are aborted or, with ``on_failure: retry``, dispatched again from scratch;
    * ``transfer_failure`` (probability, start, end): each migration stage in the window
      fails with this probability (the handshake aborts it).
    """

    # which fault; the keys each kind reads are listed above
    kind: Literal["scheduler_down", "instance_failure", "transfer_failure"]
    start: Optional[float] = None  # scheduler_down, transfer_failure: when the window opens (s)
    end: Optional[float] = None  # scheduler_down, transfer_failure: when it closes (s)
    at: Optional[float] = None  # instance_failure: when the instance dies (s)
    instance: Optional[int] = None  # instance_failure: the id of the instance that dies
    # instance_failure: abort its requests, or dispatch them again from scratch
    on_failure: Literal["abort", "retry"] = "abort"
    # instance_failure: seconds until a fresh instance joins (None: never)
    restart_after: Optional[float] = None
    # scheduler_down: how frontends dispatch while it is away
    fallback: Literal["round-robin", "random"] = "round-robin"
    probability: float = 0.0  # transfer_failure: the chance that each stage in the window fails

    RANGES: ClassVar[dict[str, Range]] = {
        "start": SECONDS,
        "end": SECONDS,
        "at": SECONDS,
        "instance": Range(0, INSTANCES.high - 1),
        "restart_after": DURATION,
        "probability": FRACTION,
    }

    # the keys each kind reads (besides ``kind``); another kind's key set to anything but
    # its default is a mistake (``at`` on an outage), not something to ignore
    KEYS: ClassVar[dict[str, tuple[str, ...]]] = {
        "scheduler_down": ("start", "end", "fallback"),
        "instance_failure": ("at", "instance", "on_failure", "restart_after"),
        "transfer_failure": ("probability", "start", "end"),
    }

    def __post_init__(self) -> None:
        check_ranges(self)
        own = self.KEYS[self.kind]
        for f in fields(self):
            if f.name == "kind" or f.name in own or f.default is MISSING:
                continue
            require(
                getattr(self, f.name) == f.default,
                f"{f.name}: not a key of a fault of kind {self.kind} (its keys: {', '.join(own)})",
            )
        if self.kind == "scheduler_down":
            require(
                self.start is not None and self.end is not None and self.end > self.start >= 0,
                "start/end: scheduler_down needs 0 <= start < end (seconds)",
            )
        elif self.kind == "instance_failure":
            require(self.at is not None and self.at >= 0, "at: instance_failure needs a time >= 0")
            require(
                self.instance is not None and self.instance >= 0,
                "instance: instance_failure needs an instance id >= 0",
            )
            require(
                self.restart_after is None or self.restart_after >= 0,
                f"restart_after: must be >= 0 s, got {self.restart_after}",
            )
        else:
            require(
                0 < self.probability <= 1,
                f"probability: must be in (0, 1], got {self.probability}",
            )
            require(
                self.start is None or self.end is None or self.end > self.start,
                "end: must be after start",
            )


@dataclass
class OutputConfig:
    """What a run writes under ``<dir>/<name>/``."""

    dir: str = "results"  # the folder the run's folder goes under
    timeseries_interval: float = 1.0  # seconds between instance samples
    plots: bool = True  # write latency.png, timeline.png and migrations.png
    timeline: bool = False  # write timeline.json (Perfetto / chrome://tracing): batches and migrations
    progress: Optional[bool] = None  # False: none; else a bar on a terminal, lines in a log

    RANGES: ClassVar[dict[str, Range]] = {"timeseries_interval": Range(0.001, 1e6, "s")}

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class CostConfig:
    """What a GPU-hour costs, so a run's instance-seconds become money (``sim.metrics.cost``)."""

    gpu_hour_price: float = 1.0  # per GPU-hour, any currency; 1.0 makes cost equal GPU-hours
    # price each pool's GPU-hours at its device SKU's on-demand list price (USD;
    # sim/hardware/skus.py) instead of gpu_hour_price
    sku_prices: bool = field(default=False, metadata={OMIT_WHEN_DEFAULT: True})

    RANGES: ClassVar[dict[str, Range]] = {"gpu_hour_price": Range(0.0, 1e6)}
    NEEDS: ClassVar[dict[str, Needs]] = {
        "gpu_hour_price": Needs("cost.sku_prices: false (per-SKU list prices replace a flat price)",
                                lambda run: not run.cost.sku_prices, refuse=True),
    }

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class SimulationConfig:
    """A whole run: a pure function of this config (and its seed)."""

    name: str = "run"  # the run's folder under output.dir (a plain name, never a path)
    seed: int = 0  # seeds every random draw: the same config and seed give the same run
    time_limit: Optional[float] = None  # stop after this many simulated seconds (None: drain)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    # named pools of instances instead of ``cluster`` (left out of the resolved config when
    # empty, so a one-pool config's hash and config.yaml are those it always had)
    # (None, not []: an empty list written out is refused, not read as "use cluster")
    pools: Optional[list[PoolConfig]] = field(default=None, metadata={OMIT_WHEN_EMPTY: True})
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    migration: MigrationConfig = field(default_factory=MigrationConfig)
    autoscale: AutoscaleConfig = field(default_factory=AutoscaleConfig)
    faults: list[FaultConfig] = field(default_factory=list)
    output: OutputConfig = field(default_factory=OutputConfig)
    cost: CostConfig = field(default_factory=CostConfig)
    # per-tier SLOs (left out of the resolved config when unset, so configs without one keep
    # their hash)
    slo: Optional[SloConfig] = field(default=None, metadata={OMIT_WHEN_EMPTY: True})
    # prefill/decode disaggregation, for pools with roles (left out when unset: other configs
    # keep their hash)
    pd: Optional[PdConfig] = field(default=None, metadata={OMIT_WHEN_EMPTY: True})

    RANGES: ClassVar[dict[str, Range]] = {
        "seed": Range(0, 2**63 - 1),
        "time_limit": Range(0.0, 1e9, "s", open_low=True),
    }

    def __post_init__(self) -> None:
        check_ranges(self)
        check_run_name("name", self.name)
        if self.pools is not None:
            require(bool(self.pools), "pools: an empty list has no instances; list a pool, or drop pools for cluster")
            require(self.cluster == ClusterConfig(), "cluster: set either cluster or pools, not both")
            names = [pool.name for pool in self.pools]
            for index, pool in enumerate(self.pools):
                require(names.index(pool.name) == index, f"pools[{index}].name: {pool.name!r} is used twice")
                # a request's demand is dispatched in blocks before its instance is known
                require(
                    pool.block_size == self.pools[0].block_size,
                    f"pools[{index}].block_size: every pool must use the same block size",
                )
        instances = sum(pool.instances for pool in self.instance_pools())
        self._check_roles()
        self._check_spot()
        self._check_scaling_bounds(instances)
        self._check_tier_lists()
        self._check_slo_tiers()
        check_prerequisites(self)  # refuses an option that contradicts the run without its prerequisite
        for index, fault in enumerate(self.faults):
            require(
                fault.kind != "instance_failure" or fault.instance < instances,
                f"faults[{index}].instance: no instance {fault.instance} at start "
                f"(instances 0..{instances - 1})",
            )

    def _check_roles(self) -> None:
        """A disaggregated cluster has somewhere to prefill and somewhere to decode, and
        ``pd`` is read only by one."""
        roles = {pool.role for pool in self.instance_pools()}
        if roles == {"mixed"}:
            require(self.pd is None, "pd: set, but no pool has a role (pools[*].role: prefill / decode)")
            return
        require("prefill" in roles, "pools[*].role: decode pools, but no prefill pool takes new requests")
        require("decode" in roles, "pools[*].role: prefill pools, but no decode pool to hand requests to")
        require(
            not self.autoscale.enabled,
            "autoscale.enabled: not with pool roles (scale-out would need a role for each new instance)",
        )

    def _check_spot(self) -> None:
        """Spot pools evacuate onto the other instances and are replaced from a pool: pools
        without roles (a replacement would need one), and an on-demand pool to fall back to
        where a spot pool's replacement is on-demand."""
        pools = self.instance_pools()
        on_demand = [pool.name for pool in pools if pool.spot is None]
        for index, pool in enumerate(pools):
            if pool.spot is None:
                continue
            require(pool.role == "mixed", f"pools[{index}].spot: not with pool roles (pools[{index}].role: {pool.role})")
            require(
                pool.spot.replacement != "on-demand" or bool(on_demand),
                f"pools[{index}].spot.replacement: on-demand replaces a preempted instance with one of the "
                "first pool without spot, and every pool is spot",
            )

    def _check_scaling_bounds(self, start: int) -> None:
        """Auto-scaling starts from the instances the cluster (or its pools) starts with, which
        must lie within its bounds."""
        scale = self.autoscale
        if not scale.enabled:
            return  # the bounds are not read
        require(
            scale.min_instances <= start,
            f"autoscale.min_instances: {scale.min_instances} is above the {start} instances the "
            "cluster starts with (cluster.instances)",
        )
        require(
            scale.max_instances >= start,
            f"autoscale.max_instances: {scale.max_instances} is below the {start} instances the "
            "cluster starts with (cluster.instances)",
        )

    def _check_tier_lists(self) -> None:
        """Per-tier lists have one value per tier they describe: K for headroom, K - 1 for
        load targets (the least critical tier has none); a list of another length would be
        cut or padded without a word."""
        tiers = self.workload.priority.tiers
        lists = (
            ("scheduler.headroom.blocks", self.scheduler.headroom.blocks, tiers, "one per tier"),
            (
                "scheduler.priority.load_targets",
                self.scheduler.priority.load_targets,
                tiers - 1,
                "one per tier but the least critical",
            ),
        )
        for key, values, wanted, rule in lists:
            require(
                values is None or len(values) == wanted,
                f"{key}: {len(values or ())} values for workload.priority.tiers={tiers}; it takes "
                f"{wanted} ({rule})",
            )

    def _check_slo_tiers(self) -> None:
        """Explicit SLO targets come one per tier (a ladder is expanded to the tiers). Whether
        a rule needs them is the rule's to say (``sim.engine.setup.check_names``)."""
        tiers = self.workload.priority.tiers
        if self.slo is None:
            return
        if self.slo.ladder is not None or self.slo.contract is not None:
            self.slo.targets(tiers)  # every expanded target in range
            return
        require(
            len(self.slo.tiers) == tiers,
            f"slo.tiers: {len(self.slo.tiers)} targets for workload.priority.tiers={tiers}; it "
            f"takes {tiers} (one per tier)",
        )

    def instance_pools(self) -> list[PoolConfig]:
        """The pools the instances come from, in order (instance ids count through them):
        ``pools``, or ``cluster`` as one pool. The first is the one scale-out adds to."""
        return self.pools or [as_pool(self.cluster)]
