"""Capacity over a grid: one capacity search (``sim.sweep.capacity``) per cell and seed.

A capacity grid is a sweep grid (``sim.sweep.grid``) with a ``capacity`` section::

    capacity:
      slo: ["tier*.attainment>=0.95"]   # bounds every search must hold (--slo syntax)
      tolerance: 0.05                   # as --tolerance (default 0.02)
      low: 0.5                          # optional, as --low / --high (req/s)
      baseline: {scheduler: infaas++}   # optional: pair each cell with this one

or, instead of ``slo``, ``contracts``: named sets of bounds, each searched on every cell and
seed (``contracts: {tail: ["class*.lateness.p99<=1"], mean: ["class*.lateness.mean<=1"]}``).
Their runs are the same runs — a contract only judges a run's summary — so the searches of
every contract share the rates they have in common; the tables gain a ``contract`` column.

Each cell at each seed is its own search (one run per rate), so seeds are replicates of the
capacity itself: the index gives their mean with a Student-t interval, and each cell's
ratio to its baseline cell (the same coordinates but the baseline's) is taken seed by seed
— the same seed serves the same requests, so the ratio cancels what both share.

The searches advance in rounds: each unfinished search asks for one rate, the runs the
store lacks run together (runs that are one simulation run once, ``sim.sweep.sharing``:
INFaaS++ ignores tiers, so its searches over K and tier mixes share most of theirs), and
each search is told whether its rate met its bounds. A cell's first seed searches from the
grid's rate (halving or doubling, then bisecting); its other seeds start from the bracket
the seeds before them found (``rate_search``'s ``near``), since a cell's seeds differ by a few
percent: that skips the light-load rates on the way down, which cost the most (at light load
an instance steps once per output token). Every run is stored as it finishes, so
an interrupted grid resumes where it stopped; the tables are a pure function of the grid
and the store. A failed run ends its search (answer ``failed``), not the grid.

Two keys spend simulations where they decide something:

- ``floor: 0.0625`` (req/s per instance): before a cell is searched at a seed, its baseline
  cell (itself without a baseline) runs at this light load, where nothing queues; a set of
  bounds that fails there fails on prefill and decode physics alone, so no scheduler can
  meet it at any rate. Its searches at that seed answer ``floor`` without a run, and
  ``floor.parquet``/``.csv`` keeps every check (each bound's value at the floor).
- ``sequential: true`` (needs a baseline and ``seeds:`` at least the last look): the
  ratios to the baseline start with ``sim.sweep.stats.SEED_LOOKS[0]`` seeds, and a cell's
  next look's seeds (with its baseline cell's) are searched only while its ratio is
  unsettled (``sim.sweep.stats.unsettled``); its interval is the sequential one
  (``sim.sweep.stats.sequential_ratio``), which covers whatever the rule did.

``<out>/`` gets ``runs/`` (the store), ``searches.parquet``/``.csv`` (one row per cell and
seed), ``index.parquet``/``.csv`` (one row per cell) and ``capacity_grid.json``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from itertools import product
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from sim import native
from sim.config import ConfigError
from sim.config.loader import read_yaml
from sim.files import atomic_write
from sim.progress import Progress
from sim.sweep.backends import RunError, Task
from sim.sweep.capacity import (
    Point,
    RateSearch,
    Slo,
    at_rate,
    check_search,
    expand_scopes,
    judge,
    parse_slo,
    rate_search,
)
from sim.sweep.execution import Execution, open_results
from sim.sweep.grid import Cell, Grid, Run, expand, run_key
from sim.sweep.index import write_table
from sim.sweep.runner import check_grid
from sim.sweep.sharing import simulation_key
from sim.sweep.stats import LEVEL, SEED_LOOKS, mean_and_t_interval, ratio_interval, sequential_ratio, unsettled
from sim.sweep.store import RunStore

SECTION = "capacity"
SECTION_KEYS = ("slo", "contracts", "tolerance", "low", "high", "baseline", "floor", "sequential")
CONTRACT = "contract"  # the tables' column naming a search's contract (with ``contracts``)
DEFAULT_TOLERANCE = 0.02  # as ``llumsim capacity``


@dataclass(frozen=True)
class CapacityGrid:
    """A grid and the capacity question asked of each of its cells."""

    grid: Grid
    slos: list[Slo]  # as written (``tier*.`` expanded per cell); the first contract's with ``contracts``
    tolerance: float
    low: float | None
    high: float | None
    baseline: dict[str, Any] = field(default_factory=dict)  # column -> the baseline's value
    contracts: dict[str, list[Slo]] = field(default_factory=dict)  # name -> bounds; {} with ``slo``
    floor: float | None = None  # req/s per instance of the no-load check (None: no check)
    sequential: bool = False  # seeds by looks while the ratio to the baseline is unsettled
    contract_info: dict[str, "ContractInfo"] = field(default_factory=dict)  # name -> what it stands for

    def bounds(self) -> dict[str | None, list[Slo]]:
        """Each set of bounds a cell is searched under: the contracts by name, or ``slo`` alone."""
        return dict(self.contracts) if self.contracts else {None: self.slos}

    @property
    def columns(self) -> list[str]:
        """The columns naming a search's cell in the tables (``contract`` last, with contracts)."""
        return [*self.grid.columns, CONTRACT] if self.contracts else list(self.grid.columns)


