"""Global schedulers: they see instance-level load reports only."""

from __future__ import annotations

from sim.cluster.base import (
    DispatchInfo,
    GlobalScheduler,
    InfaasScheduler,
    RoundRobinScheduler,
)
from sim.config import ConfigError, SchedulerConfig

SCHEDULERS: dict[str, type[GlobalScheduler]] = {
    cls.name: cls for cls in (RoundRobinScheduler, InfaasScheduler)
}


def make_scheduler(config: SchedulerConfig) -> GlobalScheduler:
    """Build the configured global scheduler; an unknown name is a ConfigError."""
    cls = SCHEDULERS.get(config.name)
    if cls is None:
        known = ", ".join(sorted(SCHEDULERS))
        raise ConfigError(f"scheduler.name: unknown scheduler {config.name!r} (known: {known})")
    return cls(config)


__all__ = [
    "DispatchInfo",
    "GlobalScheduler",
    "InfaasScheduler",
    "RoundRobinScheduler",
    "SCHEDULERS",
    "make_scheduler",
]
