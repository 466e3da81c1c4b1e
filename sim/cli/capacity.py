"""Find the highest arrival rate a cluster serves within per-tier latency SLOs (bisection)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from sim.cli import add_set_argument
from sim.cli.sweep import add_execution_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config", help="YAML run config; its arrival rate is where the search starts"
    )
    parser.add_argument(
        "--slo",
        action="append",
        default=[],
        metavar="[tierN.]METRIC.STAT<=SECONDS",
        help="a latency bound, e.g. tier0.prefill_latency.p99<=0.5 or e2e_latency.mean<=20 "
        "(repeatable; all must hold, on the mean over seeds)",
    )
    parser.add_argument("--seeds", type=int, default=1, help="runs per rate (default 1)")
    parser.add_argument("--low", type=float, help="a rate known to meet the SLOs (req/s)")
    parser.add_argument("--high", type=float, help="a rate known to miss them (req/s)")
    parser.add_argument(
        "--tolerance", type=float, default=0.02, help="stop when (high - low) / low is below this"
    )
    add_set_argument(
        parser,
        "override a config value (repeatable)",
    )
    parser.add_argument(
        "--out", type=Path, help="results folder (default: results/capacity/<name>)"
    )
    add_execution_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from sim.config import ConfigError, load_config
    from sim.metrics.cost import gpus_per_instance
    from sim.sweep.capacity import parse_slo, search_capacity

    config = load_config(args.config, args.overrides)
    slos = [parse_slo(text) for text in args.slo]
    if args.seeds < 1:
        raise ConfigError(f"--seeds: must be >= 1, got {args.seeds}")
    out_dir = args.out or Path("results") / "capacity" / config.name
    result = search_capacity(
        config,
        slos,
        out_dir,
        args.seeds,
        args.low,
        args.high,
        args.tolerance,
        args.jobs,
        args.backend,
        args.address,
        args.recompute_stale,
    )
    header = f"{'req/s':>8} {'meets':>6} {'GPUs':>6}" + "".join(
        f" {slo.name + '<=' + format(slo.limit, 'g'):>32}" for slo in slos
    )
    print(header)
    for point in result.points:
        print(
            f"{point.rate:>8g} {'yes' if point.meets else 'no':>6} {point.average_gpus:>6.1f}"
            + "".join(f" {point.values[slo.name]:>32.3f}" for slo in slos)
        )
    gpus = gpus_per_instance(config.cluster)
    cluster = f"{config.cluster.instances} x {config.cluster.model} ({gpus} GPU{'s' if gpus > 1 else ''} each)"
    best = result.best
    if best is None:
        print(
            f"\nno rate tried meets the SLOs on {cluster}; lowest tried {result.bracket[1]:g} req/s"
        )
        return 1
    upper = result.bracket[1]
    bound = f"(fails at {upper:g})" if math.isfinite(upper) else "(the highest rate tried)"
    print(
        f"\ncapacity: {best.rate:g} req/s {bound} on {cluster}, {best.average_gpus:.1f} GPUs on average: "
        f"{best.rate / best.average_gpus:.3f} req/s per GPU; cost per 1,000 requests "
        f"{best.cost_per_request * 1000:.3f} at {config.cost.gpu_hour_price:g} per GPU-hour"
    )
    print(f"wrote capacity.json and runs/ to {out_dir}/")
    return 0