def load_capacity_grid(path: str | Path, overrides: Iterable[str] = ()) -> CapacityGrid:
    """Read a capacity grid and check everything its searches need before any runs (a
    ConfigError naming the file, the cell and the key)."""
    path = Path(path)
    spec = dict(read_yaml(path))
    source = str(path)
    section = spec.pop(SECTION, None)
    if not isinstance(section, Mapping):
        raise ConfigError(
            f"{source}: {SECTION}: a capacity grid needs a {SECTION} section (a mapping with "
            f"{', '.join(SECTION_KEYS)}), got {section!r}"
        )
    for key in section:
        if key not in SECTION_KEYS:
            raise ConfigError(f"{source}: {SECTION}.{key}: unknown key (known: {', '.join(SECTION_KEYS)})")
    contracts, contract_info = _contracts(section, source, path.parent)
    slos = next(iter(contracts.values())) if contracts else _slos(section.get("slo"), source)
    tolerance = _number(section, "tolerance", source, DEFAULT_TOLERANCE)
    low, high = _number(section, "low", source), _number(section, "high", source)
    baseline = section.get("baseline") or {}
    if not isinstance(baseline, Mapping):
        raise ConfigError(f"{source}: {SECTION}.baseline: expected a mapping (column: value), got {baseline!r}")
    floor = _number(section, "floor", source)
    if floor is not None and floor <= 0:
        raise ConfigError(f"{source}: {SECTION}.floor: a rate per instance > 0 (req/s), got {floor:g}")
    sequential = section.get("sequential", False)
    if not isinstance(sequential, bool):
        raise ConfigError(f"{source}: {SECTION}.sequential: expected true or false, got {sequential!r}")
    grid = expand(spec, source, path.parent, overrides)
    if sequential and not baseline:
        raise ConfigError(f"{source}: {SECTION}.sequential: needs a baseline (the ratios it settles)")
    if sequential and len(grid.seeds) < SEED_LOOKS[-1]:
        raise ConfigError(
            f"{source}: seeds: {SECTION}.sequential looks at {', '.join(map(str, SEED_LOOKS))} seeds, "
            f"so the grid needs at least {SEED_LOOKS[-1]} (got {len(grid.seeds)})"
        )
    if grid.tables:
        raise ConfigError(f"{source}: tables: a capacity grid keeps no per-run tables")
    for column, value in baseline.items():
        if column not in grid.columns:
            raise ConfigError(
                f"{source}: {SECTION}.baseline.{column}: not a column of this grid "
                f"(columns: {', '.join(grid.columns)})"
            )
        if not any(cell.coords.get(column) == value for cell in grid.cells):
            raise ConfigError(f"{source}: {SECTION}.baseline.{column}: no cell has {value!r}")
    check_grid(grid)
    checked = set()
    for run in grid.runs:
        if run.cell.label in checked:
            continue
        checked.add(run.cell.label)
        for name, bounds in (contracts or {None: slos}).items():
            try:
                config = run.config
                check_search(config, expand_scopes(bounds, config), 1, low, high, tolerance)
            except ConfigError as exc:
                where = f"cell [{run.cell.label}]" + (f", {SECTION}.contracts.{name}" if name else "")
                raise ConfigError(f"{source}: {where}: {_in_section(str(exc))}") from None
    return CapacityGrid(grid, slos, tolerance, low, high, dict(baseline), contracts, floor, sequential, contract_info)


