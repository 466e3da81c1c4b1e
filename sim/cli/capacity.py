"""Find the highest arrival rate a cluster serves within per-tier latency SLOs (bisection).

Exit status: 0, a capacity inside a bracket (with ``--fleet``: a cheapest fleet); 1, no rate
meets the SLOs (the lowest rate tried misses them; with ``--fleet``: no fleet within the bounds); 4, every rate tried meets them (the capacity is at least the highest
tried); 2, bad input; 3, a run the watchdog stopped. With ``--grid`` (a search per cell and
seed, ``sim.sweep.capacity_grid``): 0 once every search has its answer, whatever it is; 1 if
a run failed (its search says so in searches.csv); 2, bad input.
"""

from __future__ import annotations

import argparse
from itertools import product
from pathlib import Path

from sim.cli import add_set_argument
from sim.cli.sweep import add_execution_arguments, add_quiet_argument, execution_of

EXIT_NO_RATE_MEETS = 1
EXIT_EVERY_RATE_MEETS = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config", nargs="?", help="YAML run config; its arrival rate is where the search starts"
    )
    parser.add_argument(
        "--grid",
        type=Path,
        help="a capacity grid instead of a config (experiments/grids/k_capacity.yaml): one search "
        "per cell and seed, its SLOs, tolerance and bracket in its capacity section",
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
    parser.add_argument(
        "--fleet",
        nargs="+",
        metavar="POOL=N",
        help="instead of a rate: the cheapest count of each pool's GPU (0..N) meeting the SLOs at the "
        "config's rate, each pool billed as the config prices it (cost.sku_prices: true, required when "
        "the pools' GPUs differ, for each SKU's list price); every pool named once; after the config",
    )
    parser.add_argument(
        "--monotone",
        action="store_true",
        help="with --fleet: assume adding an instance never breaks the contract and bisect (fewer runs; "
        "false in mixed fleets, where slower GPUs can break a tail-latency bound the fast ones met)",
    )
    parser.add_argument("--seeds", type=int, help="runs per rate (default 1)")
    parser.add_argument("--low", type=float, help="a rate known to meet the SLOs (req/s)")
    parser.add_argument("--high", type=float, help="a rate known to miss them (req/s)")
    parser.add_argument(
        "--tolerance", type=float, help="stop when (high - low) / low is below this (default 0.02)"
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


# what a capacity grid sets in its capacity section (and seeds at its top level)
GRID_SETS = {"slo": "--slo", "seeds": "--seeds", "low": "--low", "high": "--high", "tolerance": "--tolerance"}


def run(args: argparse.Namespace) -> int:
    from sim.config import ConfigError, load_config
    from sim.metrics.cost import describe_instances, describe_price
    from sim.sweep.capacity import parse_slo, search_capacity

    if args.config is None and args.fleet and any(not item.partition("=")[2] for item in args.fleet):
        raise ConfigError("--fleet takes POOL=N items only; give the run config before it")
    if (args.config is None) == (args.grid is None):
        raise ConfigError("capacity: give a run config or --grid GRID (one of them)")
    if args.monotone and args.fleet is None:
        raise ConfigError("--monotone: only with --fleet")
    if args.fleet is not None and args.grid is not None:
        raise ConfigError("--fleet: with a run config, not --grid")
    if args.grid is not None:
        for attribute, flag in GRID_SETS.items():
            if getattr(args, attribute) not in (None, []):
                raise ConfigError(
                    f"{flag}: a capacity grid sets it itself ({args.grid}: its capacity section, "
                    "or seeds); edit the grid or use --set for its base config"
                )
        return run_grid(args)
    config = load_config(args.config, args.overrides)
    slos = [parse_slo(text) for text in args.slo]
    if args.fleet is not None:
        return run_fleet(args, config, slos)
    out_dir = args.out or Path("results") / "capacity" / config.name
    result = search_capacity(
        config,
        slos,
        out_dir,
        args.seeds if args.seeds is not None else 1,
        args.low,
        args.high,
        args.tolerance if args.tolerance is not None else 0.02,
        execution_of(args),
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
    cluster = describe_instances(config)
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
        f"{best.cost_per_request * 1000:.3f} at {describe_price(config)}"
    )
    print(f"wrote capacity.json and runs/ to {out_dir}/")
    return 0 if result.answer == "bracketed" else EXIT_EVERY_RATE_MEETS


def fleet_bounds(items: list[str]) -> dict[str, int]:
    """``--fleet a10s=8 a100s=3`` as {pool: largest count}."""
    from sim.config import ConfigError

    bounds: dict[str, int] = {}
    for item in items:
        name, _, count = item.partition("=")
        if not name or not (count.isascii() and count.isdecimal()):  # '²' is a digit int() refuses
            raise ConfigError(f"--fleet {item!r}: write POOL=N, N a whole number (e.g. a10s=8)")
        if name in bounds:
            raise ConfigError(f"--fleet: pool {name} is named twice")
        bounds[name] = int(count)
    return bounds


def run_fleet(args: argparse.Namespace, config, slos) -> int:
    """``--fleet``: the cheapest fleet, every fleet evaluated and the cost/latency frontier.
    Exit 0 with an answer, 1 when no fleet within the bounds meets the contract."""
    from sim.config import ConfigError
    from sim.sweep.fleet import at_bound, frontier, search_fleet

    for flag, value in (("--low", args.low), ("--high", args.high), ("--tolerance", args.tolerance)):
        if value is not None:
            raise ConfigError(f"{flag}: a fleet search holds the rate at the config's; leave it out")
    out_dir = args.out or Path("results") / "fleet" / config.name
    result = search_fleet(
        config, slos, fleet_bounds(args.fleet), out_dir, args.seeds if args.seeds is not None else 1,
        execution_of(args), monotone=args.monotone,
    )
    names = [pool.name for pool in result.pools]
    first = result.slos[0]
    print(f"{' '.join(f'{n:>6}' for n in names)} {'$/hour':>8} {'meets':>6}" + "".join(f" {slo.text:>32}" for slo in result.slos))
    for counts, point in sorted(result.evaluated.items(), key=lambda item: result.cost(item[0])):
        print(
            f"{' '.join(f'{n:>6}' for n in counts)} {result.cost(counts):>8.2f} {'yes' if point.meets else 'no':>6}"
            + "".join(f" {point.values[slo.name]:>32.3f}" for slo in result.slos)
        )
    pairs = [(result.cost(c), p.values[first.name]) for c, p in result.evaluated.items() if p.values[first.name] == p.values[first.name]]
    print(f"\ncost/latency frontier of the fleets evaluated ({first.name}):")
    for cost, value in frontier(pairs):
        print(f"  ${cost:.2f}/hour: {value:.3f}")
    if result.skipped:
        first = next(iter(result.skipped.values()))
        print(f"skipped {len(result.skipped)} fleets that cannot exist (first: {first})")
    print(f"wrote fleet.json and runs/ to {out_dir}/")
    if result.best is None:
        print(f"\nno fleet within {', '.join(f'{p.name}<={p.most}' for p in result.pools)} meets the SLOs "
              f"at {result.rate:g} req/s")
        return EXIT_NO_RATE_MEETS
    described = ", ".join(f"{n} × {name}" for name, n in zip(names, result.best))
    print(f"\ncheapest fleet at {result.rate:g} req/s: {described}, ${result.cost(result.best):.2f} per hour")
    bounded = at_bound(result.pools, result.best)
    if bounded:
        print(f"  at the bound of {', '.join(bounded)}: no larger fleet there was tried to confirm it; raise the bound")
    return 0


def run_grid(args: argparse.Namespace) -> int:
    """``--grid``: every cell's searches, one line per cell, the summary line."""
    from sim.sweep.capacity_grid import load_capacity_grid, run_capacity_grid

    spec = load_capacity_grid(args.grid, args.overrides)
    out_dir = args.out or Path("results") / spec.grid.name
    outcome, index = run_capacity_grid(spec, out_dir, execution_of(args))
    print(f"{'cell':<60} {'answers':<16} {'req/s per GPU [95% t]':>28} {'vs baseline [95% t]':>24}")
    for row, (contract, cell) in zip(index.to_dict("records"), product(spec.bounds(), spec.grid.cells)):
        label = f"{cell.label}, contract={contract}" if contract else cell.label
        print(f"{label:<60} {row['answers']:<16} {_interval(row, 'rate_per_gpu', 3):>28}"
              f" {_interval(row, 'vs_baseline', 2) if 'vs_baseline' in row else '':>24}")
    print(outcome.line())
    return 1 if outcome.failed else 0


def _interval(row: dict, column: str, digits: int) -> str:
    """``0.312 [0.298, 0.327]``; ``-`` without a value (a seed found none, or failed)."""
    value, low, high = row[column], row[f"{column}.ci_low"], row[f"{column}.ci_high"]
    if value != value:
        return "-"
    if low != low:
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"
