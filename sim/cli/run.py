"""Run one simulation from a YAML config, print its summary and write its outputs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sim.config import load_config
from sim.engine import simulate
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
