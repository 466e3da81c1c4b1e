"""Write a run's outputs under ``results/<name>/`` and format its summary for a terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from sim.config import to_dict
from sim.engine.result import SimulationResult
from sim.files import strict_json
from sim.metrics.run_folder import RunFolder
from sim.metrics.sections import report_lines
from sim.metrics.summary import summarize
from sim.metrics.tables import cluster_table, instance_table, migration_table, request_table
from sim.metrics.text import fmt
from sim.metrics.trace import write_timeline


def write_run(
    result: SimulationResult, out_dir: Path | RunFolder, plots: bool = True
) -> dict[str, Any]:
    """Write requests.csv, instances.csv, cluster.csv, migrations.csv, summary.json,
    config.yaml, plots (headroom.png with adaptive headroom), and timeline.json when ``output.timeline`` asks for it — into a
    staging folder renamed into place at the end (``sim.metrics.run_folder``), so the run
    folder holds this run whole, or the previous one if writing is stopped."""
    folder = out_dir if isinstance(out_dir, RunFolder) else RunFolder.prepare(out_dir)
    try:
        summary = _write_files(result, folder.staging, plots)
        folder.commit()
    finally:
        folder.discard()
    return summary


def _write_files(result: SimulationResult, out_dir: Path, plots: bool) -> dict[str, Any]:
    requests = request_table(result)
    instances = instance_table(result)
    cluster = cluster_table(result)
    migrations = migration_table(result)
    summary = summarize(result, requests, cluster, migrations, instances)
    requests.to_csv(out_dir / "requests.csv", index=False)
    instances.to_csv(out_dir / "instances.csv", index=False)
    cluster.to_csv(out_dir / "cluster.csv", index=False)
    migrations.to_csv(out_dir / "migrations.csv", index=False)
    (out_dir / "config.yaml").write_text(yaml.safe_dump(to_dict(result.config), sort_keys=False))
    files = [
        "requests.csv", "instances.csv", "cluster.csv", "migrations.csv", "config.yaml", "summary.json"
    ]
    if result.config.output.timeline:
        write_timeline(result, out_dir / "timeline.json")
        files.append("timeline.json")
    title = f"{result.config.name}: {result.config.scheduler.name}, {result.workload_description}"
    if plots:  # matplotlib only for a run that draws
        from sim.metrics.plots import (
            headroom_columns,
            plot_cluster_timeline,
            plot_headroom,
            plot_latency_cdfs,
            plot_migrations,
        )
    if plots and len(requests):
        plot_latency_cdfs(requests, out_dir / "latency.png", title)
        plot_cluster_timeline(
            instances, cluster, result.capacity_blocks, out_dir / "timeline.png", title
        )
        files += ["latency.png", "timeline.png"]
    if plots and headroom_columns(cluster):
        plot_headroom(cluster, out_dir / "headroom.png", title)
        files.append("headroom.png")
    if plots and len(migrations):
        plot_migrations(migrations, result.end_time, out_dir / "migrations.png", title)
        files.append("migrations.png")
    summary["files"] = files
    (out_dir / "summary.json").write_text(strict_json(summary, indent=2))
    return summary


def _speed_line(simulation: dict[str, Any]) -> str:
    """How fast the run went, and on which engine (runs stored before it was recorded ran
    pure Python)."""
    simulated, wall = simulation["simulated_seconds"], simulation["wall_seconds"]
    return (
        f"simulated {simulated:.1f} s in {wall:.2f} s of event loop ({simulated / max(wall, 1e-9):.0f}x "
        f"real time, {simulation['requests_per_wall_second']:.0f} requests/wall-s, "
        f"{simulation['batches']} batches, {simulation.get('engine', 'pure Python')})"
    )


def _engines(summary: dict[str, Any]) -> str:
    """The serving engine each pool ran (runs stored before engines were recorded ran the
    artifact's): one name when every pool ran the same."""
    engines = summary.get("engines") or {"cluster": "vllm-0.1.2"}
    if len(set(engines.values())) == 1:
        return f"engine={next(iter(engines.values()))}"
    return "engines=" + ",".join(f"{pool}:{engine}" for pool, engine in engines.items())


def format_summary(summary: dict[str, Any]) -> str:
    """A compact text table of the summary for the terminal."""
    lines = [f"{summary['name']}  scheduler={summary['scheduler']}  {_engines(summary)}  {summary['workload']}"]
    if summary.get("engine_note"):  # runs stored before it was recorded have none
        lines.append(f"note: {summary['engine_note']} (pools[*].engine sets it)")
    lines.extend(f"note: {line}" for line in summary.get("ignored", ()))
    req = summary["requests"]
    lines.append(
        f"requests: {req['finished']} finished, {req['aborted']} aborted, "
        f"{req['unfinished']} unfinished"
        + (f", {req['not_arrived']} never arrived" if req["not_arrived"] else "")
        + f"; {req['preempted']} preempted "
        f"({req['preemptions']} preemptions); {req['migrations']} migrations"
    )
    header = f"{'metric (s)':<28}{'mean':>10}{'p50':>10}{'p90':>10}{'p99':>10}"
    lines += ["", header, "-" * len(header)]
    for metric, stats in summary["latency"].items():
        lines.append(
            f"{metric:<28}"
            + "".join(f"{fmt(stats[k]):>10}" for k in ("mean", "p50", "p90", "p99"))
        )
    by_tier = summary["latency_by_tier"]
    if len(by_tier) > 1:
        lines += ["", f"{'tier':<6}{'n':>7}{'prefill mean':>14}{'prefill p99':>13}{'decode mean':>13}{'decode p99':>12}"]
        for tier, stats in by_tier.items():
            pre, dec = stats["prefill_latency"], stats["decode_latency_per_token"]
            lines.append(
                f"{tier:<6}{pre['count']:>7}{fmt(pre['mean']):>14}{fmt(pre['p99']):>13}"
                f"{fmt(dec['mean']):>13}{fmt(dec['p99']):>12}"
            )
    slo = summary.get("slo")  # runs stored before SLOs existed have none
    if slo:
        lines += ["", f"{'SLO tier':<10}{'TTFT<=':>9}{'TPOT<=':>9}{'met TTFT':>10}{'met TPOT':>10}{'both':>8}{'goodput':>10}"]
        for tier, row in [*slo["by_tier"].items(), ("all", slo["overall"])]:
            targets = (
                f"{fmt(row['ttft_target']):>9}{fmt(row['tpot_target']):>9}" if "ttft_target" in row else " " * 18
            )
            lines.append(
                f"{tier:<10}{targets}{row['ttft_attainment'] * 100:>9.1f}%{row['tpot_attainment'] * 100:>9.1f}%"
                f"{row['attainment'] * 100:>7.1f}%{row['goodput']:>7.2f}r/s"
            )
        lines.append(
            f"SLO: {slo['tiers_met']} of {len(slo['by_tier'])} tiers attain {slo['quantile']:.0%} of "
            f"their requests; attainment per GPU-hour {slo['overall']['attainment_per_gpu_hour']:.3g}"
        )
    thr, cost, simulation = summary["throughput"], summary["cost"], summary["simulation"]
    lines += [
        "",
        f"throughput: {thr['requests_per_s']:.2f} req/s, {thr['output_tokens_per_s']:.0f} output tokens/s; "
        f"average instances {cost['average_instances']:.2f} ({cost['instance_seconds']:.0f} instance-s, "
        f"{cost['gpu_hours']:.2f} GPU-hours); "
        f"fragmented memory {summary['fragmentation']['mean_fraction'] * 100:.2f}%",
        _speed_line(simulation),
    ]
    view = summary.get("scheduler_view")  # runs stored before it was recorded have none
    if view:
        lines.append(
            f"scheduler view: {view['stale_idle_instance_seconds']:.1f} instance-s idle while it showed "
            f"the instance busy ({view['idle_stretches']} idle stretches checked)"
        )
    lines += report_lines(summary)
    if summary["interrupted"]:
        lines.append(
            "INTERRUPTED: partial results (requests still in flight are 'unfinished'; "
            "those not yet arrived are counted as never arrived)"
        )
    return "\n".join(lines)