CONTRACT_KEYS = ("bounds", "business", "family", "tightness")  # a described contract's keys


@dataclass(frozen=True)
class ContractInfo:
    """What a named contract stands for: its business (one line), family and tightness."""

    business: str = ""
    family: str = ""
    tightness: float | None = None


def _contracts(section: Mapping, source: str, folder: Path) -> tuple[dict[str, list[Slo]], dict[str, ContractInfo]]:
    """``contracts``: name -> bounds ({} when absent); exactly one of it and ``slo``. A
    contract is a list of bounds or a mapping (``CONTRACT_KEYS``); ``contracts`` may instead
    be ``{from: FILE, only: [names]}``: the contracts of a YAML file (relative to the grid)."""
    spec = section.get("contracts")
    if spec is None:
        return {}, {}
    where = f"{SECTION}.contracts"
    if "slo" in section:
        raise ConfigError(f"{source}: {SECTION}: give slo or contracts, not both")
    if isinstance(spec, Mapping) and "from" in spec:
        unknown = set(spec) - {"from", "only"}
        if unknown:
            raise ConfigError(f"{source}: {where}.{sorted(unknown)[0]}: unknown key (known: from, only)")
        path = folder / str(spec["from"])
        file_spec = read_yaml(path).get("contracts")
        if not isinstance(file_spec, Mapping) or not file_spec:
            raise ConfigError(f"{path}: contracts: expected a mapping of names to contracts")
        only = spec.get("only", list(file_spec))
        missing = [name for name in only if name not in file_spec]
        if missing:
            raise ConfigError(f"{source}: {where}.only: {missing[0]!r} is not a contract of {path}")
        spec, source, where = {name: file_spec[name] for name in only}, str(path), "contracts"
    if not isinstance(spec, Mapping) or not spec:
        raise ConfigError(
            f"{source}: {where}: expected a mapping of names to bounds, e.g. "
            f"{{tail: ['class*.lateness.p99<=1']}}, got {spec!r}"
        )
    contracts, info = {}, {}
    for name, contract in spec.items():
        name = str(name)
        if isinstance(contract, Mapping):
            unknown = set(contract) - set(CONTRACT_KEYS)
            if unknown:
                raise ConfigError(
                    f"{source}: {where}.{name}.{sorted(unknown)[0]}: unknown key (known: {', '.join(CONTRACT_KEYS)})"
                )
            if not isinstance(contract.get("business"), str) or not contract["business"].strip():
                raise ConfigError(f"{source}: {where}.{name}.business: one line saying what business it stands for")
            tightness = contract.get("tightness")
            if tightness is not None and (isinstance(tightness, bool) or not isinstance(tightness, (int, float))):
                raise ConfigError(f"{source}: {where}.{name}.tightness: expected a number, got {tightness!r}")
            info[name] = ContractInfo(contract["business"].strip(), str(contract.get("family", "")), tightness)
            contract = contract.get("bounds")
        try:
            contracts[name] = _slos(contract, source)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace(f"{SECTION}.slo", f"{where}.{name}", 1)) from None
    return contracts, info


