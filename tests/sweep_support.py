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


def shipped_results(dest: Path) -> list[str]:
    """Copy the files of ``results/`` a clone of this checkout would hold (tracked, or new
    and not ignored) into ``dest``, as a fresh clone's ``results/``; returns the studies among
    them (folders with a ``sweep.json``)."""
    import shutil
    import subprocess

    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "results/"],
        cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout.split()
    for name in listed:
        if (REPO / name).is_file():
            target = dest / Path(name).relative_to("results")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target)
    return sorted(p.parent.name for p in dest.glob("*/sweep.json"))


def execute_notebook(name: str, results: Path, smoke: bool) -> Any:
    """Run ``notebooks/<name>.ipynb`` against the sweeps under ``results`` (``_smoke`` ones
    if ``smoke``) in a fresh kernel; returns the executed notebook."""
    import os

    import nbformat
    from nbclient import NotebookClient

    from sim.sweep.plots import RESULTS_ENV, SMOKE_ENV

    saved = {key: os.environ.get(key) for key in (RESULTS_ENV, SMOKE_ENV)}
    os.environ[RESULTS_ENV] = str(results)
    os.environ.pop(SMOKE_ENV, None)
    if smoke:
        os.environ[SMOKE_ENV] = "1"
    try:
        notebook = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
        client = NotebookClient(
            notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}
        )
        client.execute()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return notebook


def images_and_errors(notebook: Any) -> tuple[int, list]:
    """How many figures an executed notebook drew, and what it wrote to stderr."""
    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    images = sum("image/png" in output.get("data", {}) for output in outputs)
    return images, [output for output in outputs if output.get("name") == "stderr"]
