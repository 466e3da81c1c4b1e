"""Global schedulers: they see instance-level load reports only."""

from __future__ import annotations

from sim.cluster.base import (
    DispatchInfo,
    GlobalScheduler,
    InfaasScheduler,
    RoundRobinScheduler,
)
from sim.cluster.llumnix import LlumnixBaseScheduler, LlumnixScheduler
from sim.config import ConfigError, SchedulerConfig

SCHEDULERS: dict[str, type[GlobalScheduler]] = {
    cls.name: cls
    for cls in (RoundRobinScheduler, InfaasScheduler, LlumnixBaseScheduler, LlumnixScheduler)
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
    "LlumnixBaseScheduler",
    "LlumnixScheduler",
    "RoundRobinScheduler",
    "SCHEDULERS",
    "make_scheduler",
]
