"""Grid files: a base config and the dimensions to vary, expanded to one config per run.

A grid is a union of products. Each *part* (or the grid itself, when it has no ``parts``)
is the product of its dimensions: every ``axes`` key (a list of values), every ``zip``
block (keys whose lists vary together) and every ``variants`` group (named bundles of
settings, one per cell). Grid-level ``axes``/``zip``/``variants`` apply to every part; a
part may name a ``base`` config of its own (the grid's ``set`` still applies on top). One
*cell* is one point of that product; each cell runs once per seed, and a run is keyed by
the hash of its resolved config (``run_key``), so identical runs are shared and a re-run
skips them.

Everything is resolved and checked here, before anything runs: an unknown grid key, an
empty axis, zip lists of different lengths, two dimensions setting the same key, or a value
the config rejects stop with a ConfigError naming the grid file, the cell and the key.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from sim.config import ConfigError, OutputConfig, SimulationConfig, config_hash, from_dict
from sim.config.limits import MAX_GRID_RUNS, MAX_SEEDS
from sim.config.loader import apply_overrides, read_yaml, set_dotted
from sim.config.ranges import check_run_name

GRID_KEYS = (
    "name",
    "description",
    "base",
    "set",
    "seeds",
    "axes",
    "zip",
    "variants",
    "tables",
    "parts",
)
PART_KEYS = ("name", "base", "set", "axes", "zip", "variants")
TABLES = ("requests", "instances", "cluster", "migrations")
PART_COLUMN = "part"


@dataclass(frozen=True)
class Cell:
    """One point of a grid: its coordinates (index columns) and the settings they make."""

    label: str  # e.g. "workload.priority.tiers=4, scheduler=llumnix"
    coords: dict[str, Any]  # column -> value (scalars; lists and mappings as JSON text)
    settings: dict[str, Any]  # dotted key -> value, applied over the base config


@dataclass(frozen=True)
class Run:
    """One simulation: a cell at one seed, with its resolved config and store key."""

    cell: Cell
    seed: int
    config: SimulationConfig
    key: str


@dataclass
class Grid:
    """An expanded grid: every run resolved and checked."""

    name: str
    source: str  # the grid file, for messages
    description: str
    seeds: list[int]
    columns: list[str]  # coordinate columns, in order of first appearance
    cells: list[Cell]
    runs: list[Run]
    tables: tuple[str, ...]  # per-run tables to keep besides the summary


# --------------------------------------------------------------------------- settings
def leaf_keys(settings: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted keys a settings mapping sets (nested mappings flattened)."""
    keys = []
    for key, value in settings.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            keys += leaf_keys(value, f"{dotted}.")
        else:
            keys.append(dotted)
    return keys


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _label(value: Any) -> Any:
    """An index-column value: scalars as they are, lists and mappings as compact JSON."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


# --------------------------------------------------------------------------- dimensions
@dataclass(frozen=True)
class _Option:
    coords: dict[str, Any]
    settings: dict[str, Any]


@dataclass(frozen=True)
class _Dimension:
    where: str  # e.g. "axes.workload.arrival.rate", for messages
    keys: tuple[str, ...]  # dotted keys it sets
    options: tuple[_Option, ...]


def _mapping(value: Any, where: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {value!r}")
    return value


def _values(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of values, got {value!r}")
    if not value:
        raise ConfigError(f"{where}: empty list (a dimension needs at least one value)")
    return value


def _check_settable(key: str, where: str) -> None:
    if key == "seed":
        raise ConfigError(f"{where}: vary seeds with 'seeds: N', not as a setting")


def _axes(spec: Any, where: str) -> list[_Dimension]:
    dims = []
    for key, values in _mapping(spec, where).items():
        key = str(key)
        at = f"{where}.{key}"
        _check_settable(key, at)
        options = tuple(_Option({key: _label(v)}, {key: v}) for v in _values(values, at))
        dims.append(_Dimension(at, (key,), options))
    return dims


def _zips(spec: Any, where: str) -> list[_Dimension]:
    if not isinstance(spec, list):
        raise ConfigError(f"{where}: expected a list of blocks (each: key -> list of values)")
    dims = []
    for i, block in enumerate(spec):
        at = f"{where}[{i}]"
        block = _mapping(block, at)
        if not block:
            raise ConfigError(f"{at}: empty block")
        lists = {}
        for key, values in block.items():
            _check_settable(str(key), f"{at}.{key}")
            lists[str(key)] = _values(values, f"{at}.{key}")
        lengths = {key: len(values) for key, values in lists.items()}
        if len(set(lengths.values())) > 1:
            detail = ", ".join(f"{k}: {n}" for k, n in lengths.items())
            raise ConfigError(f"{at}: lists of different lengths vary together ({detail})")
        options = tuple(
            _Option(
                {key: _label(values[j]) for key, values in lists.items()},
                {key: values[j] for key, values in lists.items()},
            )
            for j in range(len(next(iter(lists.values()))))
        )
        dims.append(_Dimension(at, tuple(lists), options))
    return dims


def _variants(spec: Any, where: str) -> list[_Dimension]:
    dims = []
    for group, variants in _mapping(spec, where).items():
        at = f"{where}.{group}"
        variants = _mapping(variants, at)
        if not variants:
            raise ConfigError(f"{at}: no variants (a group needs at least one)")
        options, keys = [], []
        for name, settings in variants.items():
            settings = dict(_mapping(settings if settings is not None else {}, f"{at}.{name}"))
            for key in leaf_keys(settings):
                _check_settable(key, f"{at}.{name}.{key}")
                keys.append(key)
            options.append(_Option({str(group): str(name)}, settings))
        dims.append(_Dimension(at, tuple(dict.fromkeys(keys)), tuple(options)))
    return dims


def _dimensions(spec: Mapping, where: str) -> list[_Dimension]:
    prefix = f"{where}." if where else ""
    dims = []
    if "axes" in spec:
        dims += _axes(spec["axes"], f"{prefix}axes")
    if "zip" in spec:
        dims += _zips(spec["zip"], f"{prefix}zip")
    if "variants" in spec:
        dims += _variants(spec["variants"], f"{prefix}variants")
    return dims


def _check_disjoint(dims: Sequence[_Dimension]) -> None:
    """Two dimensions must not set the same key: which one wins would be a silent choice."""
    for a, b in itertools.combinations(dims, 2):
        for key_a in a.keys:
            for key_b in b.keys:
                if _overlaps(key_a, key_b):
                    raise ConfigError(f"{b.where}: sets {key_b}, which {a.where} already varies")
    columns: dict[str, str] = {}
    for dim in dims:
        for column in dim.options[0].coords:
            if column in columns:
                raise ConfigError(f"{dim.where}: column {column!r} is also {columns[column]}")
            columns[column] = dim.where


def _unknown(spec: Mapping, known: Sequence[str], where: str) -> None:
    for key in spec:
        if key == "capacity" and not where:
            raise ConfigError("capacity: a capacity grid; run it with llumsim capacity --grid")
        if key not in known:
            raise ConfigError(f"{where}{key}: unknown grid key (known: {', '.join(known)})")


# --------------------------------------------------------------------------- runs
def normalize(config: SimulationConfig) -> SimulationConfig:
    """The config a sweep runs: output-only fields reset to their defaults.

    ``name`` and ``output.dir/plots/timeline/progress`` change what a run writes, not what it
    computes, so they must not change its key (renaming a grid reuses its runs).
    ``output.timeseries_interval`` stays: it sets the samples fragmentation is averaged over.
    """
    output = OutputConfig(timeseries_interval=config.output.timeseries_interval)
    return dataclasses.replace(config, name=SimulationConfig.name, output=output)


def run_key(config: SimulationConfig) -> str:
    """A run's key in the store: the hash of its normalized config (seed included)."""
    return config_hash(normalize(config))


