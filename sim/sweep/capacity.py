"""Capacity search: the highest arrival rate at which a cluster still meets per-tier SLOs —
latency bounds, or the attainment of the config's SLO targets (``tier0.attainment>=0.99``).

"How many GPUs for this SLO" is the capacity planner's question; turned around, it is
"how much load do these GPUs carry within the SLO". The search brackets the rate by
doubling or halving from the config's own rate, then bisects until the bracket is within
``tolerance``. Each point is a set of runs (one per seed) in a results store, so a repeated
or refined search reuses every point already computed.

Latency grows with load but, measured on a finite run, not strictly monotonically: near
the knee two seeds can disagree. Bisection reports *a* boundary inside the final bracket;
use several seeds there.

The search stays within the rates a config accepts (``workload.arrival.rate``'s range), so
it has three answers (``Capacity.answer``): a rate inside a bracket; no rate meets the SLOs
(the lowest rate tried misses them); or every rate tried meets them, up to the highest
(then the rate is only a lower bound). Everything the search needs is checked first: a
bracket the wrong way round, a non-finite or non-positive bound, a tier the config lacks.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator, Optional, Sequence

from sim.config import ArrivalConfig, ConfigError, SimulationConfig, from_dict, to_dict
from sim.config.limits import MAX_SEEDS
from sim.engine.watchdog import SimulationStalled
from sim.files import atomic_write, strict_json
from sim.metrics.cost import average_gpus
from sim.metrics.summary import LATENCY_METRICS
from sim.progress import Progress
from sim.sweep.backends import RunError, Task
from sim.sweep.cell import check_cell
from sim.sweep.execution import Execution, open_results
from sim.sweep.grid import normalize, run_key
from sim.sweep.store import RunStore

# a class of an SLO contract (slo.contract): its requests' lateness, latency / own target
_LATENESS = re.compile(r"class(\d+|\*)\.lateness\.(mean|p50|p90|p95|p99)\s*<=\s*(\S+)")
_SLO = re.compile(r"(?:tier(\d+|\*)\.)?([a-z0-9_]+)\.(mean|p50|p90|p99)\s*<=\s*(\S+)")
# the share of requests meeting the config's SLO targets (summary "slo" section)
ATTAINMENT_METRICS = ("attainment", "ttft_attainment", "tpot_attainment")
_ATTAINMENT = re.compile(rf"(?:tier(\d+|\*)\.)?({'|'.join(ATTAINMENT_METRICS)})\s*>=\s*(\S+)")
MAX_STEPS = 40  # bisection steps (from a bracket a factor 2 wide: 2^-40)
BRACKET_STEPS = 12  # doublings or halvings looking for a bracket (x4096 either way)
RATES = ArrivalConfig.RANGES["rate"]  # the rates a config accepts: the search stays within
SEED_LIMIT = SimulationConfig.RANGES["seed"].high


@dataclass(frozen=True)
class Slo:
    """A bound a run must hold: a latency ``[tierN.]metric.stat <= seconds``, or an
    attainment ``[tierN.]attainment >= share`` (``stat`` empty; no tier: over all requests).
    ``tier*.`` is the same bound on every tier of the config: ``expand_scopes`` expands it.
    ``classN.lateness.stat <= x``: a class of the config's SLO contract (``tier`` is then
    the class), its requests' latency over their own targets; ``class*.`` is every class."""

    tier: int | None
    metric: str
    stat: str
    limit: float
    every_tier: bool = False

    @property
    def is_lateness(self) -> bool:
        return self.metric == "lateness"

    @property
    def is_attainment(self) -> bool:
        return self.metric in ATTAINMENT_METRICS

    @property
    def name(self) -> str:
        kind = "class" if self.is_lateness else "tier"
        scope = f"{kind}*." if self.every_tier else f"{kind}{self.tier}." if self.tier is not None else ""
        return scope + (self.metric if self.is_attainment else f"{self.metric}.{self.stat}")

    @property
    def text(self) -> str:
        return f"{self.name}{'>=' if self.is_attainment else '<='}{self.limit:g}"

    def holds(self, value: float) -> bool:
        """Whether ``value`` is within the bound (NaN never is)."""
        return value >= self.limit if self.is_attainment else value <= self.limit

    def value(self, summary: dict[str, Any]) -> float:
        """This SLO's latency or attainment in a run summary (NaN when the tier has none)."""
        assert not self.every_tier, f"{self.name}: expand it per tier first (expand_scopes)"
        if self.is_lateness:
            classes = ((summary.get("slo") or {}).get("contract") or {}).get("classes", {})
            value = classes[str(self.tier)]["lateness"][self.stat] if str(self.tier) in classes else None
        elif self.is_attainment:
            slo = summary.get("slo") or {}
            section = slo.get("overall") if self.tier is None else slo.get("by_tier", {}).get(str(self.tier))
            value = None if section is None else section[self.metric]
        else:
            latency = (
                summary["latency"]
                if self.tier is None
                else summary["latency_by_tier"].get(str(self.tier))
            )
            value = None if latency is None else latency[self.metric][self.stat]
        return math.nan if value is None else float(value)


