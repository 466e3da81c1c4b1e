"""Experiments over many runs: grids, a resumable results store, local and Ray backends,
statistics over seeds, cost and capacity search, and the plots the notebooks draw.

Every simulation goes through one adapter, ``sim.sweep.cell.run_cell``.
"""

from sim.sweep.grid import Cell, Grid, Run, expand, load_grid, run_key
from sim.sweep.runner import SweepOutcome, run_sweep
from sim.sweep.stats import aggregate, bootstrap_ci, paired

__all__ = [
    "Cell",
    "Grid",
    "Run",
    "SweepOutcome",
    "aggregate",
    "bootstrap_ci",
    "expand",
    "load_grid",
    "paired",
    "run_key",
    "run_sweep",
]
