"""What the notebooks call: open a sweep's results, reshape them, and draw them with their
confidence intervals. Notebooks stay thin — a call per figure — so the logic is tested here
and a notebook cannot quietly drift from the package.

A sweep's aggregate has one row per cell: coordinate columns, ``seeds``, and per metric
``<metric>``, ``<metric>.ci_low``, ``<metric>.ci_high`` (``sim.sweep.stats``). Every plot
takes such a frame and column names; where ``.ci_low``/``.ci_high`` exist it draws them,
on a log axis only if they stay above zero (``Sweep.geometric``: the same on the log scale).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter
import numpy as np
import pandas as pd

from sim.files import atomic_write
from sim.sweep.index import ok_rows, select  # select: re-exported for notebooks (plots.select)
from sim.sweep.stats import aggregate
from sim.sweep.store import RunStore

RESULTS_ENV = "LLUMSIM_RESULTS"  # folder holding sweep results (default: <repo>/results)
_TIER = re.compile(r"latency_by_tier\.(\d+)\.(.+)")
_LATENCY = re.compile(r"(?:latency(?:_by_tier\.(\d+))?\.)?([a-z0-9_]+)\.(mean|p50|p90|p99)")
_LATENCY_WORDS = {
    "prefill_latency": "prefill latency",
    "decode_latency_per_token": "decode latency per output token",
    "e2e_latency": "end-to-end latency",
    "queueing_delay": "queueing delay",
    "preemption_loss": "time lost to preemption",
}
_STAT_WORDS = {"mean": "mean", "p50": "P50", "p90": "P90", "p99": "P99"}
# axis labels, in words with units, of the columns the notebooks draw
LABELS = {
    "workload.priority.tiers": "priority tiers K",
    "workload.arrival.rate": "arrival rate (requests/s)",
    "workload.arrival.cv": "burstiness (CV of inter-arrival times)",
    "workload.num_requests": "requests per run",
    "workload.priority.sampler": "tier mix",
    "scheduler": "scheduler",
    "tier": "priority tier (0 = most critical)",
    "time": "simulated time (s)",
    "instances": "instances running",
    "migrations": "migrations started",
    "cost.cost_per_latency": "cost-per-latency (GPU-hours x s per request)",
    "cost.cost_per_request": "cost per request (GPU-hours)",
    "cost.average_instances": "instances on average",
    "cost.gpu_hours": "GPU-hours",
    "requests.migrations": "migrations per run",
    "migration.aborted": "aborted migrations per run",
    "migration.churn.requests_migrated_3_or_more": "requests migrated 3+ times per run",
    "migration.churn.reversals": "reversals (A to B to A) per run",
    "migration.migrating_fraction.mean": "share of time migrating (mean over instances)",
}


def axis_label(column: str) -> str:
    """An axis label in words with units for an index, aggregate or table column
    (``latency_by_tier.0.prefill_latency.p99`` -> "P99 prefill latency (s), tier 0")."""
    if column in LABELS:
        return LABELS[column]
    latency = _LATENCY.fullmatch(column)
    if latency and latency.group(2) in _LATENCY_WORDS:
        tier, metric, stat = latency.groups()
        words = f"{_STAT_WORDS[stat]} {_LATENCY_WORDS[metric]} (s)"
        return f"{words}, tier {tier}" if tier is not None else words
    return column.replace(".", " ").replace("_", " ")


def integer_ticks(ax, values: Sequence[Any]) -> None:
    """Whole-number x ticks for a count axis (K, tiers): every value if a dozen or fewer."""
    from matplotlib.ticker import FixedLocator, MaxNLocator

    values = sorted({v for v in values if v == v})
    if values and len(values) <= 12 and all(float(v).is_integer() for v in values):
        ax.xaxis.set_major_locator(FixedLocator(values))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.0f}"))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _is_count(frame: pd.DataFrame, column: str) -> bool:
    return column in ("workload.priority.tiers", "tier") or pd.api.types.is_integer_dtype(frame[column])


@dataclass
class Sweep:
    """A finished sweep on disk: its index, aggregate, description and kept tables."""

    root: Path
    meta: dict[str, Any]
    index: pd.DataFrame  # the runs with results (failed runs are listed in meta)
    aggregate: pd.DataFrame

    @cached_property
    def geometric(self) -> pd.DataFrame:
        """The aggregate as geometric means over seeds with log-scale intervals, for figures
        on a log axis (``aggregate(..., log=True)``): never below zero there."""
        return aggregate(self.index, log=True)

    @property
    def columns(self) -> list[str]:
        """The coordinate columns (axes, zip keys, variant groups, part)."""
        return list(self.meta["columns"])

    def table(self, name: str, where: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """A kept per-run table of every run matching ``where``, concatenated, with the run's
        coordinates and seed as leading columns: from the run folders of a full sweep, or
        from the tables a compact copy kept (an error names the runs it did not keep)."""
        runs = select(self.index, where)
        if (self.root / "runs").is_dir():
            store = RunStore(self.root / "runs")
            rows = {key: store.table(key, name) for key in runs["config_hash"]}
        else:
            rows = self._kept_table(name, runs)
        frames = []
        for _, run in runs.iterrows():
            frame = rows[run["config_hash"]].copy()  # two runs of one config get a frame each
            for column in reversed([*self.columns, "seed"]):
                frame.insert(0, column, run[column])
            frames.append(frame)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def _kept_table(self, name: str, runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
        """Per run key, its rows of table ``name`` in a compact copy (``sim.presentation.compact``)."""
        from sim.presentation.compact import RUN_KEY, TABLES, kept_runs

        rebuild = f"run llumsim sweep {self.meta.get('source', 'its grid')} for them"
        path = self.root / TABLES / f"{name}.parquet"
        if not path.is_file():
            raise FileNotFoundError(
                f"{path}: no run folders and table {name!r} not kept by this compact copy "
                f"(kept: {self.meta.get('tables') or 'none'}); {rebuild}"
            )
        subset = self.meta["compact"]["tables"]["where"]
        missing = sorted(set(runs["config_hash"]) - set(kept_runs(self.index, subset)["config_hash"]))
        if missing:
            raise FileNotFoundError(
                f"{path}: keeps the runs where {subset} only; {len(missing)} selected run(s) "
                f"are not among them (e.g. {missing[0]}); {rebuild}"
            )
        table = pd.read_parquet(path)
        groups = dict(iter(table.groupby(RUN_KEY, sort=False)))
        empty = table.iloc[:0].drop(columns=RUN_KEY)
        return {
            key: groups[key].drop(columns=RUN_KEY).reset_index(drop=True) if key in groups else empty
            for key in runs["config_hash"]
        }


def results_dir(results: str | Path | None = None) -> Path:
    """``results``, else $LLUMSIM_RESULTS, else the repository's ``results/``."""
    if results is not None:
        return Path(results)
    if os.environ.get(RESULTS_ENV):
        return Path(os.environ[RESULTS_ENV])
    return Path(__file__).resolve().parents[2] / "results"


