"""Run a grid of simulations (resumable; local processes or Ray) and write its index.

Exit status: 0, every run has a result; 1, some runs failed (stored as failed, listed in
sweep.json; ``--retry-failed`` reruns them); 2, bad input or an output that cannot be
written; 130, interrupted (finished runs are kept).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sim.cli import add_set_argument
from sim.files import OutputError
from sim.sweep.backends import BACKENDS, default_jobs

if TYPE_CHECKING:
    from sim.sweep.execution import Execution

EXIT_SOME_FAILED = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("grid", help="YAML grid (see experiments/grids/)")
    add_execution_arguments(parser)
    add_quiet_argument(parser)
    add_set_argument(
        parser,
        "override a value of the grid's base config, e.g. --set cluster.instances=8 "
        "(axes, zip blocks and variants still win)",
    )
    parser.add_argument("--out", type=Path, help="results folder (default: results/<grid name>)")
    parser.add_argument("--dry-run", action="store_true", help="list the cells and exit")
    add_retry_argument(parser)


def add_quiet_argument(parser: argparse.ArgumentParser) -> None:
    """--quiet: shared with ``llumsim paper`` and ``llumsim capacity``."""
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr (default: a bar on a terminal, else a line every 30 s or 5%%)",
    )


def add_retry_argument(parser: argparse.ArgumentParser) -> None:
    """--retry-failed: shared with ``llumsim paper``."""
    parser.add_argument(
        "--retry-failed",
        action="store_true",
        help="rerun the runs stored as failed (default: keep them failed, and say how many)",
    )


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


def execution_of(args: argparse.Namespace) -> Execution:
    """The options ``add_execution_arguments`` and ``add_quiet_argument`` read; progress on
    stderr unless --quiet (a bar on a terminal, lines every 30 s or 5% in a log)."""
    from sim.sweep.execution import Execution

    return Execution(args.jobs, args.backend, args.address, args.recompute_stale, progress=not args.quiet)


def run(args: argparse.Namespace) -> int:
    from sim.sweep import load_grid

    grid = load_grid(args.grid, args.overrides)
    if args.dry_run:
        for cell in grid.cells:
            print(cell.label)
        print(
            f"{grid.name}: {len(grid.cells)} cells x {len(grid.seeds)} seeds = {len(grid.runs)} runs"
        )
        return 0
    out_dir = args.out or Path("results") / grid.name
    outcome = sweep_or_stop(grid, out_dir, args)
    if outcome is None:
        return 130
    print(outcome.line())
    return report_failures(outcome)


def sweep_or_stop(grid, out_dir: Path, args: argparse.Namespace):
    """``run_sweep`` with the command's options; None when interrupted (said on stderr). A
    failed write says that the finished runs are kept."""
    from sim.sweep import run_sweep

    resume = "finished runs are kept, run the same command to resume"
    try:
        return run_sweep(grid, out_dir, execution_of(args), args.retry_failed)
    except KeyboardInterrupt:
        print(f"{grid.name}: interrupted; {resume}", file=sys.stderr)
        return None
    except OutputError as exc:
        raise OutputError(f"{exc}; {resume}") from None


def report_failures(outcome) -> int:
    """One line on stderr naming the first failed run, if any; the exit status."""
    if not outcome.failed:
        return 0
    first = outcome.failed[0]
    more = f" and {len(outcome.failed) - 1} more" if len(outcome.failed) > 1 else ""
    print(
        f"llumsim: {len(outcome.failed)} runs failed: cell [{first['cell']}] seed {first['seed']}: "
        f"{first['kind']}: {first['reason']}{more} (sweep.json and the index's status column list them)",
        file=sys.stderr,
    )
    return EXIT_SOME_FAILED
