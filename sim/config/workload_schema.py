"""The ``workload`` section of a run config: where requests come from and how they arrive.

Apart from ``sim.config.schema`` because the workload alone has as many knobs as the rest
of a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal, Optional

from sim.config.loader import OMIT_WHEN_EMPTY
from sim.config.prerequisites import Needs
from sim.config.ranges import FRACTION, TOKENS, Range, check_ranges, require


@dataclass
class ArrivalConfig:
    """When requests arrive: a renewal process at ``rate``, or the trace's own timestamps.

    ``uniform`` spaces requests 1/``rate`` apart; ``burst`` submits them all at t = 0 and
    ignores ``rate`` (the artifact's client default, used as shipped by its ShareGPT and
    BurstGPT runs, which still passed a qps).
    """

    # renewal processes at rate, all at t = 0 (burst), or the trace's own times
    process: Literal["poisson", "gamma", "uniform", "burst", "trace"] = "poisson"
    rate: Optional[float] = 7.5  # requests/s; for ``trace``: time-scale to this rate (None: as recorded)
    cv: float = 1.0  # coefficient of variation of inter-arrival times (gamma only)

    RANGES: ClassVar[dict[str, Range]] = {
        # below one request in ~17 minutes a run is mostly idle report rounds
        "rate": Range(0.001, 1e6, "requests/s"),
        # Gamma shape 1/CV^2: beyond 20 nearly every gap underflows to zero (a few bursts)
        "cv": Range(0.01, 20.0),
    }

    def __post_init__(self) -> None:
        check_ranges(self)
        require(
            self.process in ("trace", "burst") or self.rate is not None,
            f"rate: required for the {self.process} arrival process",
        )
        require(
            self.process == "gamma" or self.cv == 1.0,
            f"cv: only the gamma arrival process takes a CV (got {self.cv} with {self.process!r})",
        )


@dataclass
class SyntheticLengthsConfig:
    """Power-law lengths by class (S=128, M=256, L=512 mean tokens), as in the Llumnix paper."""

    input: str = "M"  # prompt length class: S, M or L
    output: str = "M"  # output length class: S, M or L
    max_tokens: int = 6144  # cap on every length (the artifact client's 6,144)

    RANGES: ClassVar[dict[str, Range]] = {"max_tokens": TOKENS}

    def __post_init__(self) -> None:
        check_ranges(self)
        for name in ("input", "output"):
            value = getattr(self, name)
            require(
                value in ("S", "M", "L"), f"{name}: length class must be S, M or L, got {value!r}"
            )


@dataclass
class PriorityConfig:
    """How each request gets its tier (0 = most critical, K-1 = background)."""

    # how tiers are drawn (the weights: docs/workloads.md, Tiers)
    sampler: Literal["uniform", "gaussian", "enterprise", "share"] = "uniform"
    tiers: int = 1  # K, the number of tiers
    high_share: float = 0.1  # ``share`` sampler: fraction of requests in tier 0 (paper: 10%)

    RANGES: ClassVar[dict[str, Range]] = {"tiers": Range(1, 64), "high_share": FRACTION}

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class MatchConfig:
    """Published statistics one length field should have: its mean and 95th percentile (tokens).

    ``sim/workload/shaping.py`` maps the real lengths onto them monotonically (rank order kept):
    the part above the 95th percentile is scaled linearly (its shape relative to the P95 kept),
    the part below is raised to the power that brings the mean to ``mean``. Fitted on the
    requests the run receives, so both targets hold there (P95 to within rounding).
    """

    mean: Optional[float] = None  # the mean length to reach (tokens)
    p95: Optional[float] = None  # the 95th percentile to reach (tokens)

    RANGES: ClassVar[dict[str, Range]] = {"mean": TOKENS, "p95": TOKENS}

    def __post_init__(self) -> None:
        for name in ("mean", "p95"):
            require(getattr(self, name) is not None, f"{name}: required (tokens)")
        check_ranges(self)


@dataclass
class FieldShapeConfig:
    """How one length field (``input`` or ``output``) is reshaped; unset keys do nothing.

    Steps, always in this order (``shaping.py``): ``scale`` multiplies every length and rounds
    up; ``min``/``max`` drop requests whose scaled length lies outside [min, max] — from the
    table, before requests are drawn, so ``num_requests`` still gets N; ``match`` maps the drawn
    requests' lengths onto a published mean and P95; ``cap`` truncates the final lengths (the
    Llumnix artifact's 6,144-token behaviour). Use ``max`` to drop long requests instead of
    truncating them; leave both unset to let the simulator abort what an instance cannot hold.
    """

    scale: Optional[float] = None  # multiply, round up (>= 1 token)
    min: Optional[int] = None  # drop requests shorter than this (tokens, after scale)
    max: Optional[int] = None  # drop requests longer than this (tokens, after scale)
    match: Optional[MatchConfig] = None  # map onto this mean and P95
    cap: Optional[int] = None  # truncate final lengths to at most this many tokens

    RANGES: ClassVar[dict[str, Range]] = {
        "scale": Range(0.0, 1000.0, open_low=True),
        "min": TOKENS,
        "max": TOKENS,
        "cap": TOKENS,
    }

    def __post_init__(self) -> None:
        check_ranges(self)
        require(
            self.min is None or self.max is None or self.min <= self.max,
            f"max: must be >= min ({self.min}), got {self.max}",
        )
        require(
            self.scale is None or self.match is None,
            "scale: has no effect with match, which sets the lengths' scale itself; set one",
        )
        require(
            self.cap is None or self.match is None or self.match.p95 <= self.cap,
            f"match.p95: {self.match.p95 if self.match else None} cannot lie above cap {self.cap}",
        )


@dataclass
class ShapeConfig:
    """Reshaping of request lengths (any trace, or synthetic lengths); a no-op when unset.

    ``preset`` names a shaping defined in ``sim/workload/shaping.py`` (``sharegpt-gpt4``: the
    shipped ShareGPT V3 first turns mapped onto the Llumnix paper's Table 1 statistics of the
    GPT-4 subset). Keys set under ``input``/``output`` override the preset's, field by field.
    """

    preset: Optional[str] = None  # a named shaping (sharegpt-gpt4), its keys overridable below
    input: FieldShapeConfig = field(default_factory=FieldShapeConfig)
    output: FieldShapeConfig = field(default_factory=FieldShapeConfig)
    # drop drawn requests whose prompt + output reach this many tokens (the Llumnix
    # artifact's ShareGPT client keeps a pair only if prompt + answer < 12,800); the run
    # then has fewer requests, as the artifact's did
    total_below: Optional[int] = None

    RANGES: ClassVar[dict[str, Range]] = {"total_below": Range(2, 10_000_000, "tokens")}

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class SessionsConfig:
    """Closed-loop multi-turn conversations (``source: sessions``, ``sim.workload.sessions``):
    a conversation's first turn arrives by ``arrival``, each later one a think time after the
    previous answer ended (finished or aborted), its prompt the whole history — earlier
    messages and answers — plus its new message."""

    # mean seconds between an answer and the next message, exponential: 5 s is BLIS's guide
    # example (docs/guide/workloads.md), exponential gaps as vLLM's multi-turn benchmark draws them
    think_time: float = 5.0
    max_turns: Optional[int] = None  # keep at most this many turns of a conversation (None: all)

    RANGES: ClassVar[dict[str, Range]] = {
        "think_time": Range(0.0, 86_400.0, "seconds"),
        "max_turns": Range(1, 10_000, "turns"),
    }

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class SystemPromptConfig:
    """A system prompt every request (every conversation) begins with, one of ``prompts``
    drawn per request: the shared prefix a prefix cache serves (``sim.workload.sessions``)."""

    tokens: int = 0  # its length (0: none)
    prompts: int = 1  # how many distinct ones (each drawn with equal chance)

    RANGES: ClassVar[dict[str, Range]] = {
        "tokens": Range(0, 1_000_000, "tokens"),
        "prompts": Range(1, 1_000_000, "prompts"),
    }
    NEEDS: ClassVar[dict[str, Needs]] = {
        "prompts": Needs("workload.system_prompt.tokens > 0", lambda run: run.workload.system_prompt.tokens > 0),
    }

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class WorkloadConfig:
    """Where requests come from: a length table, a timestamped trace, or a generator."""

    # a length table, a trace with arrival times, generated lengths, multi-turn
    # conversations (num_requests then counts conversations), or an inference-perf profile's
    # stages (profile; num_requests and arrival not read)
    source: Literal["lengths", "timestamped", "synthetic", "sessions", "inference-perf"] = "lengths"
    # the CSV (a relative path: from the current folder, then the repository)
    trace: Optional[str] = "traces/sharegpt/sharegpt_v3_first_turn.csv"
    # the trace's columns (auto: told apart by its header)
    format: Literal["auto", "lengths", "burstgpt", "azure", "mooncake"] = "auto"
    num_requests: Optional[int] = 2000  # None: the whole trace (required for synthetic)
    arrival: ArrivalConfig = field(default_factory=ArrivalConfig)
    synthetic: SyntheticLengthsConfig = field(default_factory=SyntheticLengthsConfig)
    priority: PriorityConfig = field(default_factory=PriorityConfig)
    burstgpt_model: Optional[str] = None  # BurstGPT: keep rows of this Model (None: all)
    burstgpt_log_type: Optional[str] = None  # BurstGPT: keep rows of this Log Type (None: all)
    shape: ShapeConfig = field(default_factory=ShapeConfig)  # length reshaping (default: none)
    # who generates a synthetic stream: llumsim's own generators, or the Llumnix artifact's
    # benchmark client replayed draw for draw (sim/workload/artifact_client.py)
    client: Literal["llumsim", "artifact"] = "llumsim"
    # source 'sessions': think time and turns (None: the defaults of SessionsConfig)
    sessions: Optional[SessionsConfig] = field(default=None, metadata={OMIT_WHEN_EMPTY: True})
    # a shared system prompt before every request (None: none)
    system_prompt: Optional[SystemPromptConfig] = field(default=None, metadata={OMIT_WHEN_EMPTY: True})
    # source 'inference-perf': its YAML config (load stages, data; sim/workload/inference_perf.py)
    profile: Optional[str] = field(default=None, metadata={OMIT_WHEN_EMPTY: True})

    # ten million requests already take gigabytes; more is a typo, not a workload
    RANGES: ClassVar[dict[str, Range]] = {"num_requests": Range(1, 10_000_000, "requests")}

    def __post_init__(self) -> None:
        check_ranges(self)
        require(
            self.source != "synthetic" or self.num_requests is not None,
            "num_requests: required for source 'synthetic' (a generator has no end)",
        )
        require(
            self.source in ("synthetic", "inference-perf") or bool(self.trace),
            f"trace: required for source {self.source!r}",
        )
        require(
            self.arrival.process != "trace" or self.source == "timestamped",
            "arrival.process: 'trace' needs source 'timestamped' (a trace with timestamps)",
        )
        require(
            self.sessions is None or self.source == "sessions",
            f"sessions: set, but source is {self.source!r} (source: sessions replays conversations)",
        )
        if self.source == "inference-perf" or self.profile is not None:
            self._check_profile()
        if self.client == "artifact":
            self._check_artifact_client()

    def _check_profile(self) -> None:
        """An inference-perf profile says the lengths, arrivals and shared prefixes itself."""
        require(
            self.source == "inference-perf",
            f"profile: set, but source is {self.source!r} (source: inference-perf reads a profile)",
        )
        require(bool(self.profile), "profile: required for source 'inference-perf' (an inference-perf config file)")
        require(
            self.shape == ShapeConfig(),
            "shape: an inference-perf profile sets its lengths itself; remove workload.shape",
        )
        require(
            self.system_prompt is None or not self.system_prompt.tokens,
            "system_prompt: an inference-perf profile sets its system prompts itself (data.shared_prefix); "
            "remove workload.system_prompt",
        )

    def _check_artifact_client(self) -> None:
        """What the artifact's client could not have generated is refused, not approximated."""
        require(
            self.source == "synthetic",
            f"client: 'artifact' replays the artifact's synthetic workloads only; it needs "
            f"source 'synthetic', got {self.source!r}",
        )
        require(
            self.shape == ShapeConfig(),
            "shape: client 'artifact' reproduces the client's lengths exactly and cannot be "
            "shaped; remove workload.shape or use client 'llumsim'",
        )
        require(
            self.system_prompt is None or not self.system_prompt.tokens,
            "system_prompt: client 'artifact' replays the artifact's requests as they were; "
            "remove workload.system_prompt or use client 'llumsim'",
        )
        require(
            self.priority.tiers == 1 or self.priority.sampler == "share",
            f"priority.sampler: client 'artifact' draws tiers as the client did, one "
            f"high-priority Bernoulli per request with ratio priority.high_share; set sampler "
            f"'share', got {self.priority.sampler!r}",
        )
