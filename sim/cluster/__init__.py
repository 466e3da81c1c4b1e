"""Global scheduling policy: composable rules that see instance-level load reports only."""

from __future__ import annotations

from sim.cluster.dispatch import (
    DISPATCH_RULES,
    DispatchInfo,
    DispatchRule,
    FixedPlacement,
    FrontendFallback,
)
from sim.cluster.global_scheduler import PRESETS, GlobalScheduler, resolve
from sim.cluster.ordering import ARRIVAL_ORDERINGS
from sim.cluster.pairing import PAIRING_RULES, PairingRule
from sim.cluster.priority import PRIORITY_MODES, PriorityMode
from sim.cluster.scaling import SCALE_OUT_POOLS, SCALING_RULES, ScaleOutPool, ScalingDecision, ScalingRule

__all__ = [
    "ARRIVAL_ORDERINGS",
    "DISPATCH_RULES",
    "PAIRING_RULES",
    "PRIORITY_MODES",
    "PRESETS",
    "SCALE_OUT_POOLS",
    "SCALING_RULES",
    "ScaleOutPool",
    "DispatchInfo",
    "DispatchRule",
    "FixedPlacement",
    "FrontendFallback",
    "GlobalScheduler",
    "PairingRule",
    "PriorityMode",
    "ScalingDecision",
    "ScalingRule",
    "resolve",
]
