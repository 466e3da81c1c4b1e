"""Experiments over many runs: grids, a resumable results store, local and Ray backends,
statistics over seeds, cost and capacity search.

Every simulation goes through one adapter, ``sim.sweep.cell.run_cell``. This machinery
imports no study (``sim.studies``) and no presentation (``sim.presentation``); they import
it (INV-7 layers).
"""

from sim.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "execution": "Execution",
    "grid": "Cell Grid Run expand load_grid run_key",
    "runner": "SweepOutcome run_sweep",
    "stats": "aggregate bootstrap_ci mean_and_t_interval paired ratio_interval row_mean_intervals t_interval",
})
