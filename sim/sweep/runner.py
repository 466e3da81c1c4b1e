"""Run a grid: skip what the store already has, run the rest on a backend, write the indexes.

``<out>/`` gets ``runs/<key>/`` (one folder per run, see ``store``), ``index.parquet`` /
``index.csv`` (one row per cell and seed), ``aggregate.parquet`` / ``aggregate.csv`` (one
row per cell: means over seeds with bootstrap intervals) and ``sweep.json`` (the grid's
name, source, coordinate columns, seeds, and whether every run is done).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from sim.config import ConfigError
from sim.files import atomic_write, remove_leftovers
from sim.sweep.backends import RunFailed, Task, execute
from sim.sweep.cell import check_cell
from sim.sweep.grid import Grid, Run
from sim.sweep.index import build_index, write_table
from sim.sweep.stats import aggregate
from sim.sweep.store import RunStore


@dataclass
class SweepOutcome:
    """What a sweep did: runs in the grid, reused from the store, computed now."""

    grid: str
    out_dir: Path
    runs: int
    unique: int  # distinct configs (runs sharing a key run once)
    reused: int
    reused_from_other_code: int = 0  # of ``reused``: stored by a different simulator version
    computed: int = 0
    wall_seconds: float = 0.0  # the whole sweep: checks, runs, indexes
    run_seconds: float = 0.0  # from the first task handed out to the last result stored
    interrupted: bool = False
    files: list[str] = field(default_factory=list)

    def line(self) -> str:
        state = "INTERRUPTED, " if self.interrupted else ""
        other = (
            f" ({self.reused_from_other_code} made by other code than this checkout's: "
            "--recompute-stale reruns them)"
            if self.reused_from_other_code
            else ""
        )
        return (
            f"{self.grid}: {state}{self.runs} runs ({self.unique} distinct): {self.reused} reused{other}, "
            f"{self.computed} computed in {self.wall_seconds:.1f} s ({self.run_seconds:.1f} s running); wrote "
            f"{', '.join(self.files)} to {self.out_dir}/"
        )


def check_grid(grid: Grid) -> None:
    """The engine's first checks for every cell, before anything runs (names the cell)."""
    seen = set()
    for run in grid.runs:
        if run.cell.label in seen:
            continue
        seen.add(run.cell.label)
        try:
            check_cell(run.config)
        except ConfigError as exc:
            raise ConfigError(f"{grid.source}: cell [{run.cell.label}]: {exc}") from None


def pending(grid: Grid, store: RunStore, recompute_stale: bool = False) -> list[Task]:
    """One task per distinct run key the store does not have (with every kept table), or
    has from other code when ``recompute_stale``."""
    tasks: dict[str, Task] = {}
    for run in grid.runs:
        if run.key not in tasks and not store.is_done(run.key, grid.tables, recompute_stale):
            tasks[run.key] = Task(run.key, run.config, grid.tables)
    return list(tasks.values())


def write_indexes(grid: Grid, store: RunStore, out_dir: Path, complete: bool) -> list[str]:
    """index.*, aggregate.* and sweep.json from what the store holds now."""
    index = build_index(grid, store)
    files = write_table(index, out_dir, "index")
    files += write_table(aggregate(index), out_dir, "aggregate")
    meta = {
        "name": grid.name,
        "source": grid.source,
        "description": grid.description,
        "columns": grid.columns,
        "seeds": grid.seeds,
        "tables": list(grid.tables),
        "runs": len(grid.runs),
        "runs_done": int(len(index)),
        "complete": complete,
    }
    atomic_write(out_dir / "sweep.json", lambda tmp: tmp.write_text(json.dumps(meta, indent=1)))
    return files + ["sweep.json"]


def run_sweep(
    grid: Grid,
    out_dir: Path,
    jobs: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: bool = False,
    recompute_stale: bool = False,
) -> SweepOutcome:
    """Run every run of ``grid`` not yet in ``out_dir``'s store (with ``recompute_stale``,
    also those stored by other code), then write the indexes. Reused runs made by other code
    are counted in the outcome, so the line printed says so.

    Ctrl-C stops the workers, keeps every run already stored, writes the indexes of those
    (``sweep.json`` says ``complete: false``) and re-raises KeyboardInterrupt.
    """
    started = time.perf_counter()
    check_grid(grid)
    out_dir = Path(out_dir)
    store = RunStore(out_dir / "runs")
    store.clean()
    remove_leftovers(out_dir)  # a half-written index of a killed sweep
    tasks = pending(grid, store, recompute_stale)
    keys = {run.key for run in grid.runs}
    reused = keys - {task.key for task in tasks}
    outcome = SweepOutcome(grid.name, out_dir, len(grid.runs), len(keys), len(reused))
    outcome.reused_from_other_code = sum(store.made_by_other_code(key) for key in reused)
    by_key: dict[str, Run] = {run.key: run for run in grid.runs}
    bar = _progress_bar(grid.name, len(keys), outcome.reused, progress)
    complete = False
    running = time.perf_counter()
    try:
        for key, summary in execute(tasks, backend, jobs, address):
            store.write(key, by_key[key].config, summary)
            outcome.computed += 1
            if bar is not None:
                bar.update()
        complete = True
    except RunFailed as exc:
        label = by_key[exc.task.key].cell.label
        raise ConfigError(
            f"{grid.source}: cell [{label}] seed {exc.task.config.seed}: {exc.error}"
        ) from None
    except KeyboardInterrupt:
        outcome.interrupted = True
        raise
    finally:
        outcome.run_seconds = time.perf_counter() - running
        if bar is not None:
            bar.close()
        outcome.files = write_indexes(grid, store, out_dir, complete)
        outcome.wall_seconds = time.perf_counter() - started
    return outcome


def _progress_bar(name: str, total: int, done: int, show: bool):
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=done, unit="run", desc=name, file=sys.stderr, smoothing=0.1)