def _in_section(message: str) -> str:
    """A search check's message, named by this section's key instead of the flag."""
    for flag in ("--slo", "--low", "--high", "--tolerance"):
        if message.startswith(flag):
            return f"{SECTION}.{flag[2:]}{message[len(flag):]}"
    return message


def _slos(spec: Any, source: str) -> list[Slo]:
    if isinstance(spec, str):
        spec = [spec]
    if not isinstance(spec, list) or not spec or not all(isinstance(s, str) for s in spec):
        raise ConfigError(
            f"{source}: {SECTION}.slo: expected a list of bounds, e.g. ['tier*.attainment>=0.95'], got {spec!r}"
        )
    try:
        return [parse_slo(text) for text in spec]
    except ConfigError as exc:
        raise ConfigError(f"{source}: {_in_section(str(exc))}") from None


def _number(section: Mapping, key: str, source: str, default: float | None = None) -> float | None:
    value = section.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{source}: {SECTION}.{key}: expected a number, got {value!r}")
    return float(value)


# --------------------------------------------------------------------------- searching
@dataclass
class _Search:
    """One cell at one seed: its rate search, the rate it waits for, its points."""

    run: Run
    slos: list[Slo]  # expanded for the cell's tiers
    contract: str | None  # the contract's name (None: the grid's ``slo``)
    steps: RateSearch
    asked: tuple[float, int] | None = None  # (rate, bisection steps left after it)
    key: str = ""  # the store key of the run at ``asked``
    points: dict[float, Point] = field(default_factory=dict)
    bounds: tuple[float | None, float | None] | None = None  # (lo, hi) once finished
    error: str | None = None
    below_floor: bool = False  # its bounds failed at the no-load floor: not searched

    def start(self) -> None:
        self._step(lambda: next(self.steps))

    def stop_at_floor(self) -> None:
        self.below_floor, self.asked, self.bounds = True, None, (None, None)

    def tell(self, point: Point) -> None:
        self.points[point.rate] = point
        self._step(lambda: self.steps.send(point.meets))

    def _step(self, step) -> None:
        try:
            self.asked = step()
        except StopIteration as stop:
            self.asked, self.bounds = None, stop.value
        while self.asked is not None and self.asked[0] in self.points:  # a rate judged before
            point = self.points[self.asked[0]]
            try:
                self.asked = self.steps.send(point.meets)
            except StopIteration as stop:
                self.asked, self.bounds = None, stop.value


@dataclass
class GridCapacityOutcome:
    """What a capacity grid did, for the summary line."""

    name: str
    out_dir: Path
    searches: int
    cells: int
    runs: int = 0  # distinct runs its searches asked for
    reused: int = 0
    computed: int = 0
    failed: int = 0
    simulations: int = 0
    rounds: int = 0
    engine: str = field(default_factory=native.status)
    wall_seconds: float = 0.0
    files: list[str] = field(default_factory=list)

    def line(self) -> str:
        failed = f", {self.failed} FAILED (searches.csv's error column names them)" if self.failed else ""
        return (
            f"{self.name}: {self.searches} searches ({self.cells} cells x seeds) in {self.rounds} rounds: "
            f"{self.runs} runs, {self.reused} reused, {self.computed} computed{failed} "
            f"({self.simulations} simulations; engine {self.engine}) in {self.wall_seconds:.1f} s; "
            f"wrote {', '.join(self.files)} to {self.out_dir}/"
        )