def parse_slo(text: str) -> Slo:
    """``tier0.prefill_latency.p99<=0.5`` or ``tier0.attainment>=0.99`` -> Slo; a malformed
    one is a ConfigError naming it."""
    lateness = _LATENESS.fullmatch(text.strip())
    if lateness is not None:
        scope, stat, limit = lateness.groups()
        bound = _number(text, limit, "a lateness (latency / target)")
        if not (math.isfinite(bound) and bound > 0):
            raise ConfigError(f"--slo {text!r}: a lateness bound must be finite and > 0")
        return _scoped(scope, "lateness", stat, bound)
    attainment = _ATTAINMENT.fullmatch(text.strip())
    if attainment is not None:
        tier, metric, share = attainment.groups()
        bound = _number(text, share, "a share")
        if not 0 < bound <= 1:
            raise ConfigError(f"--slo {text!r}: an attainment bound must be a share in (0, 1]")
        return _scoped(tier, metric, "", bound)
    match = _SLO.fullmatch(text.strip())
    if match is None:
        raise ConfigError(
            f"--slo {text!r}: expected [tierN.]METRIC.STAT<=SECONDS, e.g. tier0.prefill_latency.p99<=0.5, "
            "or [tierN.]attainment>=SHARE, e.g. tier0.attainment>=0.99 (tier*.: every tier), or "
            "classN.lateness.STAT<=X, e.g. class*.lateness.p99<=1 (an SLO contract's classes)"
        )
    tier, metric, stat, limit = match.groups()
    if metric not in LATENCY_METRICS:
        raise ConfigError(
            f"--slo {text!r}: unknown metric {metric!r} (known: {', '.join(LATENCY_METRICS)})"
        )
    bound = _number(text, limit, "a number of seconds")
    if not (math.isfinite(bound) and bound > 0):
        raise ConfigError(f"--slo {text!r}: the bound must be a finite number of seconds > 0")
    return _scoped(tier, metric, stat, bound)


def _scoped(tier: str | None, metric: str, stat: str, bound: float) -> Slo:
    if tier == "*":
        return Slo(None, metric, stat, bound, every_tier=True)
    return Slo(None if tier is None else int(tier), metric, stat, bound)


def expand_scopes(slos: Sequence[Slo], config: SimulationConfig) -> list[Slo]:
    """``slos`` with each ``tier*.`` bound replaced by the same bound on the config's tiers
    0..K−1 (a grid's cells differ in K, and "every tier meets its SLO" means K bounds), and
    each ``class*.`` bound by one per class of its SLO contract (none without one)."""
    expanded = []
    contract = config.slo.contract if config.slo is not None else None
    for slo in slos:
        if slo.every_tier:
            parts = (contract.classes if contract else 0) if slo.is_lateness else config.workload.priority.tiers
            expanded += [dataclasses.replace(slo, tier=t, every_tier=False) for t in range(parts)]
        else:
            expanded.append(slo)
    return expanded


def _number(text: str, value: str, what: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"--slo {text!r}: {value!r} is not {what}") from None


@dataclass
class Point:
    """One rate: each SLO's value (mean over seeds), and whether all of them hold."""

    rate: float
    values: dict[str, float]
    meets: bool
    average_gpus: float
    cost_per_request: float
    cost_per_latency: float  # the K-tier project's metric (sim.metrics.cost), for comparison


