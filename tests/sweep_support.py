"""Shared by the sweep tests: where the grids are, and a fake simulator for tests about the
machinery rather than the simulation (it answers instantly with a known summary)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from sim.config import SimulationConfig

REPO = Path(__file__).resolve().parents[1]
GRIDS = REPO / "experiments" / "grids"


def fake_summary(config: SimulationConfig, prefill_p99: float, tiers: int = 1) -> dict[str, Any]:
    """The parts of a run summary the sweep, index and capacity code read."""
    latency = {
        metric: {
            "mean": prefill_p99 / 2,
            "p50": prefill_p99 / 3,
            "p90": prefill_p99 * 0.8,
            "p99": prefill_p99,
            "count": 10,
        }
        for metric in (
            "prefill_latency",
            "decode_latency_per_token",
            "e2e_latency",
            "queueing_delay",
            "preemption_loss",
        )
    }
    return {
        "name": config.name,
        "config_hash": "fake",
        "scheduler": config.scheduler.name,
        "requests": {"total": 10, "finished": 10},
        "latency": latency,
        "latency_by_tier": {str(t): latency for t in range(tiers)},
        "cost": {
            "average_instances": float(config.cluster.instances),
            "gpus_per_instance": 1,
            "cost_per_request": 0.01,
            "cost_per_latency": math.nan,
        },
        "simulation": {"wall_seconds": 0.1, "simulated_seconds": 10.0},
    }


def fake_run_cell(prefill_p99: Callable[[SimulationConfig], float], calls: list | None = None):
    """A stand-in for sim.sweep.cell.run_cell (patch it before the pool forks)."""

    def run_cell(config: SimulationConfig, tables: Sequence[str] = ()) -> dict[str, Any]:
        if calls is not None:
            calls.append(config)
        summary = fake_summary(config, prefill_p99(config), config.workload.priority.tiers)
        if tables:
            summary["tables"] = {name: pd.DataFrame({"x": [1, 2]}) for name in tables}
        return summary

    return run_cell