def run_capacity_grid(
    spec: CapacityGrid,
    out_dir: Path,
    execution: Execution = Execution(),
) -> tuple[GridCapacityOutcome, pd.DataFrame]:
    """Every search of ``spec`` to its answer, in rounds (after the floor checks, look by
    look with ``sequential``); writes the tables and returns the outcome and the index (one
    row per cell)."""
    started = time.perf_counter()
    grid = spec.grid
    out_dir, store = open_results(out_dir)
    executor = _Executor(store, execution)
    outcome = GridCapacityOutcome(grid.name, out_dir, 0, len(grid.cells) * len(spec.bounds()))
    shown = Progress(f"capacity {grid.name}", 0, show=execution.progress)
    searches: list[_Search] = []
    floors: list[dict[str, Any]] = []
    try:
        new = _next_searches(spec, searches)
        while new:
            searches += new
            if spec.floor is not None:
                floors += _check_floors(spec, new, executor, outcome, shown)
            for search in new:
                if not search.below_floor:
                    search.start()
            while waiting := [s for s in searches if s.asked is not None]:
                outcome.rounds += 1
                _round(waiting, executor, outcome, shown)
            new = _next_searches(spec, searches)
    finally:
        shown.close()
    outcome.searches = len(searches)
    runs = _searches_table(spec, searches)
    index = _index_table(spec, runs)
    outcome.files = write_table(runs, out_dir, "searches") + write_table(index, out_dir, "index")
    if spec.floor is not None:
        outcome.files += write_table(pd.DataFrame(floors), out_dir, "floor")
    meta = {
        "name": grid.name,
        "source": grid.source,
        "description": grid.description,
        "columns": spec.columns,
        "seeds": sorted({search.run.seed for search in searches}),
        "slos": [slo.text for slo in spec.slos],
        "contracts": {name: [slo.text for slo in bounds] for name, bounds in spec.contracts.items()},
        "contract_info": {name: dataclasses.asdict(info) for name, info in spec.contract_info.items()},
        "tolerance": spec.tolerance,
        "low": spec.low,
        "high": spec.high,
        "baseline": spec.baseline,
        "floor": spec.floor,
        "sequential": list(SEED_LOOKS) if spec.sequential else None,
        "cells": outcome.cells,
        "searches": len(searches),
        "failed": int((runs["answer"] == "failed").sum()),
        "runs": outcome.runs,
    }
    text = json.dumps(meta, indent=1)
    atomic_write(out_dir / "capacity_grid.json", lambda tmp: tmp.write_text(text))
    outcome.files.append("capacity_grid.json")
    outcome.failed = meta["failed"]
    outcome.wall_seconds = time.perf_counter() - started
    return outcome, index


def _new_search(
    spec: CapacityGrid, run: Run, contract: str | None, bounds: list[Slo], near: Mapping
) -> _Search:
    found = near.get((run.cell.label, contract))
    steps = rate_search(spec.low, spec.high, run.config.workload.arrival.rate, spec.tolerance, found)
    return _Search(run, expand_scopes(bounds, run.config), contract, steps)


def _brackets_found(searches: Sequence[_Search]) -> dict[tuple[str, str | None], tuple[float, float]]:
    """Per (cell, contract), the bracket that holds every answer its seeds found so far
    (lowest rate met, highest missed): where the next seeds' searches start."""
    found: dict[tuple[str, str | None], tuple[float, float]] = {}
    for search in searches:
        if search.bounds is None or None in search.bounds:
            continue
        lo, hi = search.bounds
        key = (search.run.cell.label, search.contract)
        if key in found:
            lo, hi = min(lo, found[key][0]), max(hi, found[key][1])
        found[key] = (lo, hi)
    return found


def _next_searches(spec: CapacityGrid, searches: Sequence[_Search]) -> list[_Search]:
    """What to search next: each cell's first seed alone (it searches from the grid's rate),
    then the rest of the first look (from the bracket it found), then with ``sequential``
    the next look's seeds where a ratio is unsettled (from the brackets found so far)."""
    near = _brackets_found(searches)
    looked = SEED_LOOKS[0] if spec.sequential else len(spec.grid.seeds)
    seeds = spec.grid.seeds[: 1 if not searches else looked]
    have = {(s.run.cell.label, s.contract, s.run.seed) for s in searches}
    new = [
        _new_search(spec, run, contract, bounds, near)
        for run in spec.grid.runs
        if run.seed in seeds
        for contract, bounds in spec.bounds().items()
        if (run.cell.label, contract, run.seed) not in have
    ]
    if new or not spec.sequential:
        return new
    return _next_look(spec, searches, near)


