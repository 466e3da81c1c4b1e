"""The cheapest fleet: how many instances of each pool's GPU meet a contract at one arrival rate.

A capacity search (``sim.sweep.capacity``) asks how much load a fixed cluster carries; a
planner buying GPUs asks the other way round: at this load, under this contract, which mix of
A10s, A100s and H100s costs least per hour? Each pool of the config is one SKU; its count
runs from 0 to a bound, and a fleet's bill is Σ count × GPUs per instance × the SKU's list
price (``cost.sku_prices``).

The search (``cheapest_fleet``) simulates the fleets in order of their bill, cheapest first,
and stops at the first that meets the contract *stably*: it meets it, and so does every fleet
one instance larger in a pool it uses (within the bounds; an answer with a pool at its bound
has no such guard there, and says so). Exact, whatever the contract does as the
fleet grows — and it has to be. A tail percentile over a finite run is noisy: past its knee
an A10 fleet's P99 time to first token wanders around a floor the longest prompts set, so one
count can slip under a bound that the counts around it miss; the neighbours keep such a lucky
draw from being the answer. And in a mixed fleet, adding instances of the slower GPU can
break a tail-latency contract the fast GPUs met alone (the dispatcher sends them work, and
their prefills are the slow ones), so "more instances never hurt" is false there. Where it
does hold (one SKU and a contract well inside its range), ``monotone=True`` bisects the last
pool's count for each count of the others instead, skipping the counts of the others that
alone cost more than the best fleet found. Every fleet evaluated is a set of runs in a results store (one per seed), so a
repeated search, or one under another contract in the same folder, reuses them. A spot pool
(``pools[*].spot``) is priced at its spot price, and its preemption notices are drawn from
each run's seed: a fleet with one meets the contract only if it does on every seed, not on
their mean.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Callable, Optional, Sequence

from sim.config import ConfigError, SimulationConfig, from_dict, to_dict
from sim.hardware.prices import gpu_hour_prices
from sim.metrics.cost import gpus_per_instance
from sim.progress import Progress
from sim.sweep.capacity import Evaluator, Point, Slo, check_seeds, check_slos, expand_scopes, judge
from sim.sweep.cell import check_cell
from sim.sweep.execution import Execution, open_results
from sim.sweep.grid import normalize, run_key
from sim.files import atomic_write, strict_json

Counts = tuple[int, ...]


@dataclass(frozen=True)
class FleetPool:
    """One pool of the fleet: its name, what one of its instances costs per hour, and the
    largest count the search tries."""

    name: str
    hourly_price: float
    most: int


def hourly_cost(pools: Sequence[FleetPool], counts: Counts) -> float:
    return sum(pool.hourly_price * n for pool, n in zip(pools, counts))


def fewest_last(prefix: Counts, most: int, meets: Callable[[Counts], bool]) -> Optional[int]:
    """The fewest instances of the last pool that, after ``prefix``, meet the contract (None:
    not even ``most``); a fleet of no instance never meets."""
    low = 1 if not any(prefix) else 0
    if low > most or not meets(prefix + (most,)):
        return None
    high = most  # meets
    while low < high:
        middle = (low + high) // 2
        if meets(prefix + (middle,)):
            high = middle
        else:
            low = middle + 1
    return high


def fleets_by_cost(pools: Sequence[FleetPool]) -> list[Counts]:
    """Every fleet within the bounds (at least one instance), cheapest first; ties: fewer
    instances, then the counts in order."""
    fleets = [c for c in product(*(range(pool.most + 1) for pool in pools)) if any(c)]
    return sorted(fleets, key=lambda c: (hourly_cost(pools, c), sum(c), c))


def larger_by_one(pools: Sequence[FleetPool], counts: Counts) -> list[Counts]:
    """The fleets one instance larger than ``counts`` in a pool it already uses (the same mix:
    a first instance of another GPU is another fleet, which may rightly fail), one per such
    pool not at its bound."""
    return [
        counts[:i] + (n + 1,) + counts[i + 1:]
        for i, (pool, n) in enumerate(zip(pools, counts))
        if 0 < n < pool.most
    ]


def at_bound(pools: Sequence[FleetPool], counts: Counts) -> list[str]:
    """The pools ``counts`` uses at their bound: there no larger fleet guards the answer."""
    return [pool.name for pool, n in zip(pools, counts) if n and n == pool.most]


def meets_stably(pools: Sequence[FleetPool], counts: Counts, meets: Callable[[Counts], bool]) -> bool:
    """``counts`` meets the contract, and so does every fleet one instance larger in the
    pools it uses."""
    return meets(counts) and all(meets(larger) for larger in larger_by_one(pools, counts))


def cheapest_fleet(
    pools: Sequence[FleetPool], meets: Callable[[Counts], bool], monotone: bool = False
) -> Optional[Counts]:
    """The cheapest counts (ties: fewer instances) that meet the contract stably, or None
    where no fleet within the bounds does. ``monotone``: assume adding an instance never
    breaks a contract, and bisect (see the module's docstring)."""
    if not pools:
        raise ValueError("a fleet needs at least one pool")
    if not monotone:
        return next((counts for counts in fleets_by_cost(pools) if meets_stably(pools, counts, meets)), None)
    *head, last = pools
    prefixes = sorted(product(*(range(pool.most + 1) for pool in head)), key=lambda p: hourly_cost(head, p))
    best: Optional[Counts] = None
    for prefix in prefixes:
        if best is not None and hourly_cost(head, prefix) > hourly_cost(pools, best):
            break  # sorted by cost: every later prefix costs more than the best fleet already
        n = fewest_last(prefix, last.most, meets)
        if n is None:
            continue
        counts = prefix + (n,)
        if best is None or (hourly_cost(pools, counts), sum(counts)) < (hourly_cost(pools, best), sum(best)):
            best = counts
    return best


def frontier(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (cost, latency) pairs no other pair beats on both: cheaper and no slower, or
    faster and no dearer; sorted by cost."""
    kept: list[tuple[float, float]] = []
    for cost, latency in sorted(points):
        if not kept or latency < kept[-1][1]:
            kept.append((cost, latency))
    return kept


@dataclass
class FleetResult:
    pools: list[FleetPool]
    rate: float
    slos: list[Slo]
    best: Optional[Counts]
    evaluated: dict[Counts, Point] = field(default_factory=dict)
    # fleets the search generated that cannot exist (a PD fleet without its decode pool, one
    # smaller than a fault's instance): why each, skipped — never the user's config's error
    skipped: dict[Counts, str] = field(default_factory=dict)

    def cost(self, counts: Counts) -> float:
        return hourly_cost(self.pools, counts)


def fleet_pools(config: SimulationConfig, most: dict[str, int]) -> list[FleetPool]:
    """The config's pools as a fleet, each bounded by ``most`` (every pool must be named)."""
    pools = config.instance_pools()
    names = [pool.name for pool in pools]
    unknown = sorted(set(most) - set(names))
    if unknown:
        raise ConfigError(f"--fleet: no pool named {', '.join(unknown)}; the config's pools: {', '.join(names)}")
    missing = [name for name in names if name not in most]
    if missing:
        raise ConfigError(f"--fleet: give the largest count of every pool ({', '.join(missing)}: POOL=N)")
    if config.autoscale.enabled:
        raise ConfigError("--fleet: autoscale.enabled: a fleet's counts are fixed; turn auto-scaling off")
    for name, n in most.items():
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 64:
            raise ConfigError(f"--fleet {name}={n}: the largest count must be in 1..64")
    if not config.cost.sku_prices and len({(p.device, p.model) for p in pools}) > 1:
        raise ConfigError(
            "--fleet: pools of different GPUs need their own prices; set cost.sku_prices: true "
            "(each SKU's list price) — a flat cost.gpu_hour_price would rank fleets by GPU count"
        )
    prices = gpu_hour_prices(config)
    return [FleetPool(p.name, prices[p.name] * gpus_per_instance(p), most[p.name]) for p in pools]


def with_counts(config: SimulationConfig, counts: Counts, seed: int) -> SimulationConfig:
    """``config`` with each pool at its count (a pool at 0 left out) and ``seed``."""
    data = to_dict(config)
    pools = data.get("pools") or [{"name": "cluster", **data.pop("cluster")}]
    data["pools"] = [{**pool, "instances": n} for pool, n in zip(pools, counts) if n > 0]
    data.pop("cluster", None)
    data["seed"] = seed
    return normalize(from_dict(SimulationConfig, data))


class FleetEvaluator(Evaluator):
    """Judges fleets at the config's rate (a fleet: one count per pool); remembers every fleet.
    A fleet the search made up that no config could describe is checked on its own, apart
    from the user's config (checked before the search), skipped and counted: it does not meet
    the contract, and is not the user's error."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.skipped: dict[Counts, str] = {}

    def __call__(self, counts: Counts) -> bool:
        if counts in self.skipped:
            return False
        if counts not in self.points:
            try:
                configs = [with_counts(self.config, counts, seed) for seed in self.seeds]
                check_cell(configs[0])
            except ConfigError as exc:
                self.skipped[counts] = str(exc)
                return False
            self.points[counts] = self.on_every_seed(
                configs, self.judged(configs, self.config.workload.arrival.rate, f"fleet {counts}")
            )
        return self.points[counts].meets

    def on_every_seed(self, configs: Sequence[SimulationConfig], point: Point) -> Point:
        """With a spot pool the seeds are the preemption source's too: a fleet meets the
        contract only if it does under each of them (a lucky seed's notices must not carry an
        unlucky one's misses in a mean)."""
        if not any(pool.spot is not None for pool in self.config.instance_pools()):
            return point
        rate = self.config.workload.arrival.rate
        each = [judge(rate, self.slos, [self.store.summary(run_key(config))]) for config in configs]
        return dataclasses.replace(point, meets=point.meets and all(p.meets for p in each))


def search_fleet(
    config: SimulationConfig,
    slos: Sequence[Slo],
    most: dict[str, int],
    out_dir: Path,
    seeds: int = 1,
    execution: Execution = Execution(),
    report: str = "fleet.json",
    monotone: bool = False,
) -> FleetResult:
    """The cheapest fleet of the config's pools meeting ``slos`` at the config's rate; every
    fleet evaluated is written to ``report`` in ``out_dir``, beside the runs (``runs/``: a
    search under another contract in the same folder reuses them)."""
    if not slos:
        raise ConfigError("--fleet: give the contract as one or more --slo")
    if config.workload.arrival.rate is None:
        raise ConfigError("workload.arrival.rate: a fleet search holds the arrival rate; set one")
    pools = fleet_pools(config, most)
    slos = expand_scopes(slos, config)
    check_slos(config, slos)
    check_seeds(config, seeds)
    check_cell(config)
    out_dir, store = open_results(out_dir)
    shown = Progress(f"fleet {config.name}", 0, show=execution.progress)
    evaluate = FleetEvaluator(config, slos, [config.seed + i for i in range(seeds)], store, execution, shown)
    try:
        best = cheapest_fleet(pools, evaluate, monotone)
    finally:
        shown.close()
    result = FleetResult(pools, config.workload.arrival.rate, list(slos), best, evaluate.points, evaluate.skipped)
    _write(result, out_dir / report)
    return result


def _write(result: FleetResult, path: Path) -> None:
    data = {
        "rate": result.rate,
        "slos": {slo.name: slo.limit for slo in result.slos},
        "pools": [pool.__dict__ for pool in result.pools],
        "best": None if result.best is None else dict(zip((p.name for p in result.pools), result.best)),
        "best_hourly_cost": None if result.best is None else result.cost(result.best),
        "best_at_bound": [] if result.best is None else at_bound(result.pools, result.best),
        "fleets": [
            {
                "counts": dict(zip((p.name for p in result.pools), counts)),
                "hourly_cost": result.cost(counts),
                "meets": point.meets,
                "values": {k: (v if math.isfinite(v) else None) for k, v in point.values.items()},
            }
            for counts, point in sorted(result.evaluated.items())
        ],
        "skipped": [
            {"counts": dict(zip((p.name for p in result.pools), counts)), "reason": reason}
            for counts, reason in sorted(result.skipped.items())
        ],
    }
    text = strict_json(data)
    atomic_write(path, lambda tmp: tmp.write_text(text))
