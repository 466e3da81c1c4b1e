"""A compact copy of a finished sweep to commit under ``results/``: the index cut to its
coordinates, seed and the columns the findings and notebooks read, plus ``sweep.json``, and
optionally a few per-run tables of a subset of its runs (``tables/<table>.parquet``: the
rows of every kept run, each with its run key, and only the columns named if any). A fresh clone then opens it with
``sim.presentation.plots.open_sweep`` without re-running (the aggregate is recomputed from the
index on opening; ``Sweep.table`` reads the kept tables, and names what was not kept).

    python -m sim.presentation.compact /path/to/results/k_study results/k_study
    python -m sim.presentation.compact results/paper results/paper \\
        --metrics 'migration\\.(aborted|churn\\.[a-z0-9_]+|migrating_fraction\\.mean)' \\
        --table migrations:start,blocks,downtime,outcome --where scheduler=llumnix --where seed=0

The source may be the destination (``llumsim paper`` keeps its sweep in ``results/paper``):
the copy then replaces the full index there, which the next sweep rebuilds from ``runs/``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd
import yaml

from sim.config import ConfigError
from sim.files import atomic_write, check_output_folder, make_folder
from sim.sweep.folder import is_results_entry
from sim.sweep.index import KEY_COLUMNS, OK, ok_rows, select
from sim.sweep.store import RunStore

TABLES = "tables"  # the folder of a compact copy's kept per-run tables
RUN_KEY = "config_hash"  # the column naming each kept table row's run
# what every study's findings and notebooks read: latency mean/P50/P99 overall and per tier,
# cost, preemptions and migrations, SLO attainment and per-GPU capacity where a study has them,
# and the instance-seconds an idle instance was shown busy
KEPT = tuple(
    re.compile(pattern)
    for pattern in (
        r"latency(_by_tier\.\d+)?\.(prefill_latency|decode_latency_per_token|e2e_latency)\.(mean|p50|p99)",
        r"cost\.(cost_per_request|cost_per_latency|gpu_hours|average_instances)",
        r"requests\.(finished|preempted|migrations)",
        r"migration\.committed",
        r"slo\.(overall|by_tier\.\d+)\.attainment",
        r"slo\.tiers_met",
        r"capacity\.[a-z_]+",
        r"scheduler_view\.stale_idle_instance_seconds",  # INV-4 idle-view: 0 in every run
    )
)


def compact_index(index: pd.DataFrame, columns: list[str], metrics: Sequence[str] = ()) -> pd.DataFrame:
    """The runs with results, keeping the coordinate ``columns``, the key columns and the
    ``KEPT`` metrics plus those matching a ``metrics`` pattern (a study's own, e.g. its
    fault columns); values untouched, so findings from the copy match the full sweep's."""
    patterns = [*KEPT, *(re.compile(pattern) for pattern in metrics)]
    runs = ok_rows(index)
    kept = [c for c in runs.columns if c not in (*columns, *KEY_COLUMNS) and any(p.fullmatch(c) for p in patterns)]
    return runs[[*columns, *KEY_COLUMNS, *kept]].reset_index(drop=True)


def kept_runs(index: pd.DataFrame, where: Mapping[str, Any]) -> pd.DataFrame:
    """The runs of ``index`` whose tables a compact copy keeps (those matching ``where``;
    none matching is a typo of a value, not an empty table to commit)."""
    unknown = [column for column in where if column not in index.columns]
    if unknown:
        raise KeyError(f"--where {', '.join(unknown)}: not a column of the index (columns: {', '.join(index.columns[:12])}, ...)")
    runs = select(index, where)
    if where and runs.empty:
        pairs = " ".join(f"{column}={value!r}" for column, value in where.items())
        raise ValueError(f"--where {pairs}: matches no run of the sweep")
    return runs


def check_destination(source: Path, dest: Path) -> None:
    """A compact copy goes to a new or empty folder, its own source, or an earlier copy (a
    folder with a sweep.json): never into a folder llumsim did not make, where an
    ``index.parquet`` may be someone else's."""
    if dest.resolve() == source.resolve():
        return
    check_output_folder(dest, "results", is_results_entry)
    if not dest.is_dir() or not any(dest.iterdir()):
        return
    if not (dest / "sweep.json").is_file():
        raise ConfigError(
            f"output folder {dest}: not empty and holds no sweep.json, so not a llumsim results "
            "folder; choose a new or empty folder"
        )


def table_frame(store: RunStore, runs: pd.DataFrame, name: str, columns: Sequence[str] = ()) -> pd.DataFrame:
    """One table of every run in ``runs``, concatenated, each row with its run key first
    (only ``columns`` of it, if any)."""
    frames = []
    for key in runs[RUN_KEY]:
        frame = store.table(key, name)
        unknown = [column for column in columns if column not in frame.columns]
        if unknown:
            raise KeyError(f"--table {name}: no column(s) {', '.join(unknown)} (columns: {', '.join(frame.columns)})")
        frame = frame[list(columns)] if columns else frame
        frame.insert(0, RUN_KEY, key)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({RUN_KEY: []})