def _next_look(spec: CapacityGrid, searches: Sequence[_Search], near: Mapping) -> list[_Search]:
    """The next look's searches: the next seeds of every cell whose ratio to its baseline
    is unsettled, and of its baseline cell (once, however many cells share it)."""
    runs = _searches_table(spec, searches)
    columns = spec.columns
    seeds_of: dict[tuple[str, str | None], int] = {}
    for contract, cell in product(spec.bounds(), spec.grid.cells):
        if _is_baseline(spec, cell.coords):
            continue
        coords = _coords(spec, cell.coords, contract)
        both = _paired_rows(runs, columns, coords, spec.baseline)
        if both is None or not unsettled(both["rate_per_gpu"] / both["rate_per_gpu.baseline"]):
            continue
        searched = len(_rows_of(runs, columns, coords))  # the look it had (floored seeds count)
        for label in (cell.label, _baseline_cell(spec, cell).label):
            seeds_of[(label, contract)] = searched
    have = {(s.run.cell.label, s.contract, s.run.seed) for s in searches}
    new = []
    for run in spec.grid.runs:
        for contract, bounds in spec.bounds().items():
            look = seeds_of.get((run.cell.label, contract))
            if look is None or (run.cell.label, contract, run.seed) in have:
                continue
            following = next(n for n in SEED_LOOKS if n > look)
            if run.seed in spec.grid.seeds[:following]:
                new.append(_new_search(spec, run, contract, bounds, near))
    return new


def _is_baseline(spec: CapacityGrid, coords: Mapping[str, Any]) -> bool:
    return all(coords.get(column) == value for column, value in spec.baseline.items())


def _baseline_cell(spec: CapacityGrid, cell: Cell) -> Cell:
    """The cell with this one's coordinates but the baseline's (itself without a baseline)."""
    coords = {**cell.coords, **spec.baseline}
    return next(other for other in spec.grid.cells if other.coords == coords)


def _check_floors(spec, new: Sequence[_Search], executor, outcome, shown) -> list[dict[str, Any]]:
    """Each new search's floor: its baseline cell at ``spec.floor`` req/s per instance and
    its seed; a search whose bounds fail there stops (answer ``floor``)."""
    runs = {(run.cell.label, run.seed): run for run in spec.grid.runs}
    floor_of: dict[int, tuple[Run, str]] = {}
    wanted: dict[str, Any] = {}
    for search in new:
        run = runs[(_baseline_cell(spec, search.run.cell).label, search.run.seed)]
        config = at_rate(run.config, spec.floor * run.config.cluster.instances, run.seed)
        key = run_key(config)
        wanted[key] = config
        floor_of[id(search)] = (run, key)
    executor.run(wanted, outcome, shown, 0)
    rows, seen = [], set()
    for search in new:
        run, key = floor_of[id(search)]
        if executor.store.is_failed(key):
            failure = executor.store.failure(key)
            search.error = f"floor: {failure.kind}: {failure.reason}"
            search.stop_at_floor()
            continue
        point = judge(spec.floor * run.config.cluster.instances, search.slos, [executor.store.summary(key)])
        if not point.meets:
            search.stop_at_floor()
        check = (run.cell.label, search.contract, run.seed)
        if check not in seen:
            seen.add(check)
            row = _coords(spec, run.cell.coords, search.contract)
            rows.append({**row, "seed": run.seed, "rate": point.rate, "meets": point.meets, **point.values})
    return rows