def _seeds(spec: Any, base_seed: int) -> list[int]:
    if isinstance(spec, bool):
        raise ConfigError(f"seeds: expected a count or a list of seeds, got {spec!r}")
    count = spec if isinstance(spec, int) else len(spec) if isinstance(spec, list) else 0
    if count > MAX_SEEDS:
        raise ConfigError(f"seeds: {count:,} seeds per cell; at most {MAX_SEEDS:,}")
    if isinstance(spec, int):
        if spec < 1:
            raise ConfigError(f"seeds: must be >= 1, got {spec}")
        return [base_seed + i for i in range(spec)]
    if (
        isinstance(spec, list)
        and spec
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in spec)
    ):
        if len(set(spec)) != len(spec):
            raise ConfigError(f"seeds: repeated seed in {spec}")
        return list(spec)
    raise ConfigError(f"seeds: expected a count >= 1 or a list of seeds >= 0, got {spec!r}")


def _tables(spec: Any) -> tuple[str, ...]:
    if spec is None:
        return ()
    if not isinstance(spec, list):
        raise ConfigError(f"tables: expected a list of table names ({', '.join(TABLES)}), got {spec!r}")
    for table in spec:
        if table not in TABLES:
            raise ConfigError(f"tables: unknown table {table!r} (known: {', '.join(TABLES)})")
    return tuple(spec)


def _text(spec: Mapping, key: str) -> str | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(f"{key}: expected text, got {value!r}")
    return str(value)


def _base(spec: Any, grid_dir: Path) -> dict:
    if spec is None:
        return {}
    if isinstance(spec, Mapping):
        return copy.deepcopy(dict(spec))
    if isinstance(spec, str):
        path = Path(spec).expanduser()
        return read_yaml(path if path.is_absolute() else grid_dir / path)
    raise ConfigError(f"base: expected a config file path or a mapping, got {spec!r}")


def _apply(data: dict, settings: Mapping[str, Any]) -> None:
    for key, value in settings.items():
        set_dotted(data, str(key), value)


@dataclass(frozen=True)
class _Part:
    """One product of the grid, planned: its settings and dimensions, not yet multiplied out."""

    name: str | None
    data: dict  # the part's base config with the grid's and the part's ``set`` applied
    dims: list[_Dimension]

    @property
    def cells(self) -> int:
        return math.prod(len(dim.options) for dim in self.dims)


