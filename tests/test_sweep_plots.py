"""The notebooks' plotting helpers: axes in words with units, whole ticks for counts,
every time bin present, speed-ups on a log axis, run timelines as heatmaps over instances
on one time axis."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sim.metrics.plots import _heatmap, timeline_figure  # noqa: E402
from sim.sweep.findings import plot_speedups_vs_k  # noqa: E402
from sim.sweep.plots import axis_label, migrations_over_time, plot_lines  # noqa: E402

K = "workload.priority.tiers"


def test_axis_labels_are_words_with_units():
    assert axis_label("latency_by_tier.0.prefill_latency.p99") == "P99 prefill latency (s), tier 0"
    assert axis_label("e2e_latency.mean") == "mean end-to-end latency (s)"
    assert axis_label("workload.arrival.rate") == "arrival rate (requests/s)"
    assert axis_label(K) == "priority tiers K"


def test_k_is_ticked_at_whole_numbers_only():
    frame = pd.DataFrame({K: [1, 2, 3, 4], "latency.e2e_latency.p99": [1.0, 2.0, 3.0, 4.0]})
    fig = plot_lines(frame, x=K, y="latency.e2e_latency.p99")
    ax = fig.axes[0]
    assert list(ax.get_xticks()) == [1, 2, 3, 4]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("priority tiers K", "P99 end-to-end latency (s)")
    plt.close(fig)


def test_migrations_over_time_keeps_the_empty_bins_as_zeros():
    migrations = pd.DataFrame(
        {"start": [1.0, 2.0, 35.0, 36.0, 12.0], "outcome": ["committed"] * 4 + ["aborted"]}
    )
    counts = migrations_over_time(migrations, bin_seconds=10)
    committed = counts[counts["outcome"] == "committed"]
    assert committed["time"].tolist() == [0.0, 10.0, 20.0, 30.0]
    assert committed["migrations"].tolist() == [2, 0, 0, 2]  # 10-30 s had none: drawn as 0
    aborted = counts[counts["outcome"] == "aborted"]
    assert aborted["migrations"].tolist() == [0, 1, 0, 0]
    assert counts["migrations"].sum() == len(migrations)


def test_speed_ups_are_drawn_per_mix_and_load_on_a_log_axis_with_whole_k_ticks():
    rows = [
        {"measure": measure, "scheduler": mode, "workload.priority.sampler": mix,
         "workload.arrival.rate": rate, K: k, "seeds": 10, "speedup": 2.0, "ci_low": 1.5, "ci_high": 2.5}
        for measure in ("tier 0 P99 prefill", "all requests P99 prefill")
        for mode in ("llumnix", "llumnix-headroom")
        for mix in ("uniform", "enterprise")
        for rate in (5.0, 7.5)
        for k in range(1, 11)
    ]
    fig = plot_speedups_vs_k(pd.DataFrame(rows))
    panels = fig.axes
    assert len(panels) == 4 and {ax.get_yscale() for ax in panels} == {"log"}
    assert list(panels[0].get_xticks()) == list(range(1, 11))
    assert len(panels[0].get_lines()) == 2 * 2 + 1  # modes x measures, and the baseline's 1
    plt.close(fig)


def test_a_timeline_heatmap_has_a_row_per_instance_blank_where_it_was_not_running():
    instances = pd.DataFrame(
        {"time": [0.0, 0.0, 1.0, 1.0, 2.0], "instance": [0, 1, 0, 1, 0], "used_blocks": [0, 10, 20, 30, 40]}
    )
    fig, ax = plt.subplots()
    _heatmap(ax, instances, instances["used_blocks"] / 40, "KV used (share)", 1.0)
    grid = ax.collections[0].get_array()
    assert grid.shape == (2, 3)  # instances x samples
    assert grid[0].tolist() == [0.0, 0.5, 1.0] and grid.mask[1].tolist() == [False, False, True]
    plt.close(fig)


def test_a_capacity_index_is_found_by_name_and_its_per_gpu_column_by_its_name(tmp_path):
    from sim.sweep.plots import capacity_column, open_capacity

    with pytest.raises(FileNotFoundError, match="no capacity results"):
        open_capacity("k_capacity", tmp_path)
    (tmp_path / "k_capacity").mkdir()
    cells = pd.DataFrame({K: [1, 2], "scheduler": ["llumnix"] * 2, "rate_per_gpu": [0.5, 0.4],
                          "rate_per_gpu.ci_low": [0.4, 0.3], "rate_per_gpu.ci_high": [0.6, 0.5], "rate": [2.0, 1.6]})
    cells.to_parquet(tmp_path / "k_capacity" / "index.parquet")
    assert capacity_column(open_capacity("k_capacity", tmp_path)) == "rate_per_gpu"
    with pytest.raises(KeyError, match="one per-GPU capacity column"):
        capacity_column(cells.drop(columns="rate_per_gpu"))


def test_the_timeline_heatmaps_and_the_panel_below_share_one_time_axis():
    times = np.arange(0.0, 10.0)
    instances = pd.DataFrame({"time": np.repeat(times, 2), "instance": [0, 1] * 10,
                              "used_blocks": np.arange(20), "queue_length": np.arange(20) % 3})
    cluster = pd.DataFrame({"time": times, "instances": 2, "fragmented_fraction": 0.1})
    fig = timeline_figure(instances, cluster, capacity_blocks=20)
    fig.tight_layout()
    fig.canvas.draw()
    heat_kv, heat_queue, bottom = fig.axes[:3]
    for heatmap in (heat_kv, heat_queue):  # the colorbars once took width from the heatmaps
        assert heatmap.get_position().x0 == pytest.approx(bottom.get_position().x0)
        assert heatmap.get_position().x1 == pytest.approx(bottom.get_position().x1)
        assert heatmap.get_xlim() == bottom.get_xlim()
    plt.close(fig)