@dataclass
class _Executor:
    """Runs what the store lacks (runs that are one simulation run once) and stores them."""

    store: RunStore
    execution: Execution
    seen: set[str] = field(default_factory=set)

    def run(self, wanted: Mapping[str, Any], outcome: GridCapacityOutcome, shown: Progress, steps_left: int) -> None:
        store = self.store
        todo = {
            key: config
            for key, config in wanted.items()
            if not store.is_done(key, this_code_only=self.execution.recompute_stale) and not store.is_failed(key)
        }
        groups: dict[str, list[str]] = {}
        for key, config in todo.items():
            groups.setdefault(simulation_key(config), []).append(key)
        tasks = [
            Task(first, todo[first], (), tuple((key, todo[key]) for key in rest))
            for first, *rest in groups.values()
        ]
        new = [key for key in wanted if key not in self.seen]  # a key asked again is not counted again
        self.seen.update(new)
        reused = sum(1 for key in new if key not in todo)
        outcome.runs += len(new)
        outcome.reused += reused
        outcome.simulations += len(tasks)
        shown.plan(len(new), reused, steps_left)
        for key, result in self.execution.run(tasks):
            failed = isinstance(result, RunError)
            if failed:
                store.write_failure(key, todo[key], result)
            else:
                store.write(key, todo[key], result)
                outcome.computed += 1
            shown.update(failed)


def _round(waiting: Sequence[_Search], executor: _Executor, outcome: GridCapacityOutcome, shown: Progress) -> None:
    """One rate for each waiting search: run what the store lacks, then tell each."""
    wanted: dict[str, Any] = {}
    for search in waiting:
        config = at_rate(search.run.config, search.asked[0], search.run.seed)
        search.key = run_key(config)
        wanted[search.key] = config
    executor.run(wanted, outcome, shown, sum(search.asked[1] for search in waiting))
    store = executor.store
    for search in waiting:
        rate = search.asked[0]
        if store.is_failed(search.key):
            failure = store.failure(search.key)
            search.asked, search.error = None, f"rate {rate:g}: {failure.kind}: {failure.reason}"
        else:
            search.tell(judge(rate, search.slos, [store.summary(search.key)]))


# --------------------------------------------------------------------------- tables
def _coords(spec: CapacityGrid, coords: Mapping[str, Any], contract: str | None) -> dict[str, Any]:
    """A search's cell coordinates, with its contract's name when the grid has contracts."""
    return {**coords, CONTRACT: contract} if spec.contracts else dict(coords)


def _searches_table(spec: CapacityGrid, searches: Sequence[_Search]) -> pd.DataFrame:
    """One row per cell and seed: the answer, the capacity and the bracket, GPUs, cost."""
    rows = []
    for search in searches:
        coords = _coords(spec, search.run.cell.coords, search.contract)
        row = {column: coords.get(column) for column in spec.columns}
        row["seed"] = search.run.seed
        lo, hi = search.bounds if search.bounds is not None else (None, None)
        best = search.points.get(lo) if lo is not None else None
        if search.error is not None:
            answer = "failed"
        elif search.below_floor:
            answer = "floor"
        elif lo is None:
            answer = "none"
        else:
            answer = "bracketed" if hi is not None else "unbounded"
        row.update(
            answer=answer,
            rate=best.rate if best else math.nan,
            bracket_low=lo if lo is not None else (0.0 if answer in ("none", "floor") else math.nan),
            bracket_high=hi if hi is not None else (math.inf if answer == "unbounded" else math.nan),
            gpus=best.average_gpus if best else math.nan,
            rate_per_gpu=best.rate / best.average_gpus if best else math.nan,
            cost_per_request=best.cost_per_request if best else math.nan,
            cost_per_latency=best.cost_per_latency if best else math.nan,
            rates_tried=len(search.points),
            error=search.error or "",
        )
        rows.append(row)
    return pd.DataFrame(rows)


