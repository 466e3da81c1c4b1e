"""Priority modes: how K tiers turn into load, as a reservation (in blocks) a load signal
subtracts from an instance's available memory.

* ``none``: every request is normal (Llumnix-base, INFaaS++, round-robin).
* ``load-target`` (the artifact's mechanism, ``vllm/instance_info.py``): an instance that
  holds a request of tier p is charged ``M − target_p / block_size`` blocks, so it looks
  full once it holds more than ``target_p`` tokens and sheds load; dispatch is tier-aware:
  a request of tier q is charged the reservation of instances whose most critical tier c
  differs from q (of tier min(c, q)), so each tier gathers on instances led by its own tier
  and avoids the others. With K = 2 (tier 0 high, target 1,600 tokens; tier 1 normal, no
  target) this is exactly the artifact: ``priority_reserved_blocks = M − 1600 // 16`` is
  subtracted from the migration load when any high-priority request is queued or running,
  from the ``load`` dispatch load of a normal request when the instance holds one, and from
  the ``priority`` dispatch load of a high-priority request when it holds none.
* ``headroom`` (the K-tier project's scheme): tier p charges H_p = M·h_max·e^(−λp) blocks
  while any of its requests runs (the llumlet reports the sum); the same for every request.
* ``adaptive-headroom``: ``headroom`` starting from that allocation, each H_p then moved by
  a controller from the tier's recent SLO attainment (``sim.cluster.adaptive_headroom``).

The mode also says how the llumlet orders its own queue by default: ``load-target`` keeps
vLLM's FCFS (the artifact's high-priority insertion is a no-op in effect, see docs/schedulers.md),
``headroom`` serves and preempts by tier.

Compiled with the dispatch rules (``sim.native``), and for the same reasons registered by a
call after each class, open to interpreted subclasses, with ClassVar switches.
"""

from __future__ import annotations

import math
from typing import ClassVar, Final, Optional, Sequence

from mypy_extensions import mypyc_attr

from sim.config import SchedulerConfig
from sim.config.registry import Registry
from sim.instance.load import LoadReport

PAPER_LOAD_TARGET_TOKENS: Final = 1600  # Llumnix §4.4.2 / instance_info.py: the high-priority target


@mypyc_attr(allow_interpreted_subclasses=True)
class PriorityMode:
    """No priorities: nothing is reserved (the base class is the ``none`` mode)."""

    local_order: ClassVar[str] = "fcfs"  # the llumlet's own queue and preemption order by default
    tier_dependent: ClassVar[bool] = False  # the dispatch reservation depends on the request's tier
    adapts: ClassVar[bool] = False  # tier headroom is moved online (adaptive-headroom)
    reads_tiers: ClassVar[bool] = False  # a decision reads a tier or K (sim.sweep.sharing)
    reads_slo_targets: ClassVar[bool] = False  # True: it works against per-tier SLO targets (a config naming it sets slo)

    def __init__(self, config: SchedulerConfig, tiers: int) -> None:
        self.config = config
        self.tiers = tiers

    @property
    def normal_tier(self) -> int:
        """The first tier that counts as normal priority (0: every tier, priorities off)."""
        return 0

    def dispatch_reservation(self, report: LoadReport, tier: int) -> float:
        return 0.0

    def migration_reservation(self, report: LoadReport) -> float:
        return 0.0

    def charges_headroom(self) -> bool:
        """Whether llumlets charge tier headroom into their reports."""
        return False


PRIORITY_MODES: Registry[type[PriorityMode]] = Registry("priority", "scheduler.priority.mode")
PRIORITY_MODES.register("none")(PriorityMode)


@mypyc_attr(allow_interpreted_subclasses=True)
class _Prioritised(PriorityMode):
    @property
    def normal_tier(self) -> int:
        return self.tiers - 1


@mypyc_attr(allow_interpreted_subclasses=True)
class HeadroomMode(_Prioritised):
    local_order: ClassVar[str] = "tier"
    reads_tiers: ClassVar[bool] = True

    def dispatch_reservation(self, report: LoadReport, tier: int) -> float:
        return report.headroom_blocks

    def migration_reservation(self, report: LoadReport) -> float:
        return report.headroom_blocks

    def charges_headroom(self) -> bool:
        return True


PRIORITY_MODES.register("headroom")(HeadroomMode)


@mypyc_attr(allow_interpreted_subclasses=True)
class AdaptiveHeadroomMode(HeadroomMode):
    """``headroom`` whose per-tier H_p the engine's controller moves online from each
    tier's SLO attainment (``sim.cluster.adaptive_headroom``); reservations read the
    report's charged headroom as ``headroom`` does."""

    adapts: ClassVar[bool] = True
    reads_tiers: ClassVar[bool] = True
    reads_slo_targets: ClassVar[bool] = True


PRIORITY_MODES.register("adaptive-headroom")(AdaptiveHeadroomMode)


@mypyc_attr(allow_interpreted_subclasses=True)
class LoadTargetMode(_Prioritised):
    tier_dependent: ClassVar[bool] = True
    reads_tiers: ClassVar[bool] = True

    def __init__(self, config: SchedulerConfig, tiers: int) -> None:
        super().__init__(config, tiers)
        self.targets: Optional[Sequence[float]] = config.priority.load_targets

    def target_tokens(self, tier: int, capacity_tokens: int) -> float:
        """Tier ``tier``'s load target; the least critical tier has none (inf). Without
        explicit ``load_targets``: 1,600 tokens for tier 0 (the paper's), then geometric
        steps up to the instance's capacity for tiers 1..K−2."""
        lowest = self.tiers - 1
        if tier >= lowest:
            return math.inf
        if self.targets is not None:
            return float(self.targets[tier]) if tier < len(self.targets) else math.inf
        first = PAPER_LOAD_TARGET_TOKENS
        return first * (capacity_tokens / first) ** (tier / lowest)

    def reserved_blocks(self, report: LoadReport, tier: int) -> float:
        """``M − target / block_size`` (blocks an instance led by ``tier`` is charged)."""
        capacity = report.capacity_blocks
        target = self.target_tokens(tier, capacity * report.block_size)
        if math.isinf(target):
            return 0.0
        return capacity - target // report.block_size

    def dispatch_reservation(self, report: LoadReport, tier: int) -> float:
        leading = report.top_tier
        if leading == tier:
            return 0.0
        return self.reserved_blocks(report, min(leading, tier))

    def migration_reservation(self, report: LoadReport) -> float:
        if report.top_tier >= self.tiers - 1:
            return 0.0  # led by the least critical tier, which has no target (every pairing)
        return self.reserved_blocks(report, report.top_tier)


PRIORITY_MODES.register("load-target")(LoadTargetMode)
