"""From a ``WorkloadConfig`` and a seed to the request stream a run replays.

Which requests (``num_requests``):

* length table: N rows drawn with the seed — without replacement while N fits the table,
  with replacement beyond it; ``None`` takes every row (in a seeded order).
* timestamped trace: the first N requests by time (stable for equal stamps); asking for
  more than the trace holds is an error, since a recorded clock cannot be resampled.
* synthetic: N requests from the power-law generator (N is required); with
  ``client: artifact``, the whole stream — lengths, arrivals, tiers — is the Llumnix artifact
  client's instead, drawn as it drew them (``artifact_client.py``).
* inference-perf: the requests its profile's stages send (``inference_perf.py``); N is not read.

``workload.shape`` (``shaping.py``) scales and filters the table before the draw — so N
stays N — and matches and caps the drawn requests' lengths after it; unset, it does nothing.

Each random part (row draw, input lengths, output lengths, arrivals, tiers) has its own
generator seeded from (seed, part), so changing e.g. the tier sampler leaves the lengths and
arrivals of a run unchanged. (The artifact's client shared two generators between its parts;
``client: artifact`` keeps that, so there its arrivals depend on the lengths drawn before.)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sim.config import ConfigError, SessionsConfig, SystemPromptConfig, WorkloadConfig
from sim.workload.arrivals import deterministic_arrivals, renewal_arrivals, replay_arrivals
from sim.workload.artifact_client import client_stream
from sim.workload.inference_perf import profile_stream, read_profile
from sim.workload.priority import sample_tiers
from sim.workload.sessions import Sharing, conversations, read_sessions, turns, with_system_prompts
from sim.workload.shaping import Shape, resolve_shape, shape_lengths, shape_table
from sim.workload.stages import Stages
from sim.config.workload_schema import ShapeConfig
from sim.workload.synthetic import LENGTH_CLASSES, power_law_lengths
from sim.workload.traces import TraceError, read_trace
from sim.workload.urgency import bands, sample_urgency

REPO_ROOT = Path(__file__).resolve().parents[2]  # the parent of the ``sim`` package
# a run steps through idle time in report rounds (~1 MB per 1,000 idle seconds kept as
# samples), so a trace's gap of 10^9 s would run for days and fill memory: a day at most
MAX_IDLE_GAP = 86_400.0

_ROWS, _INPUT, _OUTPUT, _ARRIVALS, _TIERS, _URGENCY, _THINK, _SYSTEM = range(8)


def _rng(seed: int, part: int) -> np.random.Generator:
    """One generator per part of the workload, from the config's seed alone (INV-6
    same-result: a part drawing more numbers moves no other part's draws)."""
    return np.random.default_rng([seed, part])


def _frozen(values: np.ndarray, dtype: type) -> np.ndarray:
    array = np.array(values, dtype=dtype)
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class Workload:
    """The requests of one run, as parallel arrays (request i = index i), read-only."""

    arrival: np.ndarray  # float64 seconds, non-decreasing, >= 0
    prompt_tokens: np.ndarray  # int64 >= 1
    output_tokens: np.ndarray  # int64 >= 1
    tier: np.ndarray  # int64 in [0, K)
    description: str  # one line for summaries
    # float64 in [0, 1): where each request's targets lie on an SLO contract's span
    # (sim.workload.urgency); None unless the run's SLOs are a contract
    urgency: np.ndarray | None = None
    # conversations and system prompts: which requests share tokens, and which arrive a
    # think time after another ended (sim.workload.sessions); None: every request its own
    sharing: Sharing | None = None
    # stages, each sent once the one before ended (sim.workload.stages): ``arrival`` then
    # holds the earliest times, the run plays out the real ones; None: no stages
    stages: Stages | None = None

    def __post_init__(self) -> None:
        for name, dtype in (
            ("arrival", np.float64),
            ("prompt_tokens", np.int64),
            ("output_tokens", np.int64),
            ("tier", np.int64),
        ):
            object.__setattr__(self, name, _frozen(getattr(self, name), dtype))
        if self.urgency is not None:
            object.__setattr__(self, "urgency", _frozen(self.urgency, np.float64))
        n = len(self.arrival)
        if any(len(a) != n for a in (self.prompt_tokens, self.output_tokens, self.tier)):
            raise ValueError("workload arrays differ in length")
        if self.sharing is not None and len(self.sharing.follows) != n:
            raise ValueError("workload sharing covers a different number of requests")
        if self.stages is not None and len(self.stages.offset) != n:
            raise ValueError("workload stages cover a different number of requests")
        if n and (self.arrival[0] < 0 or np.any(np.diff(self.arrival) < 0)):
            raise ValueError("arrivals must start at >= 0 and never decrease")
        if n and (self.prompt_tokens.min() < 1 or self.output_tokens.min() < 1):
            raise ValueError("every request needs >= 1 prompt and >= 1 output token")
        if n and self.tier.min() < 0:
            raise ValueError("tiers must be >= 0")

    def __len__(self) -> int:
        return len(self.arrival)

    def to_frame(self) -> pd.DataFrame:
        """One row per request, indexed by request id (for exports and notebooks)."""
        frame = pd.DataFrame(
            {
                "arrival": self.arrival,
                "prompt_tokens": self.prompt_tokens,
                "output_tokens": self.output_tokens,
                "tier": self.tier,
            }
        )
        if self.sharing is not None:
            frame["conversation"] = self.sharing.conversation
            frame["turn"] = self.sharing.turn
            frame["system_prompt"] = self.sharing.system
        if self.stages is not None:
            frame["stage"] = self.stages.of(frame.index.to_numpy())
        frame.index.name = "request_id"
        return frame