def _index_table(spec: CapacityGrid, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: how its seeds' searches answered, the mean capacity per GPU with
    its interval over the seeds above the floor (``floored`` counts the others), the bracket
    over every seed and, with a baseline, the paired ratio to it (geometric mean of the
    per-seed ratios, t-interval on their logarithms)."""
    rows = []
    columns, baseline = spec.columns, spec.baseline
    for contract, cell in product(spec.bounds(), spec.grid.cells):
        coords = _coords(spec, cell.coords, contract)
        mine = _rows_of(runs, columns, coords)
        answers = mine["answer"].value_counts()
        row = dict(coords)
        row["seeds"] = len(mine)
        row["answer"] = answers.index[0] if len(answers) == 1 else "mixed"
        row["answers"] = ", ".join(f"{kind} {count}" for kind, count in sorted(answers.items()))
        above_floor = mine[mine["answer"] != "floor"]  # a seed whose requests no scheme can serve in time
        row["floored"] = len(mine) - len(above_floor)
        rated = len(above_floor) > 0 and above_floor["answer"].isin(["bracketed", "unbounded"]).all()
        for column in ("rate", "rate_per_gpu"):
            mean, low, high = mean_and_t_interval(above_floor[column]) if rated else (math.nan,) * 3
            row.update({column: mean, f"{column}.ci_low": low, f"{column}.ci_high": high})
        row["bracket_low"] = float(mine["bracket_low"].min())
        row["bracket_high"] = float(mine["bracket_high"].max())
        row["cost_per_latency"] = float(mine["cost_per_latency"].mean())
        if baseline:
            row.update(_versus(spec, runs, coords))
        rows.append(row)
    return pd.DataFrame(rows)


def _rows_of(runs: pd.DataFrame, columns: Sequence[str], coords: Mapping[str, Any]) -> pd.DataFrame:
    mask = np.ones(len(runs), dtype=bool)
    for column in columns:
        value = coords.get(column)
        mask &= runs[column].isna().to_numpy() if value is None else (runs[column] == value).to_numpy()
    return runs[mask]


def _paired_rows(runs, columns, coords, baseline) -> pd.DataFrame | None:
    """This cell's searches joined seed by seed with its baseline cell's (``.baseline``
    columns), less the seeds whose requests failed the floor (no scheme can meet the bounds
    on them: they say nothing about the comparison); None unless every other seed of both
    answered a rate."""
    mine = _rows_of(runs, columns, coords)
    both = mine.merge(_rows_of(runs, columns, {**coords, **baseline}), on="seed", suffixes=("", ".baseline"))
    both = both[(both["answer"] != "floor") & (both["answer.baseline"] != "floor")]
    rated = ["bracketed", "unbounded"]
    if not len(both) or not (both["answer"].isin(rated).all() and both["answer.baseline"].isin(rated).all()):
        return None
    return both


def _versus(spec: CapacityGrid, runs, coords) -> dict[str, float]:
    """The paired ratio of this cell's capacity per GPU to its baseline cell's (the
    sequential interval with ``sequential``)."""
    both = _paired_rows(runs, spec.columns, coords, spec.baseline)
    if both is None:
        return {"vs_baseline": math.nan, "vs_baseline.ci_low": math.nan, "vs_baseline.ci_high": math.nan}
    if spec.sequential:
        ratio, low, high = sequential_ratio(both["rate_per_gpu"] / both["rate_per_gpu.baseline"])
    else:
        ratio, low, high = paired_ratio(both["rate_per_gpu"], both["rate_per_gpu.baseline"])
    return {"vs_baseline": ratio, "vs_baseline.ci_low": low, "vs_baseline.ci_high": high}


def paired_ratio(values: Sequence[float], baseline: Sequence[float]) -> tuple[float, float, float]:
    """The geometric mean of ``values / baseline`` (aligned by seed) and its interval: a
    Student-t interval on the logarithms of the ratios, mapped back
    (``sim.sweep.stats.ratio_interval``)."""
    ratios = np.asarray(values, dtype=float) / np.asarray(baseline, dtype=float)
    ratio, low, high = ratio_interval(ratios.reshape(1, -1), level=LEVEL)
    return float(ratio[0]), float(low[0]), float(high[0])