"""The notebooks' plotting helpers: axes in words with units, whole ticks for counts,
every time bin present, speed-ups on a log axis, run timelines as heatmaps over instances
on one time axis; no interval on a log axis reaches zero, no legend covers a point or
leaves the figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from matplotlib.collections import LineCollection  # noqa: E402

from sim.metrics.plots import _heatmap, timeline_figure  # noqa: E402
from sim.studies.findings import plot_speedups_vs_k  # noqa: E402
from sim.presentation.plots import (  # noqa: E402
    axis_label,
    by_tier,
    migrations_over_time,
    open_sweep,
    plot_frontier,
    plot_lines,
    select,
    serving_figure,
    study_folder,
)

K = "workload.priority.tiers"


def interval_ends_on_log_axes(fig) -> np.ndarray:
    """Every coordinate along a log axis at which an error bar or a band is drawn."""
    ends = []
    for ax in fig.axes:
        for dim, scale in enumerate((ax.get_xscale(), ax.get_yscale())):
            if scale != "log":
                continue
            for drawn in ax.collections:
                shapes = drawn.get_segments() if isinstance(drawn, LineCollection) else [p.vertices for p in drawn.get_paths()]
                ends += [np.asarray(shape)[:, dim] for shape in shapes if len(shape)]
    return np.concatenate(ends) if ends else np.array([])


def legend_faults(fig) -> tuple[int, list]:
    """How many drawn points the legends cover, and the legends that reach outside the figure."""
    fig.canvas.draw()
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    boxes = [legend.get_window_extent() for legend in legends]
    covered = 0
    for ax in fig.axes:
        for line in ax.get_lines():
            for x, y in line.get_transform().transform(line.get_xydata()):
                covered += any(box.contains(x, y) for box in boxes)
    outside = [box for box in boxes if not fig.bbox.padded(1).contains(box.x0, box.y0)
               or not fig.bbox.padded(1).contains(box.x1, box.y1)]
    return covered, outside


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


def test_a_study_is_a_name_under_the_results_folder_or_a_folder_given_as_a_path(tmp_path):
    assert study_folder("k_study", tmp_path) == tmp_path / "k_study"  # a notebook's default
    assert study_folder(f"{tmp_path}/mine", "elsewhere") == study_folder(tmp_path / "mine") == tmp_path / "mine"
    with pytest.raises(FileNotFoundError, match=f"{tmp_path}/mine: no sweep results; run llumsim sweep GRID.yaml --out"):
        open_sweep(f"{tmp_path}/mine")
    with pytest.raises(FileNotFoundError, match="run llumsim sweep experiments/grids/k_study.yaml --out"):
        open_sweep("k_study", tmp_path)


def test_an_interval_reaching_zero_is_refused_on_a_log_axis_not_clipped():
    frame = pd.DataFrame({K: [1, 2], "y": [2.0, 3.0], "y.ci_low": [-1.0, 1.0], "y.ci_high": [5.0, 5.0]})
    with pytest.raises(ValueError, match="1 interval.*log axis.*geometric"):
        plot_lines(frame, x=K, y="y", logy=True)
    plt.close("all")
    fig = plot_lines(frame, x=K, y="y")  # a linear axis draws it as it is
    assert interval_ends_on_log_axes(fig).size == 0 and fig.axes[0].collections[0].get_segments()[0][0][1] == -1.0
    plt.close(fig)


def test_no_interval_of_the_committed_paper_reaches_zero_on_a_log_axis():
    sweep = open_sweep("paper")
    p99 = "latency.prefill_latency.p99"
    assert (sweep.aggregate[f"{p99}.ci_low"] <= 0).sum() > 0  # some arithmetic intervals would (34 of them)
    with pytest.raises(ValueError, match="log axis"):
        serving_figure(sweep.aggregate)
    serving = serving_figure(sweep.geometric)
    frontier = plot_frontier(select(sweep.geometric, {"part": "autoscaling"}), x="cost.average_instances",
                             y=p99, hue="scheduler", logy=True)
    for fig in (serving, frontier):
        ends = interval_ends_on_log_axes(fig)
        assert ends.size and (ends[np.isfinite(ends)] > 0).all()
        plt.close(fig)


def test_the_per_tier_chart_legend_covers_no_point_and_stays_in_the_figure():
    sweep = open_sweep("k_study")
    cells = select(sweep.geometric, {"scheduler": "llumnix-headroom", "workload.arrival.rate": 7.5,
                                     "workload.num_requests": 10000})
    fig = plot_lines(by_tier(cells), x=K, y="prefill_latency.p99", hue="tier", col="workload.priority.sampler",
                     logy=True, title="per-tier P99 prefill")
    assert legend_faults(fig) == (0, [])  # the legend inside each panel hid the K = 1 point
    ends = interval_ends_on_log_axes(fig)
    assert ends.size and (ends[np.isfinite(ends)] > 0).all()
    plt.close(fig)


@pytest.mark.parametrize("mixes", [1, 2, 3])
def test_the_speed_up_legend_fits_every_grid_width(mixes):
    rows = [
        {"measure": measure, "scheduler": mode, "workload.priority.sampler": mix,
         "workload.arrival.rate": 5.0, K: k, "seeds": 10, "speedup": 2.0, "ci_low": 1.5, "ci_high": 2.5}
        for measure in ("tier 0 P99 prefill", "all requests P99 prefill")
        for mode in ("llumnix", "llumnix-headroom")
        for mix in ("uniform", "enterprise", "gaussian")[:mixes]
        for k in range(1, 11)
    ]
    fig = plot_speedups_vs_k(pd.DataFrame(rows))
    assert legend_faults(fig) == (0, [])  # two mixes: four columns ran off both sides
    plt.close(fig)


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
