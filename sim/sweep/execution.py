"""How a sweep driver runs what its store lacks, and the results folder it opens first.

Every driver (``run_sweep``, ``search_capacity``, ``search_fleet``, ``run_capacity_grid``)
takes the same options — where runs execute (``--jobs``, ``--backend``, ``--address``),
whether runs stored by other code are made again (``--recompute-stale``) and whether
progress is shown — and starts the same way: its folder made ready and its run store
cleaned of a killed writer's leftovers. Both live here once, so a new option or a new
driver touches one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from sim.sweep.backends import Outcome, Task, execute
from sim.sweep.folder import prepare_results_folder
from sim.sweep.store import RunStore


@dataclass(frozen=True)
class Execution:
    """A driver's options for running what its store lacks."""

    jobs: int | None = None  # parallel runs (None: every core, or Ray's choice)
    backend: str = "local"  # sim.sweep.backends.BACKENDS
    address: str | None = None  # a Ray cluster (the ray backend only)
    recompute_stale: bool = False  # rerun stored runs made by other code than this checkout's
    progress: bool = False  # the runs on stderr as they finish (sim.progress)

    def run(self, tasks: Sequence[Task]) -> Iterator[tuple[str, Outcome]]:
        """``tasks`` on this backend: (key, summary or RunError) as each finishes."""
        return execute(tasks, self.backend, self.jobs, self.address)


def open_results(out_dir: Path) -> tuple[Path, RunStore]:
    """``out_dir`` resolved, created and proven writable, and its run store (``runs/``) with
    the leftovers of a killed writer removed."""
    out_dir = prepare_results_folder(out_dir)
    store = RunStore(out_dir / "runs")
    store.clean()
    return out_dir, store
