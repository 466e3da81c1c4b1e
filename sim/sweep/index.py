"""The index of a sweep: one row per cell and seed, its coordinates and every summary metric.

Columns: the grid's coordinate columns (axis keys, zip keys, variant groups, ``part``),
``seed``, ``config_hash`` (the run's store key), ``status`` (``ok``, or ``failed`` with the
reason in ``error`` and no metrics: ``ok_rows`` drops those), then the summary flattened to dotted names
(``latency.prefill_latency.p99``, ``latency_by_tier.2.e2e_latency.mean``,
``cost.cost_per_latency``, ``migration.downtime.p99``, ...). Wall-clock fields are left out,
so the index is a pure function of the grid: a resumed, a re-run and a Ray sweep all write
the same values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from sim.files import atomic_write
from sim.sweep.grid import Grid
from sim.sweep.store import RunStore

KEY_COLUMNS = ("seed", "config_hash", "status")
OK, FAILED = "ok", "failed"
# summary entries that are not metrics of the run, or not a function of its config
_SKIP = {
    "name",
    "config_hash",
    "config",
    "files",
    "workload",
    "interrupted",
    "simulation.wall_seconds",
    "simulation.requests_per_wall_second",
    "simulation.engine",
    "migration.migrating_fraction.per_instance",
}
_RENAME = {"scheduler": "scheduler.name"}


def flatten(summary: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested summary -> {dotted name: scalar}; lists by position (``faults.faults.0.kind``)."""
    flat: dict[str, Any] = {}
    items = summary.items() if isinstance(summary, dict) else enumerate(summary)
    for key, value in items:
        name = f"{prefix}{key}"
        if name in _SKIP:
            continue
        name = _RENAME.get(name, name)
        if isinstance(value, (dict, list, tuple)):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def build_index(grid: Grid, store: RunStore) -> pd.DataFrame:
    """The index rows of every stored run of ``grid``, results and failures, in grid order."""
    rows = []
    for run in grid.runs:
        row = {column: run.cell.coords.get(column) for column in grid.columns}
        row.update(seed=run.seed, config_hash=run.key)
        if store.is_done(run.key):
            row["status"] = OK
            row.update({k: v for k, v in flatten(store.summary(run.key)).items() if k not in row})
        elif store.is_failed(run.key):
            failure = store.failure(run.key)
            row.update(status=FAILED, error=f"{failure.kind}: {failure.reason}")
        else:
            continue
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        frame = pd.DataFrame(columns=[*grid.columns, *KEY_COLUMNS])
    return _arrow_safe(frame)


def ok_rows(index: pd.DataFrame) -> pd.DataFrame:
    """The rows of runs that have results (failed runs have none to average or compare)."""
    return index[index["status"] == OK] if "status" in index else index


def _arrow_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns mixing types (a coordinate that is a number in one part and text in
    another) become text, so Parquet can store them; None and NaN stay missing."""
    for column in frame.columns:
        if frame[column].dtype != object:
            continue
        kinds = {type(v) for v in frame[column] if v is not None and v == v}
        if len(kinds) > 1 and not kinds <= {int, float}:
            frame[column] = frame[column].map(lambda v: None if v is None or v != v else str(v))
    return frame


def write_table(frame: pd.DataFrame, out_dir: Path, stem: str) -> list[str]:
    """Write ``<stem>.parquet`` and ``<stem>.csv`` atomically; returns the file names."""
    atomic_write(out_dir / f"{stem}.parquet", lambda tmp: frame.to_parquet(tmp, index=False))
    atomic_write(out_dir / f"{stem}.csv", lambda tmp: frame.to_csv(tmp, index=False))
    return [f"{stem}.parquet", f"{stem}.csv"]


def select(frame: pd.DataFrame, where: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Rows whose columns equal ``where``'s values (a list: any of them; None or NaN: a
    missing value). The one row filter of indexes and run tables, for notebooks too
    (``sim.presentation.plots`` exports it)."""
    mask = pd.Series(True, index=frame.index)
    for column, value in (where or {}).items():
        values = list(value) if isinstance(value, (list, tuple, set)) else [value]
        missing = [v for v in values if v is None or (isinstance(v, float) and np.isnan(v))]
        mask &= frame[column].isin([v for v in values if v not in missing]) | (
            frame[column].isna() if missing else False
        )
    return frame[mask]
