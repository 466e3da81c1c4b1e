"""Auto-scaling rules: from load reports of the live instances to scale-out/in decisions.

The engine carries decisions out (``sim.engine.scaling``): scale-out after a cold start,
scale-in by draining (a draining instance takes no dispatches and, reporting an
overwhelming load, is a migration source until it is empty; then it is removed).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable, Iterable, Mapping, NamedTuple, Optional, Sequence

from sim.config import AutoscaleConfig, ConfigError
from sim.config.registry import Registry
from sim.instance.load import (
    LoadReport,
    artifact_dispatch_load,
    artifact_migration_load,
    freeness_normal,
    queue_aware_freeness,
)

SCALE_OUT = "scale_out"
SCALE_IN = "scale_in"


CANCEL_DRAIN = "cancel_drain"


class ScalingDecision(NamedTuple):
    action: str  # SCALE_OUT, SCALE_IN or CANCEL_DRAIN
    count: int = 1  # instances to add (scale-out)
    instance: Optional[int] = None  # the instance to drain, or to stop draining


class ScalingRule(ABC):
    def __init__(self, config: AutoscaleConfig, load_control: bool = True) -> None:
        self.config = config
        self.load_control = load_control

    @abstractmethod
    def decide(
        self, now: float, reports: Mapping[int, LoadReport], instances: int, starting: int
    ) -> Optional[ScalingDecision]:
        """From the latest reports of the live instances (serving and draining), how many
        instances are live (some may not have reported yet) and how many are still starting
        up, the action to take now, if any."""


SCALING_RULES: Registry[type[ScalingRule]] = Registry("scaling", "autoscale.rule")


def serving(reports: Mapping[int, LoadReport]) -> dict[int, LoadReport]:
    return {i: r for i, r in reports.items() if not r.draining}


class ScaleOutPool(ABC):
    """Which pool a scale-out adds an instance of (``autoscale.pool``), decided with the
    scale-out from the live instances' latest reports."""

    @abstractmethod
    def choose(
        self, reports: Mapping[int, LoadReport], pool_of: Callable[[int], str], pools: Sequence[str]
    ) -> str:
        """One of ``pools`` (in config order); ``pool_of`` names an instance's pool."""


SCALE_OUT_POOLS: Registry[type[ScaleOutPool]] = Registry("scale-out pool", "autoscale.pool")


@SCALE_OUT_POOLS.register("first")
class FirstPool(ScaleOutPool):
    """The pool listed first (a run's one pool): the scale-out the artifact knows."""

    def choose(self, reports, pool_of, pools) -> str:
        return pools[0]


@SCALE_OUT_POOLS.register("least-free")
class LeastFreePool(ScaleOutPool):
    """The pool whose serving instances are least free on average (F_normal, the signal
    the scaling rules read): where the load a scale-out answers is. A pool with no serving
    instance comes last (no report says it is loaded); ties go to the pool listed first."""

    def choose(self, reports, pool_of, pools) -> str:
        by_pool: dict[str, list[float]] = {}
        for instance_id, report in serving(reports).items():
            by_pool.setdefault(pool_of(instance_id), []).append(freeness_normal(report))

        def rank(pool: str) -> tuple[bool, float, int]:
            free = by_pool.get(pool)
            return free is None, sum(free) / len(free) if free else 0.0, pools.index(pool)

        return min(pools, key=rank)


class OnePool(ScaleOutPool):
    """Always the pool ``autoscale.pool`` names."""

    def __init__(self, name: str) -> None:
        self.name = name

    def choose(self, reports, pool_of, pools) -> str:
        return self.name


def scale_out_pool(name: str, pools: Sequence[str]) -> ScaleOutPool:
    """The choice ``autoscale.pool`` names: a registered rule, or a pool's name (that pool
    always; a rule's name wins over a pool of the same name)."""
    if name in SCALE_OUT_POOLS.names():
        return SCALE_OUT_POOLS.get(name)()
    if name in pools:
        return OnePool(name)
    raise ConfigError(
        f"autoscale.pool: {name!r} is neither a scale-out pool rule ({', '.join(SCALE_OUT_POOLS.names())}) "
        f"nor a pool ({', '.join(pools)})"
    )


@SCALING_RULES.register("sustained-band")
class SustainedBand(ScalingRule):
    """Keep the average freeness within [low, high] (the paper's prose, §4.4.4): act when the
    condition has held for ``sustain`` seconds, one instance per action, and restart the timer
    after each action, so a steady load inside the band never makes the cluster oscillate.
    Scale-in drains the instance with the fewest running requests. The signal is F_normal,
    or with ``queue_aware`` the queue-aware freeness."""

    def __init__(self, config: AutoscaleConfig, load_control: bool = True) -> None:
        super().__init__(config, load_control)
        self.below_since: Optional[float] = None
        self.above_since: Optional[float] = None

    def freeness(self, report: LoadReport) -> float:
        if self.config.queue_aware:
            return queue_aware_freeness(report)
        return freeness_normal(report)

    def decide(
        self, now: float, reports: Mapping[int, LoadReport], instances: int, starting: int
    ) -> Optional[ScalingDecision]:
        live = serving(reports)
        if not live:
            return None
        average = sum(map(self.freeness, live.values())) / len(live)
        config = self.config
        if average < config.low:
            self.above_since = None
            self.below_since = now if self.below_since is None else self.below_since
            if (
                now - self.below_since >= config.sustain
                and len(live) + starting < config.max_instances
            ):
                self.below_since = None
                return ScalingDecision(SCALE_OUT)
        elif average > config.high:
            self.below_since = None
            self.above_since = now if self.above_since is None else self.above_since
            if (
                now - self.above_since >= config.sustain
                and len(live) > config.min_instances
                and not starting
            ):
                self.above_since = None
                return ScalingDecision(SCALE_IN, instance=fewest_running(live))
        else:
            self.below_since = self.above_since = None
        return None