def resolve_trace_path(trace: str, root: Path | None = None, what: str = "trace file") -> Path:
    """A relative path is tried against ``root`` (default: the current directory), then the repo."""
    path = Path(trace).expanduser()
    candidates = [path] if path.is_absolute() else [(root or Path.cwd()) / path, REPO_ROOT / path]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = " and ".join(str(c) for c in candidates)
    raise TraceError(f"{trace}: {what} not found (looked at {looked})")


def _select_rows(
    table: pd.DataFrame, cfg: WorkloadConfig, seed: int, path: Path, dropped: int = 0
) -> pd.DataFrame:
    n = cfg.num_requests
    if cfg.source == "timestamped":
        if "timestamp" not in table.columns:
            raise TraceError(
                f"{path}: source 'timestamped' needs timestamps; this is a length table"
            )
        if n is not None and n > len(table):
            left = f" after workload.shape dropped {dropped}" if dropped else ""
            raise ConfigError(
                f"workload.num_requests: {n} requested, but {path} has {len(table)} "
                f"requests{left}"
            )
        return table.sort_values("timestamp", kind="stable").head(n)
    n = len(table) if n is None else n
    rows = _rng(seed, _ROWS).choice(len(table), size=n, replace=n > len(table))
    return table.iloc[rows]


def _describe_arrivals(cfg: WorkloadConfig) -> str:
    arrival = cfg.arrival
    if arrival.process == "trace":
        return "recorded arrivals" + (
            f" time-scaled to {arrival.rate:g} req/s" if arrival.rate is not None else ""
        )
    if arrival.process == "gamma":
        return f"Gamma arrivals at {arrival.rate:g} req/s, CV {arrival.cv:g}"
    if arrival.process == "burst":
        return "all requests at t = 0 (burst)"
    if arrival.process == "uniform":
        return f"uniform arrivals at {arrival.rate:g} req/s"
    return f"Poisson arrivals at {arrival.rate:g} req/s"


def _describe(source: str, cfg: WorkloadConfig, n: int, seed: int, arrivals: str | None = None) -> str:
    """The workload's one-line summary, the same shape for every source and client."""
    priority = cfg.priority
    share = f" ({priority.high_share:g} in tier 0)" if priority.sampler == "share" else ""
    return (
        f"{source}; {arrivals or _describe_arrivals(cfg)}; {n} requests; "
        f"tiers: {priority.sampler}{share}, K={priority.tiers}; seed {seed}"
    )


