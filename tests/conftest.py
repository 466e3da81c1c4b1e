"""Session fixtures: the smoke sweeps several tests read, each run once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sweep_support import GRIDS


@pytest.fixture(scope="session")
def smoke_results(tmp_path_factory):
    """A function: grid name -> results folder of that smoke grid, swept once per session
    (all smoke grids under one results root, as the notebooks expect). A smoke grid with a
    failed run fails the test that asked for it: results with holes would pass the notebooks
    and the findings on fewer seeds than the grid promises. ``sweep.outcomes[name]`` is the
    sweep's outcome (for a capacity grid: its outcome and index)."""
    from sim.config.loader import read_yaml
    from sim.sweep import load_grid, run_sweep
    from sim.sweep.capacity_grid import load_capacity_grid, run_capacity_grid
    from sim.sweep.execution import Execution

    root = tmp_path_factory.mktemp("results")
    done: dict[str, Path] = {}

    def sweep(name: str) -> Path:
        if name not in done:
            path, out = GRIDS / f"{name}.yaml", root / name
            if "capacity" in read_yaml(path):
                sweep.outcomes[name] = outcome, _ = run_capacity_grid(load_capacity_grid(path), out, Execution(jobs=1))
                failed = [f"{outcome.failed} searches (searches.csv's error column)"] if outcome.failed else []
            else:
                sweep.outcomes[name] = outcome = run_sweep(load_grid(path), out)
                failed = [f"[{f['cell']}] seed {f['seed']}: {f['reason']}" for f in outcome.failed]
            assert not failed, f"{name}: {len(failed)} failed, first {failed[0]}"
            done[name] = out
        return done[name]

    sweep.root = root
    sweep.outcomes = {}
    return sweep
