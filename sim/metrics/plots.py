"""Plots people would rather look at than read: latency CDFs, the cluster over time, and
migrations over time with their downtime."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def _save(fig: Figure, path: Path, title: str) -> Path:
    fig.suptitle(textwrap.fill(title, 110), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


CDF_PANELS = (
    ("prefill_latency", "prefill latency incl. queueing (s)"),
    ("decode_latency_per_token", "decode latency per output token (s)"),
    ("e2e_latency", "end-to-end latency (s)"),
)


def plot_latency_cdfs(requests: pd.DataFrame, path: Path, title: str) -> Path:
    """One CDF panel per latency metric, one line per tier (or one line overall)."""
    finished = requests[requests["status"] == "finished"]
    tiers = sorted(finished["tier"].unique())
    fig, axes = plt.subplots(1, len(CDF_PANELS), figsize=(15, 4))
    for ax, (column, label) in zip(axes, CDF_PANELS):
        groups = [("all", finished)] if len(tiers) <= 1 else [
            (f"tier {t}", finished[finished["tier"] == t]) for t in tiers
        ]
        for name, group in groups:
            values = np.sort(group[column].dropna().to_numpy())
            if values.size:
                ax.plot(values, np.arange(1, values.size + 1) / values.size, label=name)
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("fraction of requests")
        ax.grid(True, alpha=0.3)
        if len(groups) > 1:
            ax.legend(fontsize=8)
    return _save(fig, path, title)


def _heatmap(ax, instances: pd.DataFrame, values: pd.Series, label: str, vmax: float | None = None):
    """``values`` (one per ``instances`` row) as an instance x time heatmap: one row per
    instance, blank where an instance was not running."""
    grid = instances.assign(value=values).pivot_table(
        index="instance", columns="time", values="value", aggfunc="last"
    )
    times = grid.columns.to_numpy(dtype=float)
    step = np.diff(times).min() if len(times) > 1 else 1.0
    edges = np.append(times, times[-1] + step)
    rows = np.arange(len(grid.index) + 1) - 0.5
    mesh = ax.pcolormesh(edges, rows, np.ma.masked_invalid(grid.to_numpy(dtype=float)),
                         shading="flat", cmap="viridis", vmin=0, vmax=vmax)
    # the colorbar sits just outside the axes instead of taking width from them, so the
    # heatmaps keep the width (and time scale) of the panel below them
    ax.figure.colorbar(mesh, cax=ax.inset_axes((1.01, 0.0, 0.015, 1.0)), label=label)
    ax.set_ylabel("instance")
    if len(grid.index) <= 16:
        ax.set_yticks(range(len(grid.index)), [str(i) for i in grid.index], fontsize=6)


def timeline_figure(instances: pd.DataFrame, cluster: pd.DataFrame, capacity_blocks: int) -> Figure:
    """KV usage and queue length of every instance over time as heatmaps (one row per
    instance: sixteen overlaid lines would hide which instance is which), then the instance
    count and fragmentation, all three on one time axis of one width."""
    fig, axes = plt.subplots(3, 1, figsize=(12, 8), sharex=True, height_ratios=(2, 2, 1.2))
    _heatmap(axes[0], instances, instances["used_blocks"] / capacity_blocks, "KV blocks used (share)", 1.0)
    _heatmap(axes[1], instances, instances["queue_length"], "queued requests")
    axes[2].plot(cluster["time"], cluster["instances"], label="instances", color="black")
    twin = axes[2].twinx()
    twin.plot(cluster["time"], cluster["fragmented_fraction"], color="tab:red", lw=0.7)
    twin.set_ylabel("fragmented memory\n(share of all KV blocks)", color="tab:red")
    axes[2].set_ylabel("instances running")
    axes[2].set_xlabel("simulated time (s)")
    axes[2].grid(True, alpha=0.3)
    return fig


def plot_cluster_timeline(
    instances: pd.DataFrame, cluster: pd.DataFrame, capacity_blocks: int, path: Path, title: str
) -> Path:
    """``timeline_figure`` as ``path``."""
    return _save(timeline_figure(instances, cluster, capacity_blocks), path, title)


def plot_migrations(migrations: pd.DataFrame, end_time: float, path: Path, title: str) -> Path:
    """Migrations started per time bin by outcome (aborts by reason), and the downtime
    distribution of committed ones: is migration steady or bursty, and what does it cost?"""
    fig, (over_time, downtime) = plt.subplots(1, 2, figsize=(14, 4))
    edges = np.linspace(0.0, max(end_time, 1e-9), 61)
    labels = migrations["outcome"].where(
        migrations["outcome"] != "aborted", "aborted: " + migrations["abort_reason"]
    )
    for label in sorted(labels.unique(), key=lambda name: (name != "committed", name)):
        counts, _ = np.histogram(migrations.loc[labels == label, "start"], bins=edges)
        over_time.step(edges[:-1], counts, where="post", label=label, lw=1.0)
    over_time.set_xlabel("simulated time (s)")
    over_time.set_ylabel(f"migrations started per {edges[1]:.3g} s")
    over_time.legend(fontsize=8)
    committed_ms = migrations.loc[migrations["outcome"] == "committed", "downtime"].dropna() * 1e3
    if len(committed_ms):
        downtime.hist(committed_ms, bins=40, color="tab:blue")
        for stat, value, style in (("mean", committed_ms.mean(), "--"),
                                   ("p99", np.percentile(committed_ms, 99), ":")):
            downtime.axvline(value, color="black", ls=style, lw=1, label=f"{stat} {value:.1f} ms")
        downtime.legend(fontsize=8)
    downtime.set_xlabel("downtime of committed migrations (ms)")
    downtime.set_ylabel("migrations")
    for ax in (over_time, downtime):
        ax.grid(True, alpha=0.3)
    return _save(fig, path, title)


def headroom_columns(cluster: pd.DataFrame) -> list[str]:
    """cluster.csv's per-tier headroom columns (adaptive-headroom runs only)."""
    return [column for column in cluster.columns if column.startswith("headroom_tier")]


def plot_headroom(cluster: pd.DataFrame, path: Path, title: str) -> Path:
    """Each tier's adaptive headroom over time, as a fraction of an instance's capacity."""
    fig, ax = plt.subplots(figsize=(12, 4))
    for column in headroom_columns(cluster):
        ax.step(cluster["time"], cluster[column], where="post", label=column.replace("headroom_", ""))
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("headroom (fraction of M)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path, title)