def _requests(
    cfg: WorkloadConfig, seed: int, root: Path | None, shape: Shape
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, str, Sharing | None]:
    """Prompt and output lengths (shaping steps 1–2 done), timestamps (timestamped), a label,
    and what the requests share (a trace with prefix structure)."""
    if cfg.source == "synthetic":
        n, cap = int(cfg.num_requests), cfg.synthetic.max_tokens
        lengths = [
            power_law_lengths(_rng(seed, part), n, *LENGTH_CLASSES[size], cap)
            for part, size in ((_INPUT, cfg.synthetic.input), (_OUTPUT, cfg.synthetic.output))
        ]
        # a generated batch is its own table: scaling applies, filters were refused
        generated = pd.DataFrame({"prompt_tokens": lengths[0], "output_tokens": lengths[1]})
        table = shape_table(generated, shape)
        label = f"synthetic {cfg.synthetic.input}-{cfg.synthetic.output} power-law lengths"
        return (
            table["prompt_tokens"].to_numpy(),
            table["output_tokens"].to_numpy(),
            None,
            f"{label} (cap {cap})",
            None,
        )
    path = resolve_trace_path(str(cfg.trace), root)
    table = read_trace(path, cfg.format, cfg.burstgpt_model, cfg.burstgpt_log_type)
    prefixed = "prefix_of" in table.columns
    if prefixed and (cfg.source != "timestamped" or not shape.is_identity):
        raise ConfigError(
            f"workload.trace: {cfg.trace} names shared prefixes by row, so it is replayed in order as "
            "recorded: source 'timestamped', no workload.shape"
        )
    shaped = shape_table(table, shape, str(path))
    dropped = len(table) - len(shaped)
    chosen = _select_rows(shaped, cfg, seed, path, dropped)
    timestamps = chosen["timestamp"].to_numpy() if cfg.source == "timestamped" else None
    kept = f", {dropped} dropped by workload.shape" if dropped else ""
    sharing = Sharing.prefixes(chosen["prefix_of"].to_numpy(), chosen["shared_tokens"].to_numpy()) if prefixed else None
    return (
        chosen["prompt_tokens"].to_numpy(),
        chosen["output_tokens"].to_numpy(),
        timestamps,
        f"{cfg.trace} ({len(table)} usable rows{kept})",
        sharing,
    )


def tiers_drawn_apart(cfg: WorkloadConfig) -> bool:
    """Whether the tiers have a generator of their own (every client but the artifact's), so
    the arrivals and lengths of a run do not depend on ``workload.priority``."""
    return cfg.client != "artifact"


def _check_idle_gaps(arrival: np.ndarray, cfg: WorkloadConfig) -> None:
    """A replayed trace's gaps between arrivals are at most ``MAX_IDLE_GAP`` (a ConfigError
    naming the trace, the two requests and the fixes)."""
    gaps = np.diff(arrival)
    if len(gaps) and gaps.max() > MAX_IDLE_GAP:
        i = int(gaps.argmax())
        raise ConfigError(
            f"workload.trace: {cfg.trace}: requests {i} and {i + 1} (in arrival order) arrive "
            f"{gaps[i]:,.0f} s apart, at t = {arrival[i]:,.0f} and {arrival[i + 1]:,.0f} s; a run "
            f"steps through idle time, so a gap is at most {MAX_IDLE_GAP:,.0f} s: time-scale the "
            "trace (workload.arrival.rate) or take fewer requests (workload.num_requests)"
        )


def build_workload(cfg: WorkloadConfig, seed: int, root: Path | None = None) -> Workload:
    """The request stream of a run: a pure function of (``cfg``, ``seed``) and the trace file."""
    if seed < 0:
        raise ConfigError(f"seed: must be >= 0, got {seed}")
    if cfg.client == "artifact":
        stream = client_stream(cfg, seed)
        description = _describe(stream.description, cfg, len(stream.tier), seed)
        return Workload(
            stream.arrival, stream.prompt_tokens, stream.output_tokens, stream.tier, description
        )
    if cfg.source == "sessions":
        return _sessions_workload(cfg, seed, root)
    if cfg.source == "inference-perf":
        return _profile_workload(cfg, seed, root)
    shape = resolve_shape(cfg.shape, cfg.source)
    prompt, output, timestamps, source, sharing = _requests(cfg, seed, root, shape)
    prompt, output = shape_lengths(prompt, output, shape)
    kept = shape.kept_by_total(prompt, output)
    prompt, output = prompt[kept], output[kept]
    if timestamps is not None:
        timestamps = timestamps[kept]
    if not shape.is_identity:
        dropped = f" ({len(kept) - int(kept.sum())} dropped)" if shape.total_below is not None else ""
        source = f"{source}; {shape.describe()}{dropped}"
    n = len(prompt)
    if cfg.arrival.process == "trace":
        arrival = replay_arrivals(timestamps, cfg.arrival.rate)
        _check_idle_gaps(arrival, cfg)
    else:
        arrival = _arrivals(cfg, seed, n)
    tier = sample_tiers(_rng(seed, _TIERS), n, cfg.priority)
    system = cfg.system_prompt
    if system is not None and system.tokens:
        if sharing is not None:
            raise ConfigError("workload.system_prompt: the trace's requests share prefixes of their own already")
        sharing = with_system_prompts(None, n, _rng(seed, _SYSTEM), system)
        prompt = prompt + system.tokens
        source = f"{source}; {_describe_system_prompt(system)}"
    return Workload(arrival, prompt, output, tier, _describe(source, cfg, n, seed), sharing=sharing)


