"""Run one simulation from a YAML config, print its summary and write its outputs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sim.config import SimulationConfig, load_config
from sim.engine.simulation import Simulation, SimulationResult
from sim.metrics import format_summary, write_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="YAML run config (see experiments/configs/)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value, e.g. --set workload.arrival.rate=8 (repeatable)",
    )
    parser.add_argument("--out", type=Path, help="output directory (default: <output.dir>/<name>)")
    parser.add_argument("--no-plots", action="store_true", help="skip writing PNG plots")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def simulate(config: SimulationConfig, show_progress: bool = False) -> SimulationResult:
    """Build and run a simulation, with a progress bar on simulated time if asked."""
    simulation = Simulation(config, record_batches=config.output.timeline)
    if not show_progress or len(simulation.workload) == 0:
        return simulation.run()
    from tqdm import tqdm

    horizon = float(simulation.workload.arrival[-1])
    with tqdm(
        total=round(horizon),
        unit="sim-s",
        desc=config.name,
        delay=2.0,
        file=sys.stderr,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} simulated s [{elapsed}<{remaining}]",
    ) as bar:

        def progress(now: float) -> None:
            bar.n = min(round(now), bar.total)
            bar.refresh()

        return simulation.run(progress)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config, args.overrides)
    show_progress = not args.quiet and (
        config.output.progress if config.output.progress is not None else sys.stderr.isatty()
    )
    result = simulate(config, show_progress)
    out_dir = args.out or Path(config.output.dir) / config.name
    summary = write_run(result, out_dir, plots=config.output.plots and not args.no_plots)
    print(format_summary(summary))
    print(f"\nwrote {', '.join(summary['files'])} to {out_dir}/")
    return 130 if result.interrupted else 0