def study_folder(study: str | Path, results: str | Path | None = None) -> Path:
    """Where a study's results are: ``study`` itself if it is a path (a ``Path``, or a string
    with a ``/``: e.g. the ``--out`` folder of your own sweep), else the folder of that name
    under ``results_dir(results)`` (``"k_study"``: the committed study)."""
    if isinstance(study, Path) or "/" in study or os.sep in study:
        return Path(study)
    return results_dir(results) / study


def _missing(root: Path, study: str | Path, what: str, command: str) -> FileNotFoundError:
    """The error for a study folder without results, with the command that makes them."""
    grid = f"experiments/grids/{study}.yaml" if root.name == str(study) else "GRID.yaml"
    return FileNotFoundError(f"{root}: no {what} results; run {command} {grid} --out {root}")


def open_sweep(study: str | Path, results: str | Path | None = None) -> Sweep:
    """Read a study folder (``study_folder``) as written by ``llumsim sweep`` or committed by
    ``sim.presentation.compact`` (no aggregate: it is computed from the index)."""
    root = study_folder(study, results)
    if not (root / "sweep.json").is_file():
        raise _missing(root, study, "sweep", "llumsim sweep")
    index = ok_rows(pd.read_parquet(root / "index.parquet"))  # runs with results
    stored = root / "aggregate.parquet"
    return Sweep(
        root=root,
        meta=json.loads((root / "sweep.json").read_text()),
        index=index,
        aggregate=pd.read_parquet(stored) if stored.is_file() else aggregate(index),
    )