def write_compact(
    source: Path,
    dest: Path,
    metrics: Sequence[str] = (),
    tables: Mapping[str, Sequence[str]] | None = None,
    where: Mapping[str, Any] | None = None,
) -> Path:
    """``dest``/index.parquet and sweep.json from the sweep in ``source`` (which must be
    complete: a partial sweep would commit a partial study), and ``dest``/tables/<name>.parquet
    for each of ``tables`` (name -> the columns kept, none: all) over the runs matching
    ``where`` (read from ``source``/runs)."""
    tables = dict(tables or {})
    meta = json.loads((source / "sweep.json").read_text())
    if "compact" in meta:
        raise ValueError(f"{source}/sweep.json: already a compact copy; rerun its sweep to rebuild the full index first")
    if not meta.get("complete"):
        raise ValueError(f"{source}/sweep.json: the sweep is not complete ({meta.get('runs_done')}/{meta.get('runs')} runs)")
    not_kept = [name for name in tables if name not in meta.get("tables", [])]
    if not_kept:
        raise ValueError(f"{source}/sweep.json: table(s) {', '.join(not_kept)} not kept by the sweep (kept: {meta.get('tables')})")
    index = pd.read_parquet(source / "index.parquet")
    frame = compact_index(index, list(meta["columns"]), metrics)
    where = dict(where or {})
    runs = kept_runs(frame, where)
    store = RunStore(source / "runs")
    kept = {name: table_frame(store, runs, name, columns) for name, columns in tables.items()}  # every table read before dest changes
    check_destination(source, dest)
    make_folder(dest, f"output folder {dest}")
    atomic_write(dest / "index.parquet", lambda tmp: frame.to_parquet(tmp, index=False, compression="zstd"))
    for name, table in kept.items():
        (dest / TABLES).mkdir(exist_ok=True)
        atomic_write(dest / TABLES / f"{name}.parquet", lambda tmp, t=table: t.to_parquet(tmp, index=False, compression="zstd"))
    compact: dict[str, Any] = {
        "runs": len(frame),
        "failed": int((index["status"] != OK).sum()) if "status" in index else 0,
        "metrics": len(frame.columns) - len(meta["columns"]) - len(KEY_COLUMNS),
    }
    if metrics:
        compact["metric_patterns"] = list(metrics)
    if tables:
        compact["tables"] = {"where": where, "runs": len(runs), "columns": {n: list(c) for n, c in tables.items() if c}}
    meta = {
        **meta,
        "source": f"experiments/grids/{meta['name']}.yaml",  # the shipped grid of that name
        "tables": list(tables),
        "compact": compact,
    }
    atomic_write(dest / "sweep.json", lambda tmp: tmp.write_text(json.dumps(meta, indent=1) + "\n"))
    return dest


def parse_tables(specs: Sequence[str]) -> dict[str, list[str]]:
    """``NAME`` or ``NAME:COLUMN,COLUMN`` -> {name: the columns kept (none: all)}."""
    tables = {}
    for spec in specs:
        name, _, columns = spec.partition(":")
        if not name:
            raise ValueError(f"--table {spec!r}: expected NAME or NAME:COLUMN,COLUMN")
        tables[name] = [column for column in columns.split(",") if column]
    return tables


def parse_where(pairs: Sequence[str]) -> dict[str, Any]:
    """``COLUMN=VALUE`` pairs (values read as YAML: ``seed=0`` is the number 0)."""
    where = {}
    for pair in pairs:
        column, sep, value = pair.partition("=")
        if not sep or not column:
            raise ValueError(f"--where {pair!r}: expected COLUMN=VALUE")
        where[column] = yaml.safe_load(value)
    return where


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a finished sweep's results folder")
    parser.add_argument("dest", type=Path, help="where the compact copy goes (e.g. results/k_study)")
    parser.add_argument("--metrics", action="append", default=[], metavar="REGEX",
                        help="also keep the index columns matching this pattern (repeatable)")
    parser.add_argument("--table", action="append", default=[], metavar="NAME[:COLUMNS]",
                        help="also keep this per-run table (only these comma-separated columns, if "
                        "given) of the runs --where selects (repeatable)")
    parser.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE",
                        help="the runs whose tables are kept (repeatable; default: every run)")
    args = parser.parse_args(argv)
    try:
        where = parse_where(args.where)
        if where and not args.table:
            raise ValueError("--where selects the runs whose tables are kept: name them with --table")
        tables = parse_tables(args.table)
        dest = write_compact(args.source, args.dest, args.metrics, tables, where)
    except (OSError, ValueError, KeyError, re.error) as error:
        print(f"llumsim: error: {error}", file=sys.stderr)
        return 2
    files = [dest / "index.parquet", *(dest / TABLES / f"{name}.parquet" for name in tables)]
    sizes = ", ".join(f"{f.relative_to(dest)} ({f.stat().st_size / 1e6:.2f} MB)" for f in files)
    print(f"wrote {sizes} and sweep.json to {dest}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
