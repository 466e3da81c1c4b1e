"""Session fixtures: the smoke sweeps several tests read, each run once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sweep_support import GRIDS


@pytest.fixture(scope="session")
def smoke_results(tmp_path_factory):
    """A function: grid name -> results folder of that smoke grid, swept once per session
    (all smoke grids under one results root, as the notebooks expect)."""
    from sim.sweep import load_grid, run_sweep

    root = tmp_path_factory.mktemp("results")
    done: dict[str, Path] = {}

    def sweep(name: str) -> Path:
        if name not in done:
            run_sweep(load_grid(GRIDS / f"{name}.yaml"), root / name)
            done[name] = root / name
        return done[name]

    sweep.root = root
    return sweep
