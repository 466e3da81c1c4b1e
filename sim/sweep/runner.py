"""Run a grid: skip what the store already has, run the rest on a backend, write the indexes.

``<out>/`` gets ``runs/<key>/`` (one folder per run, see ``store``), ``index.parquet`` /
``index.csv`` (one row per cell and seed), ``aggregate.parquet`` / ``aggregate.csv`` (one
row per cell: means over seeds with bootstrap intervals) and ``sweep.json`` (the grid's
name, source, coordinate columns, seeds, the failed runs, and whether every run is done).

A run that fails (bad input met only while running, or stopped by the watchdog) is stored
as failed: listed in ``sweep.json``, a ``failed`` row in the index, left out of the
aggregate, counted in the summary line, and not rerun until ``retry_failed``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from sim import native
from sim.config import ConfigError
from sim.files import OutputError, atomic_write, remove_leftovers
from sim.progress import Progress
from sim.sweep.backends import RunError, Task
from sim.sweep.cell import check_cell
from sim.sweep.execution import Execution, open_results
from sim.sweep.grid import Grid, Run
from sim.sweep.index import FAILED, build_index, ok_rows, write_table
from sim.sweep.sharing import simulation_key
from sim.sweep.stats import aggregate
from sim.sweep.store import RunStore


@dataclass
class SweepOutcome:
    """What a sweep did: runs in the grid, reused from the store, computed now, failed."""

    grid: str
    out_dir: Path
    runs: int
    unique: int  # distinct configs (runs sharing a key run once)
    simulations: int = 0  # simulations run for the ``computed`` runs (sim.sweep.sharing)
    engine: str = field(default_factory=native.status)  # compiled when built and current
    reused: int = 0  # results taken from the store
    reused_from_other_code: int = 0  # of ``reused``: stored by a different simulator version
    computed: int = 0
    failed: list[dict] = field(default_factory=list)  # every stored failure (``failures``)
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
        failed = (
            f", {len(self.failed)} FAILED (sweep.json lists them; --retry-failed reruns them)"
            if self.failed
            else ""
        )
        return (
            f"{self.grid}: {state}{self.runs} runs ({self.unique} distinct): {self.reused} reused{other}, "
            f"{self.computed} computed{failed} in {self.wall_seconds:.1f} s ({self.run_seconds:.1f} s running, "
            f"{self.simulations} simulations; engine {self.engine}); wrote "
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


def pending(
    grid: Grid, store: RunStore, recompute_stale: bool = False, retry_failed: bool = False
) -> list[Task]:
    """One task per simulation that the runs the store has no result for (with every kept
    table) need, or has from other code when ``recompute_stale``; runs stored as failed
    only when ``retry_failed``. Runs differing only in request labels share one task
    (``sim.sweep.sharing``)."""
    wanted: dict[str, Run] = {}
    for run in grid.runs:
        if run.key in wanted or store.is_done(run.key, grid.tables, recompute_stale):
            continue
        if store.is_failed(run.key) and not retry_failed:
            if not (recompute_stale and store.made_by_other_code(run.key)):
                continue
        wanted[run.key] = run
    groups: dict[str, list[Run]] = {}
    for run in wanted.values():
        groups.setdefault(simulation_key(run.config), []).append(run)
    return [
        Task(first.key, first.config, grid.tables, tuple((run.key, run.config) for run in rest))
        for first, *rest in groups.values()
    ]


def write_indexes(grid: Grid, store: RunStore, out_dir: Path, interrupted: bool) -> list[str]:
    """index.*, aggregate.* and sweep.json from what the store holds now."""
    index = build_index(grid, store)
    results = ok_rows(index)
    files = write_table(index, out_dir, "index")
    files += write_table(aggregate(results), out_dir, "aggregate")
    meta = {
        "name": grid.name,
        "source": grid.source,
        "description": grid.description,
        "columns": grid.columns,
        "seeds": grid.seeds,
        "tables": list(grid.tables),
        "runs": len(grid.runs),
        "runs_done": int(len(results)),
        "runs_failed": int((index["status"] == FAILED).sum()),
        "failed": failures(grid, store),
        "complete": not interrupted and len(results) == len(grid.runs),
    }
    text = json.dumps(meta, indent=1)
    atomic_write(out_dir / "sweep.json", lambda tmp: tmp.write_text(text))
    return files + ["sweep.json"]


def run_sweep(
    grid: Grid,
    out_dir: Path,
    execution: Execution = Execution(),
    retry_failed: bool = False,
) -> SweepOutcome:
    """Run every run of ``grid`` not yet in ``out_dir``'s store (with ``execution.recompute_stale``,
    also those stored by other code; with ``retry_failed``, those stored as failed), then
    write the indexes. Reused runs made by other code are counted in the outcome, so the
    line printed says so.

    Ctrl-C stops the workers, keeps every run already stored, writes the indexes of those
    (``sweep.json`` says ``complete: false``) and re-raises KeyboardInterrupt. ``execution.progress``
    shows the runs as they finish on stderr (a bar on a terminal, else a line every 30 s or
    5%: ``sim.progress``). A write that
    fails (a full disk) raises OutputError the same way: every run stored before is whole.
    """
    started = time.perf_counter()
    check_grid(grid)
    out_dir, store = open_results(out_dir)
    remove_leftovers(out_dir)  # a half-written index of a killed sweep
    tasks = pending(grid, store, execution.recompute_stale, retry_failed)
    keys = {run.key for run in grid.runs}
    outcome = SweepOutcome(grid.name, out_dir, len(grid.runs), len(keys))
    outcome.simulations = len(tasks)
    reused = {key for key in keys - {key for task in tasks for key in task.keys} if store.is_done(key)}
    outcome.reused = len(reused)
    outcome.reused_from_other_code = sum(store.made_by_other_code(key) for key in reused)
    by_key: dict[str, Run] = {run.key: run for run in grid.runs}
    shown = Progress(grid.name, len(keys), len(keys) - sum(len(task.keys) for task in tasks), execution.progress)
    stopped: BaseException | None = None
    running = time.perf_counter()
    try:
        for key, result in execution.run(tasks):
            failed = isinstance(result, RunError)
            if failed:
                store.write_failure(key, by_key[key].config, result)
            else:
                store.write(key, by_key[key].config, result)
                outcome.computed += 1
            shown.update(failed)
    except BaseException as exc:
        stopped = exc
        outcome.interrupted = isinstance(exc, KeyboardInterrupt)
        raise
    finally:
        outcome.run_seconds = time.perf_counter() - running
        shown.close()
        try:
            outcome.files = write_indexes(grid, store, out_dir, stopped is not None)
        except OutputError:
            if stopped is None:
                raise  # else the first error is the one to report
        outcome.failed = failures(grid, store)
        outcome.wall_seconds = time.perf_counter() - started
    return outcome


def failures(grid: Grid, store: RunStore) -> list[dict]:
    """Each run of the grid stored as failed: its cell, seed, key, kind and reason."""
    found = []
    for run in grid.runs:
        if store.is_failed(run.key):
            failure = store.failure(run.key)
            found.append(
                {"cell": run.cell.label, "seed": run.seed, "config_hash": run.key, **failure._asdict()}
            )
    return found