@dataclass
class Capacity:
    """The search's answer: the highest rate found meeting every SLO (None: not even the lowest tried)."""

    rate: float | None
    bracket: tuple[float, float]  # (highest meeting or 0, lowest failing or inf)
    points: list[Point] = field(default_factory=list)
    slos: list[Slo] = field(default_factory=list)  # as judged (``tier*.`` expanded)

    @property
    def best(self) -> Point | None:
        return next((p for p in self.points if p.rate == self.rate), None)

    @property
    def answer(self) -> str:
        """``bracketed`` (a capacity), ``none`` (no rate meets) or ``unbounded`` (every rate
        tried meets, up to ``rate``)."""
        if self.rate is None:
            return "none"
        return "bracketed" if math.isfinite(self.bracket[1]) else "unbounded"


def at_rate(config: SimulationConfig, rate: float, seed: int) -> SimulationConfig:
    """``config`` at arrival ``rate`` and ``seed``, normalized as the store keys it."""
    data = to_dict(config)
    data["workload"]["arrival"]["rate"] = rate
    data["seed"] = seed
    return normalize(from_dict(SimulationConfig, data))


def _round(rate: float) -> float:
    """Four significant digits, so the rates a search visits (and their keys) repeat exactly."""
    return float(f"{rate:.4g}")


class Evaluator:
    """Judges points of a search: each point one config per seed, run unless stored (or, with
    ``execution.recompute_stale``, stored by other code), judged on the mean over seeds; remembers them."""

    def __init__(self, config, slos, seeds, store: RunStore, execution: Execution, shown: Progress) -> None:
        self.config, self.slos, self.seeds, self.store = config, slos, seeds, store
        self.execution = execution
        self.shown = shown
        self.points_left = 0  # bisection steps still expected after this point (the ETA's)
        self.points: dict[float, Point] = {}

    def __call__(self, rate: float) -> Point:
        rate = _round(rate)
        if rate in self.points:
            return self.points[rate]
        configs = [at_rate(self.config, rate, seed) for seed in self.seeds]
        point = self.judged(configs, rate, f"rate {rate:g}", self.points_left * len(configs))
        self.points[rate] = point
        return point

    def judged(self, configs: Sequence[SimulationConfig], rate: float, label: str, more: int = 0) -> Point:
        """The point of ``configs`` (one per seed) at ``rate``: their runs, made where not
        stored, judged together; ``label`` names the point in a failed run's error, ``more``
        is the runs still expected after it (the progress line's ETA)."""
        keys = [run_key(c) for c in configs]
        tasks = [
            Task(k, c, ())
            for k, c in zip(keys, configs)
            if not self.store.is_done(k, this_code_only=self.execution.recompute_stale)
        ]
        self.shown.plan(len(configs), len(configs) - len(tasks), more)
        for key, result in self.execution.run(tasks):
            config = configs[keys.index(key)]
            self.shown.update(isinstance(result, RunError))
            if isinstance(result, RunError):  # a point with a failed run cannot be judged
                where = f"{label} seed {config.seed}: {result.reason}"
                raise SimulationStalled(where) if result.kind == "stalled" else ConfigError(where)
            self.store.write(key, config, result)
        return judge(rate, self.slos, [self.store.summary(k) for k in keys])


def judge(rate: float, slos: Sequence[Slo], summaries: Sequence[dict[str, Any]]) -> Point:
    """The point at ``rate`` from its runs' summaries (one per seed): each SLO's value as
    the mean over them, whether every SLO holds on it, GPUs and cost (means)."""
    values = {slo.name: sum(slo.value(s) for s in summaries) / len(summaries) for slo in slos}
    meets = all(slo.holds(values[slo.name]) for slo in slos)  # NaN fails
    gpus = [average_gpus(s["cost"]) for s in summaries]
    return Point(
        rate,
        values,
        meets,
        sum(gpus) / len(gpus),
        _mean([s["cost"]["cost_per_request"] for s in summaries]),
        _mean([s["cost"]["cost_per_latency"] for s in summaries]),
    )


def _mean(values: Sequence[float | None]) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def search_capacity(
    config: SimulationConfig,
    slos: Sequence[Slo],
    out_dir: Path,
    seeds: int = 1,
    low: float | None = None,
    high: float | None = None,
    tolerance: float = 0.02,
    execution: Execution = Execution(),
) -> Capacity:
    """Bracket, then bisect the arrival rate until (high − low) / low <= ``tolerance``;
    every point's runs come from the store unless missing (or, with ``execution.recompute_stale``,
    made by other code). ``execution.progress`` shows the runs on stderr (``sim.progress``;
    once bracketed, the ETA counts the bisection steps left)."""
    slos = expand_scopes(slos, config)
    check_search(config, slos, seeds, low, high, tolerance)
    check_cell(config)
    out_dir, store = open_results(out_dir)
    shown = Progress(f"capacity {config.name}", 0, show=execution.progress)
    evaluate = Evaluator(config, slos, [config.seed + i for i in range(seeds)], store, execution, shown)
    try:
        lo, hi = _drive(rate_search(low, high, config.workload.arrival.rate, tolerance), evaluate)
    finally:
        shown.close()
    points = sorted(evaluate.points.values(), key=lambda p: p.rate)
    result = Capacity(lo, (lo or 0.0, hi if hi is not None else math.inf), points, slos)
    _write(result, slos, Path(out_dir))
    return result


