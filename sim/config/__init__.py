"""Typed configuration: YAML -> dataclasses, with errors that name the bad key or file."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from sim.config.loader import (
    ConfigError,
    apply_overrides,
    config_hash,
    from_dict,
    read_yaml,
    to_dict,
)
from sim.config.schema import (
    AutoscaleConfig,
    ClusterConfig,
    PoolConfig,
    CostConfig,
    FaultConfig,
    HeadroomConfig,
    MigrationConfig,
    OutputConfig,
    SchedulerConfig,
    SimulationConfig,
    TransferConfig,
)
from sim.config.slo_schema import SloConfig, SloContractConfig, SloLadderConfig, SloTargetConfig
from sim.config.workload_schema import (
    ArrivalConfig,
    PriorityConfig,
    SessionsConfig,
    SyntheticLengthsConfig,
    SystemPromptConfig,
    WorkloadConfig,
)


def load_config(
    path: str | Path | None = None, overrides: Iterable[str] = (), base: dict | None = None
) -> SimulationConfig:
    """Load a run config from YAML (or ``base``) and apply ``key=value`` overrides."""
    data = read_yaml(path) if path is not None else dict(base or {})
    if path is not None and not data:  # a file saved empty by mistake would run the defaults
        raise ConfigError(f"{path}: an empty config; write the keys it sets (name: run for every default)")
    data = apply_overrides(data, list(overrides))
    try:
        return from_dict(SimulationConfig, data)
    except ConfigError as exc:
        if path is not None:
            raise ConfigError(f"{path}: {exc}") from None
        raise


__all__ = [
    "ArrivalConfig",
    "AutoscaleConfig",
    "ClusterConfig",
    "PoolConfig",
    "CostConfig",
    "ConfigError",
    "FaultConfig",
    "HeadroomConfig",
    "MigrationConfig",
    "OutputConfig",
    "PriorityConfig",
    "SchedulerConfig",
    "SessionsConfig",
    "SimulationConfig",
    "SloConfig",
    "SloContractConfig",
    "SloLadderConfig",
    "SloTargetConfig",
    "SyntheticLengthsConfig",
    "SystemPromptConfig",
    "TransferConfig",
    "WorkloadConfig",
    "config_hash",
    "from_dict",
    "load_config",
    "to_dict",
]
