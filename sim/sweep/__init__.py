"""Experiments over many runs: grids, a resumable results store, local and Ray backends,
statistics over seeds, cost and capacity search, and the plots the notebooks draw.

Every simulation goes through one adapter, ``sim.sweep.cell.run_cell``.
"""

from sim.lazy import lazy_exports

_EXPORTS = {
    "Cell": "sim.sweep.grid",
    "Grid": "sim.sweep.grid",
    "Run": "sim.sweep.grid",
    "SweepOutcome": "sim.sweep.runner",
    "aggregate": "sim.sweep.stats",
    "bootstrap_ci": "sim.sweep.stats",
    "expand": "sim.sweep.grid",
    "load_grid": "sim.sweep.grid",
    "paired": "sim.sweep.stats",
    "run_key": "sim.sweep.grid",
    "run_sweep": "sim.sweep.runner",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
