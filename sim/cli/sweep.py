"""Run a grid of simulations (resumable; local processes or Ray) and write its index."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sim.cli import add_set_argument
from sim.sweep.backends import BACKENDS, default_jobs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("grid", help="YAML grid (see experiments/grids/)")
    add_execution_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_set_argument(
        parser,
        "override a value of the grid's base config, e.g. --set cluster.instances=8 "
        "(axes, zip blocks and variants still win)",
    )
    parser.add_argument("--out", type=Path, help="results folder (default: results/<grid name>)")
    parser.add_argument("--dry-run", action="store_true", help="list the cells and exit")


def add_execution_arguments(parser: argparse.ArgumentParser) -> None:
    """--jobs, --backend, --address, --recompute-stale: shared with ``llumsim paper`` and
    ``llumsim capacity``."""
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help=f"parallel runs (default: all cores, {default_jobs()} here)",
    )
    parser.add_argument("--backend", choices=BACKENDS, default="local", help="where runs execute")
    parser.add_argument(
        "--address", help="Ray cluster address (--backend ray; default: a local Ray)"
    )
    parser.add_argument(
        "--recompute-stale",
        action="store_true",
        help="rerun stored runs made by other code than this checkout's (default: reuse them, "
        "and say how many)",
    )


def show_progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def run(args: argparse.Namespace) -> int:
    from sim.sweep import load_grid, run_sweep

    grid = load_grid(args.grid, args.overrides)
    if args.dry_run:
        for cell in grid.cells:
            print(cell.label)
        print(
            f"{grid.name}: {len(grid.cells)} cells x {len(grid.seeds)} seeds = {len(grid.runs)} runs"
        )
        return 0
    out_dir = args.out or Path("results") / grid.name
    try:
        outcome = run_sweep(
            grid,
            out_dir,
            args.jobs,
            args.backend,
            args.address,
            show_progress(args),
            args.recompute_stale,
        )
    except KeyboardInterrupt:
        print(
            f"{grid.name}: interrupted; finished runs are kept, run the same command to resume",
            file=sys.stderr,
        )
        return 130
    print(outcome.line())
    return 0
