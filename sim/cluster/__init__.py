"""Global scheduling policy: composable rules that see instance-level load reports only."""

from __future__ import annotations

from sim.cluster.dispatch import (
    DISPATCH_RULES,
    DispatchInfo,
    DispatchRule,
    FixedPlacement,
    FrontendFallback,
)
from sim.cluster.global_scheduler import PRESETS, GlobalScheduler
from sim.cluster.ordering import ARRIVAL_ORDERINGS
from sim.cluster.pairing import PAIRING_RULES, PairingRule
from sim.cluster.scaling import SCALING_RULES, ScalingDecision, ScalingRule

__all__ = [
    "ARRIVAL_ORDERINGS",
    "DISPATCH_RULES",
    "PAIRING_RULES",
    "PRESETS",
    "SCALING_RULES",
    "DispatchInfo",
    "DispatchRule",
    "FixedPlacement",
    "FrontendFallback",
    "GlobalScheduler",
    "PairingRule",
    "ScalingDecision",
    "ScalingRule",
]