def _arrivals(cfg: WorkloadConfig, seed: int, n: int) -> np.ndarray:
    """``n`` arrival times by the configured process (not a replayed trace)."""
    process = cfg.arrival.process
    if process in ("uniform", "burst"):
        return deterministic_arrivals(n, process, cfg.arrival.rate)
    return renewal_arrivals(_rng(seed, _ARRIVALS), n, cfg.arrival.rate, cfg.arrival.cv)


def _describe_system_prompt(system: SystemPromptConfig) -> str:
    return f"a {system.tokens}-token system prompt, one of {system.prompts}"


def _sessions_workload(cfg: WorkloadConfig, seed: int, root: Path | None) -> Workload:
    """Closed-loop conversations (``sim.workload.sessions``): ``num_requests`` of them drawn,
    their first turns arriving by the arrival process."""
    if cfg.shape != ShapeConfig():
        raise ConfigError("workload.shape: conversations cannot be reshaped (a turn's prompt is its history); remove it")
    path = resolve_trace_path(str(cfg.trace), root)
    table = read_sessions(path)
    sessions = cfg.sessions or SessionsConfig()
    count = table["conversation"].nunique() if cfg.num_requests is None else cfg.num_requests
    chosen = conversations(table, count, _rng(seed, _ROWS), sessions)
    starts = _arrivals(cfg, seed, count)
    conversation_tiers = sample_tiers(_rng(seed, _TIERS), count, cfg.priority)
    system = cfg.system_prompt if cfg.system_prompt is not None and cfg.system_prompt.tokens else None
    arrival, prompt, output, tier, sharing = turns(
        chosen, starts, conversation_tiers, _rng(seed, _THINK), sessions, system.tokens if system else 0
    )
    source = (
        f"{cfg.trace} ({table['conversation'].nunique()} conversations): {count} conversations, "
        f"{len(prompt)} turns, think time exponential, mean {sessions.think_time:g} s"
    )
    if system is not None:
        sharing = with_system_prompts(sharing, len(prompt), _rng(seed, _SYSTEM), system, per=sharing.conversation)
        source = f"{source}; {_describe_system_prompt(system)}"
    return Workload(arrival, prompt, output, tier, _describe(source, cfg, len(prompt), seed), sharing=sharing)


def _profile_workload(cfg: WorkloadConfig, seed: int, root: Path | None) -> Workload:
    """An inference-perf profile's stages (``sim.workload.inference_perf``); ``arrival`` holds
    the earliest times, the run plays out each stage once the one before ended."""
    path = resolve_trace_path(str(cfg.profile), root, "inference-perf profile")
    stream = profile_stream(
        read_profile(path), path.name, _rng(seed, _ARRIVALS), _rng(seed, _ROWS), _rng(seed, _INPUT)
    )
    n = len(stream.prompt_tokens)
    tier = sample_tiers(_rng(seed, _TIERS), n, cfg.priority)
    description = _describe(stream.description, cfg, n, seed, "each stage once the one before ended")
    return Workload(
        stream.stages.nominal_arrivals(), stream.prompt_tokens, stream.output_tokens, tier, description,
        sharing=stream.sharing, stages=stream.stages,
    )


def with_urgency(workload: Workload, cfg: WorkloadConfig, seed: int) -> Workload:
    """``workload`` under an SLO contract that holds still: each request's urgency drawn from
    a generator of its own (so it is the same at every K and leaves lengths and arrivals as
    they were), and its tier the band of the span it falls in, out of K
    (``sim.workload.urgency``)."""
    urgency = sample_urgency(_rng(seed, _URGENCY), len(workload), cfg.priority)
    return dataclasses.replace(workload, tier=bands(urgency, cfg.priority.tiers), urgency=urgency)