def _plan_part(base: dict, part: Mapping, shared: list[_Dimension], part_name: str | None) -> _Part:
    where = f"parts.{part_name}" if part_name is not None else ""
    dims = shared + _dimensions(part, where)
    _check_disjoint(dims)
    data = copy.deepcopy(base)
    if "set" in part:
        _apply(data, _mapping(part["set"], f"{where}.set" if where else "set"))
    return _Part(part_name, data, dims)


def _check_size(plan: Sequence[_Part], seeds: int) -> None:
    """Refuse a grid too large to hold (``MAX_GRID_RUNS``) before multiplying it out."""
    runs = sum(part.cells for part in plan) * seeds
    if runs > MAX_GRID_RUNS:
        sizes = " + ".join(f"{part.cells:,}" for part in plan)
        key = "parts" if len(plan) > 1 else "axes/zip/variants"
        raise ConfigError(
            f"{key}: {sizes} cells x {seeds:,} seeds = {runs:,} runs; a grid has at most "
            f"{MAX_GRID_RUNS:,} (split it into several grids)"
        )


def _part_cells(part: _Part) -> list[tuple[Cell, dict]]:
    cells = []
    for combo in itertools.product(*(dim.options for dim in part.dims)):
        coords: dict[str, Any] = {PART_COLUMN: part.name} if part.name is not None else {}
        settings: dict[str, Any] = {}
        for option in combo:
            coords.update(option.coords)
            settings.update(option.settings)
        label = ", ".join(f"{k}={v}" for k, v in coords.items())
        cell_data = copy.deepcopy(part.data)
        _apply(cell_data, settings)
        cells.append((Cell(label or "base", coords, settings), cell_data))
    return cells


def expand(
    spec: Mapping,
    source: str = "<grid>",
    grid_dir: Path | None = None,
    overrides: Iterable[str] = (),
) -> Grid:
    """Expand a grid mapping (as read from YAML) to its cells and runs, checking every one."""
    grid_dir = grid_dir or Path.cwd()
    try:
        _unknown(spec, GRID_KEYS, "")
        if not any(key in spec for key in GRID_KEYS if key not in ("name", "description")):
            raise ConfigError(
                "an empty grid: give a base config, settings or dimensions "
                f"({', '.join(GRID_KEYS[2:])})"
            )
        name_spec, description = _text(spec, "name"), _text(spec, "description")

        def resolved_base(base_spec: Any) -> dict:
            """A base config with the command-line overrides and the grid's ``set`` on top."""
            data = apply_overrides(_base(base_spec, grid_dir), list(overrides))
            if "set" in spec:
                _apply(data, _mapping(spec["set"], "set"))
            return data

        base = resolved_base(spec.get("base"))
        if "seed" in base and (not isinstance(base["seed"], int) or isinstance(base["seed"], bool)):
            raise ConfigError(f"seed: expected an integer, got {base['seed']!r}")
        seeds = _seeds(spec.get("seeds", 1), int(base.get("seed", 0)))
        tables = _tables(spec.get("tables"))
        shared = _dimensions(spec, "")
        parts = spec.get("parts")
        plan: list[_Part] = []
        if parts is None:
            plan.append(_plan_part(base, {}, shared, None))
        else:
            if not isinstance(parts, list) or not parts:
                raise ConfigError("parts: expected a non-empty list of parts")
            names = []
            for i, part in enumerate(parts):
                part = _mapping(part, f"parts[{i}]")
                name = str(part.get("name", i))
                _unknown(part, PART_KEYS, f"parts.{name}.")
                if name in names:
                    raise ConfigError(f"parts.{name}: two parts with this name")
                names.append(name)
                part_base = resolved_base(part["base"]) if "base" in part else base
                plan.append(_plan_part(part_base, part, shared, name))
        _check_size(plan, len(seeds))
        pairs = [pair for part in plan for pair in _part_cells(part)]
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    columns = list(dict.fromkeys(column for cell, _ in pairs for column in cell.coords))
    runs = []
    for cell, data in pairs:
        try:
            config = normalize(from_dict(SimulationConfig, data))
            for seed in seeds:  # one typed config per cell, copied per seed (and re-checked)
                seeded = dataclasses.replace(config, seed=seed)
                runs.append(Run(cell, seed, seeded, config_hash(seeded)))
        except ConfigError as exc:
            raise ConfigError(f"{source}: cell [{cell.label}]: {exc}") from None
    name = check_run_name(f"{source}: name", name_spec or Path(source).stem)
    return Grid(
        name=name,
        source=source,
        description=description or "",
        seeds=seeds,
        columns=columns,
        cells=[cell for cell, _ in pairs],
        runs=runs,
        tables=tables,
    )


def load_grid(path: str | Path, overrides: Iterable[str] = ()) -> Grid:
    """Read and expand a grid file; ``overrides`` (``key=value``) apply to its base config."""
    path = Path(path)
    return expand(read_yaml(path), str(path), path.parent, overrides)
