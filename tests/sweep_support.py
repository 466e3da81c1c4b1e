"""Shared by the sweep tests: where the grids are, and a fake simulator for tests about the
machinery rather than the simulation (it answers instantly with a known summary)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

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


def execute_notebook(name: str, results: Path, studies: Mapping[str, Path] | None = None) -> Any:
    """Run ``notebooks/<name>.ipynb`` in a fresh kernel, its study names looked up under
    ``results`` ($LLUMSIM_RESULTS), and each of ``studies`` (a variable of its parameters
    cell -> a study folder) set in a cell after that one, as a user points it at their own
    sweep (papermill's injected parameters); returns the executed notebook."""
    import os

    import nbformat
    from nbclient import NotebookClient

    from sim.presentation.plots import RESULTS_ENV

    notebook = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
    if studies:
        at, cell = next((i, c) for i, c in enumerate(notebook.cells) if "parameters" in c.metadata.get("tags", ()))
        unknown = [key for key in studies if not re.search(rf"^{key} = ", cell.source, re.MULTILINE)]
        assert not unknown, f"{name}.ipynb's parameters cell sets none of {unknown}"
        assignments = "\n".join(f"{key} = {str(folder)!r}" for key, folder in studies.items())
        notebook.cells.insert(at + 1, nbformat.v4.new_code_cell(assignments, metadata={"tags": ["injected-parameters"]}))
    saved = os.environ.get(RESULTS_ENV)
    os.environ[RESULTS_ENV] = str(results)
    try:
        client = NotebookClient(
            notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}
        )
        client.execute()
    finally:
        if saved is None:
            os.environ.pop(RESULTS_ENV, None)
        else:
            os.environ[RESULTS_ENV] = saved
    return notebook


def stdout(notebook: Any) -> str:
    """What an executed notebook printed."""
    return "".join(
        output.get("text", "") for cell in notebook.cells for output in cell.get("outputs", [])
        if output.get("name") == "stdout"
    )


def images_and_errors(notebook: Any) -> tuple[int, list]:
    """How many figures an executed notebook drew, and what it wrote to stderr."""
    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    images = sum("image/png" in output.get("data", {}) for output in outputs)
    return images, [output for output in outputs if output.get("name") == "stderr"]
