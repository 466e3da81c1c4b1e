"""What the notebooks call: open a sweep's results, reshape them, and draw them with their
confidence intervals. Notebooks stay thin — a call per figure — so the logic is tested here
and a notebook cannot quietly drift from the package.

A sweep's aggregate has one row per cell: coordinate columns, ``seeds``, and per metric
``<metric>``, ``<metric>.ci_low``, ``<metric>.ci_high`` (``sim.sweep.stats``). Every plot
takes such a frame and column names; where ``.ci_low``/``.ci_high`` exist it draws them.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter
import numpy as np
import pandas as pd

from sim.files import atomic_write
from sim.sweep.index import ok_rows
from sim.sweep.store import RunStore

RESULTS_ENV = "LLUMSIM_RESULTS"  # folder holding sweep results (default: <repo>/results)
SMOKE_ENV = "LLUMSIM_SMOKE"  # set: open <name>_smoke instead of <name> (the notebooks' test)
_TIER = re.compile(r"latency_by_tier\.(\d+)\.(.+)")


@dataclass
class Sweep:
    """A finished sweep on disk: its index, aggregate, description and kept tables."""

    root: Path
    meta: dict[str, Any]
    index: pd.DataFrame  # the runs with results (failed runs are listed in meta)
    aggregate: pd.DataFrame

    @property
    def columns(self) -> list[str]:
        """The coordinate columns (axes, zip keys, variant groups, part)."""
        return list(self.meta["columns"])

    def table(self, name: str, where: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """A kept per-run table of every run matching ``where``, concatenated, with the run's
        coordinates and seed as leading columns."""
        runs = select(self.index, where)
        store = RunStore(self.root / "runs")
        frames = []
        for _, run in runs.iterrows():
            frame = store.table(run["config_hash"], name)
            for column in reversed([*self.columns, "seed"]):
                frame.insert(0, column, run[column])
            frames.append(frame)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def results_dir(results: str | Path | None = None) -> Path:
    """``results``, else $LLUMSIM_RESULTS, else the repository's ``results/``."""
    if results is not None:
        return Path(results)
    if os.environ.get(RESULTS_ENV):
        return Path(os.environ[RESULTS_ENV])
    return Path(__file__).resolve().parents[2] / "results"


def open_sweep(name: str, results: str | Path | None = None) -> Sweep:
    """Read ``<results>/<name>/`` as written by ``llumsim sweep`` (``_smoke`` under $LLUMSIM_SMOKE)."""
    if os.environ.get(SMOKE_ENV) and not name.endswith("_smoke"):
        name = f"{name}_smoke"
    root = results_dir(results) / name
    if not (root / "sweep.json").is_file():
        raise FileNotFoundError(
            f"{root}: no sweep results; run llumsim sweep experiments/grids/{name}.yaml"
        )
    return Sweep(
        root=root,
        meta=json.loads((root / "sweep.json").read_text()),
        index=ok_rows(pd.read_parquet(root / "index.parquet")),  # runs with results
        aggregate=pd.read_parquet(root / "aggregate.parquet"),
    )


def select(frame: pd.DataFrame, where: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Rows whose columns equal ``where``'s values (a list: any of them)."""
    mask = pd.Series(True, index=frame.index)
    for column, value in (where or {}).items():
        values = list(value) if isinstance(value, (list, tuple, set)) else [value]
        missing = [v for v in values if v is None or (isinstance(v, float) and np.isnan(v))]
        mask &= frame[column].isin([v for v in values if v not in missing]) | (
            frame[column].isna() if missing else False
        )
    return frame[mask]


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
        nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False
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


def _legend(ax, hue: str | None, fontsize: int = 8) -> None:
    if hue and ax.get_legend_handles_labels()[0]:
        ax.legend(title=hue, fontsize=fontsize, title_fontsize=fontsize)


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
) -> Figure:
    """``y`` against ``x``, one line per ``hue``, one panel per ``col``, with the 95%
    interval (``y.ci_low``..``y.ci_high``) as error bars where the frame has it."""
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
                yerr=_errors(group, y),
                marker="o",
                ms=3,
                capsize=2,
                lw=1.2,
                label=label,
                color=colours.get(name),
            )
        ax.set_xlabel(x)
        ax.set_ylabel(ylabel or y)
        if logy:
            plain_log_axis(ax)
        if col is not None:
            ax.set_title(f"{col} = {_label(key)}", fontsize=9)
        _legend(ax, hue, fontsize=7)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_frontier(
    frame: pd.DataFrame, x: str, y: str, hue: str, annotate: str | None = None, logy: bool = False
) -> Figure:
    """Each cell as a point (``x``, ``y``) with both intervals as error bars, one colour per
    ``hue``, its Pareto front (lower ``x`` and lower ``y`` both better) joined by a line."""
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for name, group in frame.groupby(hue, sort=False):
        xerr = _errors(group, x)
        yerr = _errors(group, y)
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
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if logy:
        ax.set_yscale("log")
    _legend(ax, hue)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _errors(frame: pd.DataFrame, column: str):
    if f"{column}.ci_low" not in frame.columns:
        return None
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
    fig, ax = plt.subplots(figsize=(6, 4))
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
    _legend(ax, hue)
    ax.grid(alpha=0.3)
    fig.tight_layout()
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
    fig, ax = plt.subplots(figsize=(8, 3.5))
    groups = frame.groupby(hue, sort=False) if hue else [(None, frame)]
    for name, group in groups:
        group = group.sort_values(time)
        label = None if hue is None else _label(name)
        if step:
            ax.step(group[time], group[y], where="post", label=label)
        else:
            ax.plot(group[time], group[y], label=label)
    ax.set_xlabel(f"{time} (simulated s)")
    ax.set_ylabel(y)
    _legend(ax, hue)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def migrations_over_time(
    migrations: pd.DataFrame, bin_seconds: float = 10.0, by: Sequence[str] = ("outcome",)
) -> pd.DataFrame:
    """Migrations started per ``bin_seconds`` window, counted by ``by`` (a long frame with
    ``time`` = the window's start and ``migrations``)."""
    started = migrations.assign(time=(migrations["start"] // bin_seconds) * bin_seconds)
    counts = started.groupby([*by, "time"], sort=True).size().rename("migrations").reset_index()
    return counts


def paper_serving_figure(aggregate: pd.DataFrame, path: Path) -> Path | None:
    """Fig. 11's view of a ``paper`` sweep: P99 prefill latency against the arrival rate, one
    panel per serving trace, one line per scheduler (log scale: the baselines' tails grow
    by orders of magnitude). None if the sweep has no serving parts."""
    serving = aggregate[aggregate["part"].astype(str).str.startswith("serving")]
    if serving.empty:
        return None
    fig = plot_lines(
        serving,
        x="workload.arrival.rate",
        y="latency.prefill_latency.p99",
        hue="scheduler",
        col="part",
        logy=True,
        title="Serving (Fig. 11 set-ups): P99 prefill latency against the arrival rate",
        ylabel="P99 prefill (s)",
    )
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=90, format="png"))
    finally:
        plt.close(fig)
    return path
