"""An inference-perf profile as a request stream (``workload.source: inference-perf``).

inference-perf (github.com/kubernetes-sigs/inference-perf) is the Kubernetes serving
benchmark; its YAML config says what load to send (``load``) and what requests
(``data``). Read here as its code at commit 7de5ef2 defines them
(``inference_perf/config/loadgen/config.py``, ``config/datagen/config.py``,
``config/common.py``) and plays them (``loadgen/load_timer.py``,
``loadgen/load_generator.py``, ``datagen/synthetic/shared_prefix_datagen.py``,
``random_datagen.py``, ``utils/numeric/distribution/utils.py``, ``main.py``):

* ``load.type`` ``constant`` or ``poisson``, ``load.stages`` (each a ``rate`` in requests/s for
  a ``duration`` in whole seconds) and ``load.interval`` (seconds between stages, default 1).
  A stage sends ``int(rate * duration)`` requests. ``constant`` draws that many exponential
  gaps of mean 1/rate and scales them to sum to the duration (its ``ConstantLoadTimer``: the
  last request lands at the duration's end); ``poisson`` draws a Poisson(rate) count for each
  second and spreads that second's requests the same way (``PoissonLoadTimer``). Stages run one
  after another: the generator starts a stage's timer 1 s after the stage begins, checks once a
  second whether all of the stage's requests have ended, and begins the next stage ``interval``
  seconds after the check that finds them ended (``sim.workload.stages``; the engine plays it
  out).
* ``data.type: shared_prefix``: ``num_unique_system_prompts`` groups (formerly
  ``num_groups``), each a system prompt of ``system_prompt_len`` tokens followed by one of
  ``num_users_per_system_prompt`` (formerly ``num_prompts_per_group``) questions of
  ``question_len`` tokens, answered in ``output_len`` tokens — fixed lengths here (a
  distribution is refused). The prompts are shuffled once; each stage sends them in that order
  from the first, round again when it needs more. A group's requests share its system prompt,
  and a prompt sent again is the same text, so a prefix cache finds all of it.
* ``data.type: random`` or ``synthetic``: prompt and output lengths from
  ``input_distribution`` / ``output_distribution`` (``min``, ``max``, ``mean``, ``std_dev`` or
  ``variance``, ``type`` normal, lognormal, uniform or fixed, as its ``generate_distribution``
  draws them: clipped to [min, max] and rounded), drawn once; each stage's request j gets the
  j-th lengths. Random tokens: requests share nothing.

Outputs are exactly their length, as ``server.ignore_eos: true`` (inference-perf's default)
asks; ``ignore_eos: false`` is refused. Draws come from the run's seed, not the profile's
(``shared_prefix.seed``, ``load.base_seed``: inference-perf's token sampling draws from the same
generators, so its exact stream cannot be replayed without its tokenizer). Not modelled, and
so not read: the sections that say how to reach the server and report (``api``, ``server``
but for ``ignore_eos``, ``tokenizer``, ``metrics``, ``report``, ``storage``), the client's
workers (``load.num_workers``, ``worker_max_concurrency``: a real client holds back requests
beyond workers × concurrency in flight), circuit breakers and LoRA splits. Refused: other load
and data types, ``load.sweep`` (it probes a real server), a request timeout, multi-turn chat,
multimodal data. A bad profile is a ConfigError naming the file and the key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Mapping, Optional

import numpy as np

from sim.config import ConfigError, from_dict, read_yaml
from sim.config.ranges import Range, check_ranges, require
from sim.workload.sessions import OPEN, Sharing
from sim.workload.stages import Stages

# the load generator starts a stage's timer 1 s after the stage begins ("allow generation a
# second to begin populating the queue", load_generator.py run_stage) and checks once a
# second whether the stage's requests have all ended (its ``await sleep(1)`` loop)
STAGE_LEAD = 1.0
STAGE_POLL = 1.0
MAX_REQUESTS = 10_000_000  # as workload.num_requests: more is a typo, not a workload
LENGTH = Range(0, 1_000_000, "tokens")
TRACE = "not read; replay a trace with workload.source: timestamped"
# by section: keys inference-perf reads that say nothing of the requests it sends (how to reach
# and report on the server, the client's workers), accepted and not read
UNREAD = {
    "": ("api", "tokenizer", "metrics", "report", "storage", "circuit_breakers"),
    "load": (
        "num_workers", "worker_max_concurrency", "worker_max_tcp_connections", "circuit_breakers",
        "lora_traffic_split", "base_seed",
    ),
    # lengths target the templated prompt, so the same lengths; the text's source
    "data": ("use_chat_template", "corpus_file_path"),
    "data.shared_prefix": ("seed",),  # the run's seed draws
}
# by section: keys that would change the requests in ways not modelled, refused with the reason
REFUSED = {
    "load": {
        "sweep": "not read (it probes a real server for its saturation rate); give stages",
        "trace": TRACE,
        "request_timeout": "not modelled (requests never time out); remove it",
    },
    "data": {
        "trace": TRACE,
        "path": "not read (ShareGPT: workload.source lengths, the shipped table)",
        "multimodal": "not modelled (text prompts only)",
        **dict.fromkeys(
            ("otel_trace_replay", "weka_trace_replay", "conversation_replay", "visionarena"),
            "not read; llumsim reads the shared_prefix, random and synthetic data types",
        ),
    },
    "data.shared_prefix": {
        **dict.fromkeys(
            ("question_distribution", "output_distribution"), "a distribution of lengths is not read here; give fixed lengths"
        ),
        "multimodal": "not modelled (text prompts only)",
    },
}


@dataclass
class StageSpec:
    """One of ``load.stages``: ``rate`` requests/s for ``duration`` seconds."""

    rate: Optional[float] = None
    duration: Optional[int] = None
    # the concurrent load type's keys: inference-perf refuses them in a rate stage
    num_requests: Optional[int] = None
    concurrency_level: Optional[int] = None

    RANGES: ClassVar[dict[str, Range]] = {
        "rate": Range(0.0, 1e6, "requests/s", open_low=True),
        "duration": Range(1, 31_536_000, "seconds"),  # a year
    }

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class LoadSpec:
    """``load``: the stages and how their requests are spaced."""

    type: Literal["constant", "poisson", "concurrent", "trace_replay", "trace_session_replay"] = "constant"
    interval: float = 1.0
    stages: list[StageSpec] = field(default_factory=list)

    RANGES: ClassVar[dict[str, Range]] = {"interval": Range(0.0, 86_400.0, "seconds")}

    def __post_init__(self) -> None:
        check_ranges(self)
        require(
            self.type in ("constant", "poisson"),
            f"type: {self.type!r} is not read; llumsim reads the rate-based load types, 'constant' and 'poisson'",
        )
        require(bool(self.stages), "stages: none given; give at least one {rate, duration}")
        for index, stage in enumerate(self.stages):
            for key in ("rate", "duration"):
                require(getattr(stage, key) is not None, f"stages[{index}].{key}: required key missing")
            for key in ("num_requests", "concurrency_level"):
                require(
                    getattr(stage, key) is None,
                    f"stages[{index}].{key}: a {self.type} stage takes rate and duration only",
                )


@dataclass
class DistributionSpec:
    """``input_distribution`` / ``output_distribution`` (inference-perf's ``Distribution``)."""

    min: int = 10
    max: int = 1024
    mean: float = 512.0
    std_dev: float = 200.0
    total_count: Optional[int] = None
    type: Literal["normal", "skew_normal", "lognormal", "uniform", "poisson", "fixed"] = "normal"
    variance: Optional[float] = None
    skew: float = 0.0

    RANGES: ClassVar[dict[str, Range]] = {
        "min": Range(1, 1_000_000, "tokens"),
        "max": Range(1, 1_000_000, "tokens"),
        "mean": Range(0.0, 1e6, "tokens"),
        "std_dev": Range(0.0, 1e6, "tokens"),
        "total_count": Range(1, MAX_REQUESTS, "lengths"),
        "variance": Range(0.0, 1e12),
        "skew": Range(-1e3, 1e3),
    }

    def __post_init__(self) -> None:
        check_ranges(self)
        require(
            self.variance is None or self.std_dev == 0,
            "variance: give std_dev or variance, not both (set std_dev: 0 with variance)",
        )
        if self.variance is not None:
            self.std_dev = math.sqrt(self.variance)
        require(self.min <= self.max, f"max: must be >= min ({self.min}), got {self.max}")
        require(
            self.type in ("normal", "lognormal", "uniform", "fixed"),
            f"type: {self.type!r} is not drawn by the random and synthetic data types (normal, lognormal, uniform, fixed)",
        )
        require(
            self.type != "normal" or self.min <= self.mean <= self.max,
            f"mean: must lie in [min, max] = [{self.min}, {self.max}] for a normal distribution, got {self.mean:g}",
        )
        require(self.type != "fixed" or int(self.mean) >= 1, f"mean: a fixed length is at least 1 token, got {self.mean:g}")

    def draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` lengths as inference-perf's ``generate_distribution`` draws them."""
        if self.type == "fixed":
            return np.full(count, int(self.mean), dtype=np.int64)
        if self.type == "uniform":
            values = rng.uniform(self.min, self.max, size=count)
        elif self.type == "lognormal":  # shifted so that min maps to 0, with the requested mean and spread
            shifted = self.mean - self.min if self.mean > self.min else 1.0
            sigma2 = math.log(1 + (self.std_dev / shifted) ** 2)
            values = rng.lognormal(math.log(shifted) - sigma2 / 2, math.sqrt(sigma2), size=count) + self.min
        else:
            values = rng.normal(self.mean, self.std_dev, size=count)
        return np.clip(np.round(np.clip(values, self.min, self.max)).astype(np.int64), self.min, self.max)

    def describe(self) -> str:
        if self.type == "fixed":
            return f"{int(self.mean)}"
        return f"{self.type} mean {self.mean:g} sd {self.std_dev:g} in [{self.min}, {self.max}]"


def _length(value: Any, name: str) -> int:
    if isinstance(value, Mapping):
        raise ConfigError(f"{name}: a distribution of lengths is not read here; give a whole number of tokens")
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
        raise ConfigError(f"{name}: expected a whole number of tokens, got {value!r}")
    return int(value)


@dataclass
class SharedPrefixSpec:
    """``data.shared_prefix``: groups of users behind one system prompt each."""

    num_unique_system_prompts: int = 10  # also spelled num_groups
    num_users_per_system_prompt: int = 10  # also spelled num_prompts_per_group
    system_prompt_len: Any = 100
    question_len: Any = 50
    output_len: Any = 50
    enable_multi_turn_chat: bool = False

    ALIASES: ClassVar[dict[str, str]] = {
        "num_groups": "num_unique_system_prompts",
        "num_prompts_per_group": "num_users_per_system_prompt",
    }
    RANGES: ClassVar[dict[str, Range]] = {
        "num_unique_system_prompts": Range(1, 1_000_000, "prompts"),
        "num_users_per_system_prompt": Range(1, 1_000_000, "prompts"),
        "system_prompt_len": LENGTH,
        "question_len": LENGTH,
        "output_len": Range(1, 1_000_000, "tokens"),
    }

    def __post_init__(self) -> None:
        for key in ("system_prompt_len", "question_len", "output_len"):
            setattr(self, key, _length(getattr(self, key), key))
        check_ranges(self)
        require(
            self.system_prompt_len + self.question_len >= 1,
            "question_len: a prompt needs at least 1 token (system_prompt_len and question_len are both 0)",
        )
        require(not self.enable_multi_turn_chat, "enable_multi_turn_chat: not read (use workload.source: sessions for conversations)")


@dataclass
class DataSpec:
    """``data``: what the requests are."""

    type: str = "mock"
    shared_prefix: Optional[SharedPrefixSpec] = None
    input_distribution: Optional[DistributionSpec] = None
    output_distribution: Optional[DistributionSpec] = None

    READ: ClassVar[tuple[str, ...]] = ("shared_prefix", "random", "synthetic")

    def __post_init__(self) -> None:
        hint = " (ShareGPT: workload.source lengths, the shipped table)" if self.type == "shareGPT" else ""
        require(self.type in self.READ, f"type: {self.type!r} is not read; llumsim reads {', '.join(self.READ)}{hint}")
        if self.type == "shared_prefix":
            require(self.shared_prefix is not None, "shared_prefix: required for type 'shared_prefix'")
        else:
            for key in ("input_distribution", "output_distribution"):
                require(getattr(self, key) is not None, f"{key}: required for type {self.type!r}")


@dataclass
class Profile:
    """An inference-perf config: what llumsim reads of it (``UNREAD`` keys set aside)."""

    load: LoadSpec = field(default_factory=LoadSpec)
    data: DataSpec = field(default_factory=DataSpec)
    server: Optional[dict[str, Any]] = None

    def __post_init__(self) -> None:
        require(
            (self.server or {}).get("ignore_eos", True) is not False,
            "server.ignore_eos: false lets a real server stop before output_len; llumsim serves every "
            "output in full (ignore_eos: true, inference-perf's default)",
        )


def _screened(data: Mapping[str, Any], section: str = "") -> dict[str, Any]:
    """``data`` (the profile, or its ``section``) without its ``UNREAD`` keys, its
    ``shared_prefix`` keys under their current names; a ``REFUSED`` key set is a ConfigError."""
    kept = {str(k): v for k, v in data.items() if str(k) not in UNREAD.get(section, ())}
    for key, why in REFUSED.get(section, {}).items():
        if kept.get(key) is not None:
            raise ConfigError(f"{section}.{key}: {why}")
        kept.pop(key, None)  # set to null: as good as absent
    if section == "data.shared_prefix":
        for old, new in SharedPrefixSpec.ALIASES.items():
            if old in kept:
                if new in kept:
                    raise ConfigError(f"{section}.{old}: the former name of {new}, which is set too; keep one")
                kept[new] = kept.pop(old)
    for key, value in kept.items():
        inner = f"{section}.{key}" if section else key
        if isinstance(value, Mapping) and (inner in UNREAD or inner in REFUSED):
            kept[key] = _screened(value, inner)
    return kept


def read_profile(path: Path) -> Profile:
    """The profile at ``path``, checked: a ConfigError names the file and the key."""
    try:
        profile = from_dict(Profile, _screened(read_yaml(path)))
    except ConfigError as exc:
        message = str(exc)
        raise ConfigError(message if message.startswith(str(path)) else f"{path}: {message}") from None
    counts = [int(stage.rate * stage.duration) for stage in profile.load.stages]
    if not sum(counts):
        raise ConfigError(f"{path}: load.stages: no stage sends a request (a stage sends int(rate * duration))")
    if sum(counts) > MAX_REQUESTS:
        raise ConfigError(f"{path}: load.stages: {sum(counts):,} requests; at most {MAX_REQUESTS:,}")
    return profile


def constant_offsets(rng: np.random.Generator, rate: float, duration: float) -> np.ndarray:
    """``int(rate * duration)`` request times in (0, duration]: exponential gaps of mean 1/rate
    scaled to sum to ``duration`` (inference-perf's ``ConstantLoadTimer``)."""
    count = int(rate * duration)
    if count == 0:
        return np.zeros(0)
    gaps = rng.exponential(1 / rate, count)
    return np.cumsum(gaps * (duration / gaps.sum()))


def poisson_offsets(rng: np.random.Generator, rate: float, duration: float) -> np.ndarray:
    """``int(rate * duration)`` request times: each second a Poisson(rate) count of requests,
    spread over it as ``constant_offsets`` spreads them; a second with none is skipped
    (inference-perf's ``PoissonLoadTimer``)."""
    count = int(rate * duration)
    times: list[float] = []
    start = 0.0
    while len(times) < count:
        in_second = int(rng.poisson(rate))
        if in_second < 1:
            start += 1.0
            continue
        times.extend((start + constant_offsets(rng, in_second, 1.0)).tolist())
        start = times[-1]
    return np.array(times[:count])


@dataclass(frozen=True)
class ProfileStream:
    """The requests of a profile, in stage order (request i = index i)."""

    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    stages: Stages
    sharing: Optional[Sharing]
    description: str


def profile_stream(
    profile: Profile, name: str, arrivals: np.random.Generator, rows: np.random.Generator, lengths: np.random.Generator
) -> ProfileStream:
    """The requests ``profile`` sends: offsets by ``arrivals``, the prompts' order (shared
    prefix) by ``rows``, lengths (random, synthetic) by ``lengths``."""
    load, data = profile.load, profile.data
    timer = constant_offsets if load.type == "constant" else poisson_offsets
    offsets = [timer(arrivals, float(stage.rate), float(stage.duration)) for stage in load.stages]
    counts = np.array([len(o) for o in offsets], dtype=np.int64)
    # each stage sends the data from its start: request j of a stage is item j of the data
    item = np.concatenate([np.arange(n) for n in counts])
    if data.type == "shared_prefix":
        prompt, output, sharing, what = _shared_prefix(data.shared_prefix, item, rows)
    else:
        prompt, output, what = _drawn_lengths(data, item, int(counts.max()), lengths)
        sharing = None
    stages = Stages(
        first=np.concatenate([[0], np.cumsum(counts)]),
        offset=np.concatenate(offsets),
        rate=[stage.rate for stage in load.stages],
        duration=[stage.duration for stage in load.stages],
        lead=STAGE_LEAD,
        poll=STAGE_POLL,
        interval=load.interval,
    )
    rates = ", ".join(f"{stage.rate:g}" for stage in load.stages)
    durations = ", ".join(f"{stage.duration}" for stage in load.stages)
    description = (
        f"inference-perf profile {name}: {what}; {load.type} load, {len(counts)} stages at {rates} req/s "
        f"for {durations} s, {load.interval:g} s apart"
    )
    return ProfileStream(prompt, output, stages, sharing, description)


def _shared_prefix(
    spec: Optional[SharedPrefixSpec], item: np.ndarray, rows: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, Sharing, str]:
    """Each request's lengths, group and shared tokens: prompt p (of group p // users) in the
    shuffled order, item j sending prompt ``order[j % prompts]``."""
    assert spec is not None
    users = spec.num_users_per_system_prompt
    prompts = spec.num_unique_system_prompts * users
    prompt_of = rows.permutation(prompts)[item % prompts]
    group = prompt_of // users
    system, full = spec.system_prompt_len, spec.system_prompt_len + spec.question_len
    n = len(item)
    prefix_of, shared = np.full(n, -1), np.zeros(n, dtype=np.int64)
    first_of_prompt: dict[int, int] = {}
    first_of_group: dict[int, int] = {}
    for index, (p, g) in enumerate(zip(prompt_of.tolist(), group.tolist())):
        if p in first_of_prompt:  # the same prompt again: all of it is shared
            prefix_of[index], shared[index] = first_of_prompt[p], full
        elif g in first_of_group and system:  # another user of the group: its system prompt
            prefix_of[index], shared[index] = first_of_group[g], system
        first_of_prompt.setdefault(p, index)
        first_of_group.setdefault(g, index)
    sharing = Sharing(np.full(n, -1), np.zeros(n), np.full(n, OPEN), np.zeros(n), group, system, prefix_of, shared)
    what = (
        f"shared_prefix, {spec.num_unique_system_prompts} system prompts of {system} tokens x {users} users, "
        f"question {spec.question_len}, output {spec.output_len} tokens"
    )
    return np.full(n, full), np.full(n, spec.output_len), sharing, what


def _drawn_lengths(
    data: DataSpec, item: np.ndarray, most: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, str]:
    """Lengths drawn once, inputs then outputs, as many as the largest stage needs plus one
    (``main.py``'s ``total_count``, or the profile's if larger); item j gets the j-th."""
    inputs, outputs = data.input_distribution, data.output_distribution
    assert inputs is not None and outputs is not None
    prompt = inputs.draw(rng, max(inputs.total_count or 0, most + 1))
    output = outputs.draw(rng, max(outputs.total_count or 0, most + 1))
    what = f"{data.type}, input {inputs.describe()}, output {outputs.describe()} tokens"
    return prompt[item], output[item], what