def busiest_run(table: pd.DataFrame, sweep: Sweep) -> pd.DataFrame:
    """The rows of the one run (coordinates and seed) with the most rows in a kept table,
    e.g. the run with the most migrations."""
    keys = [*sweep.columns, "seed"]
    sizes = table.groupby(keys, dropna=False, sort=False).size()
    if sizes.empty:
        return table
    return select(table, dict(zip(keys, sizes.idxmax())))


def by_tier(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-tier columns (``latency_by_tier.<t>.<rest>``) as one row per tier: the other
    columns repeated, ``tier``, and ``<rest>`` (e.g. ``prefill_latency.p99`` with its
    ``.ci_low``/``.ci_high``). Tiers a cell does not have are dropped."""
    tiered = {c: _TIER.fullmatch(c) for c in frame.columns}
    tiered = {c: m for c, m in tiered.items() if m}
    keep = [
        c
        for c in frame.columns
        if c not in tiered and not c.startswith(("latency.", "latency_by_tier."))
    ]
    tiers = sorted({int(m.group(1)) for m in tiered.values()})
    parts = []
    for tier in tiers:
        columns = {c: m.group(2) for c, m in tiered.items() if int(m.group(1)) == tier}
        part = frame[keep].copy()
        part.insert(len(keep), "tier", tier)
        part = pd.concat([part, frame[list(columns)].rename(columns=columns)], axis=1)
        parts.append(
            part.dropna(
                subset=[c for c in columns.values() if not c.endswith(("ci_low", "ci_high"))],
                how="all",
            )
        )
    return (
        pd.concat(parts, ignore_index=True)
        if parts
        else frame[keep].assign(tier=pd.Series(dtype=int))
    )


def _panels(frame: pd.DataFrame, col: str | None, max_cols: int = 4, size=(4.2, 3.2)):
    keys = list(dict.fromkeys(frame[col])) if col else [None]
    ncols = min(len(keys), max_cols)
    nrows = -(-len(keys) // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False, layout="constrained"
    )
    for ax in axes.flat[len(keys) :]:
        ax.set_visible(False)
    return fig, list(zip(keys, axes.flat))


def plain_log_axis(ax) -> None:
    """A log-scale y axis labelled 2, 5, 10, 20 … rather than 2×10⁰ (latency readers want
    seconds); within less than a decade every minor tick is labelled."""

    def minor(value: float, _) -> str:
        low, high = ax.get_ylim()
        return f"{value:g}" if high < 10 * low or f"{value:.0e}"[0] in "25" else ""

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(minor))


def _legend(fig: Figure, hue: str | None) -> None:
    """One legend for every panel (a ``hue`` value has one colour across them), outside the
    axes on the right of a constrained-layout figure: inside a panel it covered points (the
    per-tier chart's K = 1 point), and constrained layout makes room for it in the figure."""
    if not hue:
        return
    entries: dict[str, Any] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if entries:
        fig.legend(list(entries.values()), list(entries), title=axis_label(hue),
                   loc="outside right upper", fontsize=8, title_fontsize=8)


def _one_row_per_x(group: pd.DataFrame, x: str, name: Any) -> None:
    """A line through several cells per x would zigzag between them: refuse, and say which
    columns still vary (select one value of them, or use them as hue/col)."""
    repeated = group[group[x].duplicated(keep=False)]
    if repeated.empty:
        return
    varying = [
        c
        for c in repeated.columns
        if c != x
        and not c.startswith(("latency", "cost", "seeds"))
        and repeated[c].nunique(dropna=False) > 1
    ][:6]
    raise ValueError(
        f"line {_label(name)!r}: several rows per {x}; fix or split these columns first: {', '.join(varying)}"
    )


def _label(value: Any) -> str:
    return (
        "(none)" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
    )


def plot_lines(
    frame: pd.DataFrame,
    x: str,
    y: str,
    hue: str | None = None,
    col: str | None = None,
    logy: bool = False,
    title: str | None = None,
    ylabel: str | None = None,
    xlabel: str | None = None,
) -> Figure:
    """``y`` against ``x``, one line per ``hue``, one panel per ``col``, with the 95%
    interval (``y.ci_low``..``y.ci_high``) as error bars where the frame has it. Axes are
    labelled in words (``label``) unless given; a count ``x`` (K, tier) gets whole ticks."""
    fig, panels = _panels(frame, col)
    # one colour per hue value across every panel, in order of first appearance
    colours = {value: f"C{i}" for i, value in enumerate(dict.fromkeys(frame[hue]))} if hue else {}
    for key, ax in panels:
        part = frame if col is None else frame[frame[col] == key]
        groups = part.groupby(hue, sort=False, dropna=False) if hue else [(None, part)]
        for name, group in groups:
            group = group.sort_values(x)
            _one_row_per_x(group, x, name)
            label = None if hue is None else _label(name)
            ax.errorbar(
                group[x],
                group[y],
                yerr=_errors(group, y, log=logy),
                marker="o",
                ms=3,
                capsize=2,
                lw=1.2,
                label=label,
                color=colours.get(name),
            )
        ax.set_xlabel(xlabel or axis_label(x))
        ax.set_ylabel(ylabel or axis_label(y))
        if _is_count(part, x):
            integer_ticks(ax, part[x])
        if logy:
            plain_log_axis(ax)
        if col is not None:
            ax.set_title(f"{axis_label(col)}: {_label(key)}", fontsize=9)
        ax.grid(alpha=0.3)
    _legend(fig, hue)
    if title:
        fig.suptitle(title)
    return fig


def plot_frontier(
    frame: pd.DataFrame, x: str, y: str, hue: str, annotate: str | None = None, logy: bool = False
) -> Figure:
    """Each cell as a point (``x``, ``y``) with both intervals as error bars, one colour per
    ``hue``, its Pareto front (lower ``x`` and lower ``y`` both better) joined by a line."""
    fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
    for name, group in frame.groupby(hue, sort=False):
        xerr = _errors(group, x)
        yerr = _errors(group, y, log=logy)
        bars = ax.errorbar(
            group[x], group[y], xerr=xerr, yerr=yerr, fmt="o", ms=4, capsize=2, label=_label(name)
        )
        front = pareto_front(group, x, y)
        ax.plot(front[x], front[y], color=bars[0].get_color(), alpha=0.6)
        if annotate:
            for _, row in group.iterrows():
                ax.annotate(
                    _label(row[annotate]),
                    (row[x], row[y]),
                    fontsize=6,
                    xytext=(3, 3),
                    textcoords="offset points",
                )
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(y))
    if logy:
        plain_log_axis(ax)
    _legend(fig, hue)
    ax.grid(alpha=0.3)
    return fig


def _errors(frame: pd.DataFrame, column: str, log: bool = False) -> np.ndarray | None:
    """Error bar lengths below and above ``column`` from its interval (None without one).
    On a log axis a lower bound ≤ 0 is refused, not clipped: it is an arithmetic interval of
    a heavy tail, and the log-scale one (``Sweep.geometric``) is what that axis can show."""
    if f"{column}.ci_low" not in frame.columns:
        return None
    crossing = int((frame[f"{column}.ci_low"] <= 0).sum()) if log else 0
    if crossing:
        raise ValueError(
            f"{column}: {crossing} interval(s) reach 0 or below on a log axis; draw the "
            "geometric aggregate (Sweep.geometric, sim.sweep.stats.aggregate(index, log=True))"
        )
    low = (frame[column] - frame[f"{column}.ci_low"]).clip(lower=0).fillna(0)
    high = (frame[f"{column}.ci_high"] - frame[column]).clip(lower=0).fillna(0)
    return np.vstack([low.to_numpy(), high.to_numpy()])


def pareto_front(frame: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """The rows no other row beats on both ``x`` and ``y`` (lower is better), by ``x``."""
    ordered = frame.sort_values([x, y])
    best = np.inf
    keep = []
    for index, value in ordered[y].items():
        if value < best:
            keep.append(index)
            best = value
    return ordered.loc[keep]


def plot_downtime_vs_length(
    migrations: pd.DataFrame, block_size: int = 16, hue: str | None = None
) -> Figure:
    """Downtime of committed migrations against the migrated sequence length (tokens), with
    the median per length bin."""
    committed = migrations[migrations["outcome"] == "committed"].copy()
    committed["tokens"] = committed["blocks"] * block_size
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    groups = committed.groupby(hue, sort=False) if hue else [(None, committed)]
    for name, group in groups:
        points = ax.scatter(
            group["tokens"],
            group["downtime"] * 1000,
            s=4,
            alpha=0.3,
            label=None if hue is None else _label(name),
        )
        if len(group) >= 2:
            edges = np.unique(np.quantile(group["tokens"], np.linspace(0, 1, 11)))
            bins = pd.cut(group["tokens"], edges, include_lowest=True)
            median = group.groupby(bins, observed=True).agg(
                tokens=("tokens", "median"), downtime=("downtime", "median")
            )
            ax.plot(
                median["tokens"],
                median["downtime"] * 1000,
                color=points.get_facecolor()[0][:3],
                lw=2,
            )
    ax.set_xlabel("migrated sequence length (tokens)")
    ax.set_ylabel("downtime (ms)")
    _legend(fig, hue)
    ax.grid(alpha=0.3)
    return fig


def plot_over_time(
    frame: pd.DataFrame,
    time: str,
    y: str,
    hue: str | None = None,
    step: bool = True,
    title: str | None = None,
) -> Figure:
    """A time series (e.g. a kept ``cluster`` table's ``instances``), one line per ``hue``."""
    fig, ax = plt.subplots(figsize=(9, 3.5), layout="constrained")
    groups = frame.groupby(hue, sort=False) if hue else [(None, frame)]
    for name, group in groups:
        group = group.sort_values(time)
        label = None if hue is None else _label(name)
        if step:
            ax.step(group[time], group[y], where="post", label=label)
        else:
            ax.plot(group[time], group[y], label=label)
    ax.set_xlabel(axis_label(time))
    ax.set_ylabel(axis_label(y))
    _legend(fig, hue)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    return fig


def migrations_over_time(
    migrations: pd.DataFrame, bin_seconds: float = 10.0, by: Sequence[str] = ("outcome",)
) -> pd.DataFrame:
    """Migrations started per ``bin_seconds`` window, counted by ``by`` (a long frame with
    ``time`` = the window's start and ``migrations``). Every window from 0 to the last
    start is there for every ``by`` value, empty ones as 0, so a step plot of it shows the
    lulls instead of drawing across them."""
    by = list(by)
    started = migrations.assign(time=(migrations["start"] // bin_seconds) * bin_seconds)
    counts = started.groupby([*by, "time"], sort=True).size()
    last = started["time"].max() if len(started) else 0.0
    windows = np.arange(0.0, last + bin_seconds / 2, bin_seconds)
    keys = started[by].drop_duplicates().sort_values(by).itertuples(index=False, name=None)
    full = pd.MultiIndex.from_tuples(
        [(*key, window) for key in keys for window in windows], names=[*by, "time"]
    )
    return counts.reindex(full, fill_value=0).rename("migrations").reset_index()


def serving_figure(geometric: pd.DataFrame) -> Figure | None:
    """Fig. 11's view of a ``paper`` sweep's geometric aggregate (``Sweep.geometric``): P99
    prefill latency against the arrival rate, one panel per serving trace, one line per
    scheduler (log scale: the baselines' tails grow by orders of magnitude). None if the
    sweep has no serving parts."""
    serving = geometric[geometric["part"].astype(str).str.startswith("serving")]
    if serving.empty:
        return None
    return plot_lines(
        serving,
        x="workload.arrival.rate",
        y="latency.prefill_latency.p99",
        hue="scheduler",
        col="part",
        logy=True,
        title="Serving (Fig. 11 set-ups): P99 prefill latency against the arrival rate "
        "(geometric mean over seeds, 95% interval)",
    )


def paper_serving_figure(geometric: pd.DataFrame, path: Path) -> Path | None:
    """``serving_figure`` as ``path``; None (nothing written) without serving parts."""
    fig = serving_figure(geometric)
    if fig is None:
        return None
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=90, format="png"))
    finally:
        plt.close(fig)
    return path