def fewest_running(live: Mapping[int, LoadReport]) -> int:
    """The instance to drain: fewest running requests (then fewest queued, then newest)."""
    return min(live, key=lambda i: (live[i].num_running, live[i].num_waiting, -i))


@SCALING_RULES.register("artifact")
class ArtifactInterval(ScalingRule):
    """The artifact's loop (``llm_engine_manager.py`` and ``request_scheduler.py::need_scale``,
    ``scale_strategy avg_load``). Checked every ``interval`` seconds from ``first_check``,
    each check one instantaneous measurement over the latest reports (and only once every
    live instance has reported):

    * scale out when the cluster's average load is above −low (freeness below ``low``): the
      aggregate dispatch-style load −(ΣF − ΣW − Σqueued blocks) / (ΣR + ΣQ); add as many
      instances at once as it takes, counting each new one as an empty instance of capacity
      M, to bring it back; not while instances are still starting; while an instance is
      draining, stop its drain instead of adding any;
    * otherwise scale in one instance, the newest, when the cluster would still have a load
      below −high (freeness above ``high``) without the newest instance's capacity (its
      requests kept): the migration-style load of the aggregate, whose free blocks drop the
      newest instance's whole capacity (clamped at 0); not while a drain is in progress.

    Draining instances count with one running request and their real free blocks."""

    def __init__(self, config: AutoscaleConfig, load_control: bool = True) -> None:
        super().__init__(config, load_control)
        self.last_check = config.first_check - config.interval

    def decide(
        self, now: float, reports: Mapping[int, LoadReport], instances: int, starting: int
    ) -> Optional[ScalingDecision]:
        if now - self.last_check <= self.config.interval:
            return None
        self.last_check = now
        if not reports or len(reports) < instances:
            return None
        config = self.config
        draining = [i for i, r in reports.items() if r.draining]
        if aggregate_dispatch_load(reports.values()) > -config.low:
            count = extra_instances(reports.values(), -config.low, config.max_instances - instances)
            if not count or starting:
                return None
            if draining:
                return ScalingDecision(CANCEL_DRAIN, instance=draining[0])
            return ScalingDecision(SCALE_OUT, count=count)
        newest = max(reports)
        if (
            not draining
            and instances - 1 >= config.min_instances
            and aggregate_load_without(reports, newest, self.load_control) < -config.high
        ):
            return ScalingDecision(SCALE_IN, instance=newest)
        return None


def cluster_as_one_instance(reports: Iterable[LoadReport], without: Optional[int] = None) -> LoadReport:
    """The cluster summed as one instance, as ``request_scheduler.py`` builds its
    ``tot_instance_info``: a draining instance counts as one running request (its −1000
    override is not summed), queued blocks are Σ tokens / block size, and the newest instance
    (``without``, for the scale-in check) keeps its requests but loses its capacity. The
    artifact's load formulas (``sim.instance.load``) apply to it as to one instance."""
    free = capacity = watermark = running = waiting = 0
    waiting_blocks = 0.0
    for report in reports:
        newest = report.instance_id == without
        free += report.free_blocks - report.capacity_blocks if newest else report.free_blocks
        capacity += 0 if newest else report.capacity_blocks
        watermark += 0 if newest else report.watermark_blocks
        running += 1 if report.draining else report.num_running
        waiting += report.num_waiting
        waiting_blocks += report.waiting_tokens / report.block_size
    return LoadReport(
        instance_id=-1,
        capacity_blocks=capacity,
        used_blocks=capacity - free,
        reserved_blocks=0,
        num_running=running,
        num_waiting=waiting,
        waiting_demand_blocks=0,
        head_demand_blocks=0,
        watermark_blocks=watermark,
        block_size=1,  # waiting_tokens holds the summed queued blocks already
        waiting_tokens=waiting_blocks,
    )


def with_empty_blocks(total: LoadReport, blocks: int) -> LoadReport:
    """``total`` with ``blocks`` more free blocks (empty instances added)."""
    return total._replace(capacity_blocks=total.capacity_blocks + blocks)


def aggregate_dispatch_load(reports: Iterable[LoadReport]) -> float:
    """``_get_avg_load``: the dispatch load of the cluster summed as one instance (no
    priority reservation)."""
    return artifact_dispatch_load(cluster_as_one_instance(reports))


def extra_instances(reports: Iterable[LoadReport], threshold: float, room: int) -> int:
    """How many empty instances bring the aggregate dispatch load to ``threshold`` or below
    (``need_scale``'s loop adding dummy instances), at most ``room``."""
    reports = list(reports)
    capacity = reports[0].capacity_blocks
    total = cluster_as_one_instance(reports)
    count = 0
    while count < room and artifact_dispatch_load(with_empty_blocks(total, count * capacity)) > threshold:
        count += 1
    return count


def aggregate_load_without(reports: Mapping[int, LoadReport], newest: int, load_control: bool) -> float:
    """``_get_load_metric_down``: the migration load of the cluster summed as one instance,
    with the newest instance's capacity taken away (free blocks floored at 0) but its
    requests kept."""
    total = cluster_as_one_instance(reports.values(), without=newest)
    if total.free_blocks < 0:
        total = with_empty_blocks(total, -total.free_blocks)
    return artifact_migration_load(total, load_control)
