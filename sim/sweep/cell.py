"""The one adapter between the sweep machinery and the simulator.

Every simulation a sweep or a capacity search runs goes through ``run_cell`` (or
``run_shared``, for runs that differ only in request labels): when the engine moves, this is
the one place to re-point. ``check_cell`` makes the cheap checks the
engine makes first (scheduler, model and device names, trace files), so a bad grid stops
before anything runs. Workers are long-lived processes: the replica model of each hardware
layout is loaded once per process and reused, with its memoised iteration times.
"""

from __future__ import annotations

from typing import Any, Sequence

from sim.config import ClusterConfig, ConfigError, SimulationConfig

_MODELS: dict[str, Any] = {}  # hardware settings -> loaded replica model, per process


def replica_model(pool: ClusterConfig, key: str = "cluster") -> Any:
    """The replica model of a pool, loaded once per process (the warm model); a driver that
    calls it before forking its workers hands them the model ready."""
    from sim.engine.setup import load_model, replica_model_settings

    settings = repr(sorted(replica_model_settings(pool).items()))
    if settings not in _MODELS:
        _MODELS[settings] = load_model(pool, key)
    return _MODELS[settings]


def run_cell(config: SimulationConfig, tables: Sequence[str] = ()) -> dict[str, Any]:
    """Simulate ``config`` and return its summary dict (``sim.metrics.summarize``); no files.

    ``tables`` names per-run tables to return as well, under ``summary["tables"]``
    (DataFrames: requests, instances, cluster, migrations). An interrupted run raises
    KeyboardInterrupt instead of returning a partial summary, so one is never stored.
    """
    return _summary(_simulate(config), tables)


def run_shared(configs: Sequence[SimulationConfig], tables: Sequence[str] = ()) -> list[dict[str, Any]]:
    """``run_cell`` of each of ``configs`` — runs sharing one simulation key
    (``sim.sweep.sharing``) — from one simulation of the first, relabelled for the others."""
    from sim.sweep.sharing import relabel

    result = _simulate(configs[0])
    summaries = [_summary(result, tables)]  # before any relabelling changes its requests
    summaries += [_summary(relabel(result, config), tables) for config in configs[1:]]
    return summaries


def _simulate(config: SimulationConfig) -> Any:
    from sim.engine import Simulation

    result = Simulation(config, load_pool_model=replica_model).run()
    if result.interrupted:
        raise KeyboardInterrupt
    return result


def _summary(result: Any, tables: Sequence[str]) -> dict[str, Any]:
    """The summary of a finished run, with the tables asked for."""
    from sim.metrics import summarize
    from sim.metrics import tables as builders

    frames = {
        "requests": builders.request_table(result),
        "cluster": builders.cluster_table(result),
        "migrations": builders.migration_table(result),
    }
    if "instances" in tables:
        frames["instances"] = builders.instance_table(result)
    summary = summarize(result, frames["requests"], frames["cluster"], frames["migrations"])
    if tables:
        summary["tables"] = {name: frames[name] for name in tables}
    return summary


def warm(config: SimulationConfig) -> None:
    """Import what ``run_cell`` needs and load this config's replica model, so processes
    forked afterwards start ready (a pool's workers then never import or load again)."""
    import sim.engine.setup  # noqa: F401  (the packages export on first use: import the modules)
    import sim.engine.simulation  # noqa: F401
    import sim.metrics.summary  # noqa: F401
    import sim.metrics.tables  # noqa: F401
    import sim.sweep.sharing  # noqa: F401

    for pool in config.instance_pools():
        replica_model(pool)


def check_cell(config: SimulationConfig) -> None:
    """Raise the ConfigError the engine would raise first: unknown rules, hardware or trace."""
    from sim.engine.setup import check_names, check_profiled_limits, pool_key
    from sim.hardware.catalog import UnknownHardwareError, find_layout
    from sim.workload.build import resolve_trace_path
    from sim.workload.traces import TraceError

    check_names(config)
    check_profiled_limits(config)
    for index, pool in enumerate(config.instance_pools()):
        try:
            find_layout(pool.model, pool.device, pool.tensor_parallel)
        except UnknownHardwareError as exc:
            raise ConfigError(f"{pool_key(config, index)}: {exc}") from None
    if config.cost.sku_prices:
        from sim.hardware.prices import gpu_hour_prices

        gpu_hour_prices(config)
    if config.workload.source != "synthetic":
        try:
            resolve_trace_path(str(config.workload.trace))
        except TraceError as exc:
            raise ConfigError(f"workload.trace: {exc}") from None