# A search is a conversation: it yields (rate, bisection steps left after it) and is sent
# whether that rate meets the SLOs; it returns (highest rate meeting, lowest failing), None
# where not found. ``search_capacity`` answers one search as it asks; ``capacity_grid``
# answers many in step, so runs that are one simulation are made once (sim.sweep.sharing).
RateSearch = Generator[tuple[float, int], bool, tuple[Optional[float], Optional[float]]]


def rate_search(
    low: float | None,
    high: float | None,
    start: float,
    tolerance: float,
    near: tuple[float, float] | None = None,
) -> RateSearch:
    """Bracket from ``low``/``high`` or by doubling or halving from ``start``, then bisect.

    ``near`` (a rate that met, one that missed) is a bracket other seeds of the same cell
    found: tried first and widened where this seed's answer lies outside it. A cell's seeds
    differ by a few percent, so a search that starts there skips the halvings from ``start``
    (the costliest runs: at light load an instance steps once per output token)."""
    if near is not None and near[0] < near[1] and low is None and high is None:
        lo, hi = yield from _bracket_near(*near)
    else:
        lo, hi = yield from _bracket(low, high, start)
    return (yield from _bisect(lo, hi, tolerance))


def _drive(search: RateSearch, evaluate: Callable[[float], Point]) -> tuple[float | None, float | None]:
    """Run ``search`` to its end, answering each rate with ``evaluate``."""
    try:
        rate, left = next(search)
        while True:
            evaluate.points_left = left
            rate, left = search.send(evaluate(rate).meets)
    except StopIteration as stop:
        return stop.value


def _bisect(lo, hi, tolerance):
    """Halve the bracket (lo meets, hi misses) until it is within ``tolerance``."""
    steps = 0
    while lo is not None and hi is not None and (hi - lo) / lo > tolerance and steps < MAX_STEPS:
        middle = _round((lo + hi) / 2)
        if middle in (lo, hi):
            break
        left = max(0, math.ceil(math.log2((hi - lo) / lo / tolerance)) - 1)
        if (yield middle, left):
            lo = middle
        else:
            hi = middle
        steps += 1
    return lo, hi


def check_search(
    config: SimulationConfig,
    slos: Sequence[Slo],
    seeds: int,
    low: float | None,
    high: float | None,
    tolerance: float,
) -> None:
    """Everything a search needs, checked before its first run (a ConfigError names it)."""
    if not slos:
        raise ConfigError("--slo: give at least one SLO")
    arrival = config.workload.arrival
    if arrival.rate is None:
        raise ConfigError("workload.arrival.rate: capacity search varies the rate; set one")
    if arrival.process == "burst":
        raise ConfigError("workload.arrival.process: burst ignores the rate, which capacity search varies")
    if not 0 < tolerance < 1:
        raise ConfigError(f"--tolerance: must be in (0, 1), got {tolerance}")
    check_seeds(config, seeds)
    for name, bound in (("--low", low), ("--high", high)):
        if bound is not None and not RATES.low <= bound <= RATES.high:  # NaN fails too
            raise ConfigError(
                f"{name}: must be a rate in [{RATES.low:g}, {RATES.high:g}] req/s, got {bound:g}"
            )
    if low is not None and high is not None and not low < high:
        raise ConfigError(f"--low: {low:g} req/s is not below --high ({high:g})")
    check_slos(config, slos)


def check_seeds(config: SimulationConfig, seeds: int) -> None:
    """``seeds`` runs from the config's seed on, within what a config accepts."""
    if not 1 <= seeds <= MAX_SEEDS:
        raise ConfigError(f"--seeds: must be in 1..{MAX_SEEDS:,}, got {seeds}")
    if config.seed + seeds - 1 > SEED_LIMIT:
        raise ConfigError(f"--seeds: seeds {config.seed}..{config.seed + seeds - 1} pass {SEED_LIMIT}")


