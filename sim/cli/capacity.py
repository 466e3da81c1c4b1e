"""Find the highest arrival rate a cluster serves within per-tier latency SLOs (bisection).

Exit status: 0, a capacity inside a bracket; 1, no rate meets the SLOs (the lowest rate
tried misses them); 4, every rate tried meets them (the capacity is at least the highest
tried); 2, bad input; 3, a run the watchdog stopped.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sim.cli import add_set_argument
from sim.cli.sweep import add_execution_arguments, add_quiet_argument

EXIT_NO_RATE_MEETS = 1
EXIT_EVERY_RATE_MEETS = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config", help="YAML run config; its arrival rate is where the search starts"
    )
    parser.add_argument(
        "--slo",
        action="append",
        default=[],
        metavar="[tierN.]METRIC.STAT<=SECONDS | [tierN.]attainment>=SHARE",
        help="a latency bound, e.g. tier0.prefill_latency.p99<=0.5 or e2e_latency.mean<=20, or "
        "an attainment of the config's slo targets, e.g. tier0.attainment>=0.99 (also "
        "ttft_attainment, tpot_attainment; repeatable; all must hold, on the mean over seeds)",
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
    add_quiet_argument(parser)


def run(args: argparse.Namespace) -> int:
    from sim.config import load_config
    from sim.metrics.cost import gpus_per_instance
    from sim.sweep.capacity import parse_slo, search_capacity

    config = load_config(args.config, args.overrides)
    slos = [parse_slo(text) for text in args.slo]
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
        not args.quiet,
    )
    slos = result.slos
    header = f"{'req/s':>8} {'meets':>6} {'GPUs':>6}" + "".join(
        f" {slo.text:>32}" for slo in slos
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
    if result.answer == "none":
        print(
            f"\nno rate meets the SLOs on {cluster}: the lowest rate tried, "
            f"{result.bracket[1]:g} req/s, misses them"
        )
        return EXIT_NO_RATE_MEETS
    if result.answer == "bracketed":
        head = f"capacity: {best.rate:g} req/s (fails at {result.bracket[1]:g})"
    else:
        head = f"capacity: meets the SLOs at every rate tried, up to {best.rate:g} req/s"
    print(
        f"\n{head} on {cluster}, {best.average_gpus:.1f} GPUs on average: "
        f"{best.rate / best.average_gpus:.3f} req/s per GPU; cost per 1,000 requests "
        f"{best.cost_per_request * 1000:.3f} at {config.cost.gpu_hour_price:g} per GPU-hour"
    )
    print(f"wrote capacity.json and runs/ to {out_dir}/")
    return 0 if result.answer == "bracketed" else EXIT_EVERY_RATE_MEETS