def check_slos(config: SimulationConfig, slos: Sequence[Slo]) -> None:
    """Every SLO names a tier, class or target the config has, and bounds its metric once."""
    if not slos:
        raise ConfigError("--slo: give at least one SLO")
    tiers = config.workload.priority.tiers
    contract = config.slo.contract if config.slo is not None else None
    for slo in slos:
        if slo.is_lateness:
            if contract is None:
                raise ConfigError(f"--slo {slo.name}: lateness is judged against an SLO contract; set slo.contract")
            if slo.tier is not None and slo.tier >= contract.classes:
                raise ConfigError(
                    f"--slo {slo.name}: no class {slo.tier} (slo.contract.classes={contract.classes}: classes "
                    f"0..{contract.classes - 1})"
                )
            continue
        if slo.is_attainment and config.slo is None:
            raise ConfigError(
                f"--slo {slo.name}: attainment is measured against the config's targets; set slo "
                "(slo.tiers or slo.ladder)"
            )
        if slo.tier is not None and slo.tier >= tiers:
            raise ConfigError(
                f"--slo {slo.name}: no tier {slo.tier} (workload.priority.tiers={tiers}: tiers "
                f"0..{tiers - 1})"
            )
    # capacity.json and the table keep one value and one bound per metric: a second bound
    # on it would be judged but not shown (the looser one shown)
    seen: dict[str, Slo] = {}
    for slo in slos:
        if slo.name in seen:
            raise ConfigError(
                f"--slo {slo.name}: bounded twice ({seen[slo.name].text} and {slo.text}); give one bound per metric"
            )
        seen[slo.name] = slo


def _bracket(low, high, start):
    """(highest rate meeting, lowest failing) from doubling/halving within ``RATES``; None
    where not found (no rate meets, or every rate tried does)."""
    lo = _round(low) if low is not None else None
    hi = _round(high) if high is not None else None
    if lo is not None and not (yield lo, 0):
        return None, lo
    if hi is not None and (yield hi, 0):
        return hi, None
    if lo is None and hi is None:
        probe = _round(min(max(start, RATES.low), RATES.high))
        if (yield probe, 0):
            lo = probe
        else:
            hi = probe
    return (yield from _widen(lo, hi))


def _bracket_near(lo, hi):
    """``_bracket`` from a bracket other seeds found: its ends first, then outward from
    whichever end is wrong (``_widen`` by the bracket's width, doubling). Every rate is the
    bracket's ends plus multiples of its width, so the rates stay on the lattice the other
    seeds' bisections visited, and share their runs."""
    lo, hi = _round(lo), _round(hi)
    width = hi - lo
    if not (yield lo, 0):
        lo, hi = None, lo
    elif (yield hi, 0):
        lo, hi = hi, None
    return (yield from _widen(lo, hi, width))


def _widen(lo, hi, step=None):
    """Move the missing end of (lo, hi) outward from the last rate tried until both are
    found, within ``RATES``: by halving or doubling, or with ``step`` by that much (doubling
    each time, never below half the rate). None where not found (no rate meets, or every
    rate tried does). Steps from a narrow bracket take more of them to go as far as
    doublings would, so they stop only at ``RATES``' ends (or MAX_STEPS)."""
    for _ in range(BRACKET_STEPS if step is None else MAX_STEPS):
        if lo is not None and hi is not None:
            break
        if lo is None:
            lower = hi / 2 if step is None else max(hi - step, hi / 2)
            candidate = _round(max(lower, RATES.low))
            if candidate >= hi:
                break  # the lowest rate a config takes misses the SLOs
        else:
            candidate = _round(min(lo * 2 if step is None else lo + step, RATES.high))
            if candidate <= lo:
                break  # the highest rate a config takes meets them
        step = None if step is None else step * 2
        if (yield candidate, 0):
            lo = candidate
        else:
            hi = candidate
    return lo, hi


def _write(result: Capacity, slos: Sequence[Slo], out_dir: Path) -> None:
    data = {
        "slos": {slo.name: slo.limit for slo in slos},
        "rate": result.rate,
        "bracket": (
            list(result.bracket) if math.isfinite(result.bracket[1]) else [result.bracket[0], None]
        ),
        "points": [dataclasses.asdict(p) for p in result.points],
    }
    text = strict_json(data)
    atomic_write(out_dir / "capacity.json", lambda tmp: tmp.write_text(text))
