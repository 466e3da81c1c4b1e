"""Run one simulation from a YAML config, print its summary and write its outputs."""

from __future__ import annotations

import argparse
import signal
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sim.cli import add_set_argument

EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
EXIT_TERMINATED = 143  # SIGTERM (128 + SIGTERM)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="YAML run config (see experiments/configs/)")
    add_set_argument(
        parser,
        "override a config value, e.g. --set workload.arrival.rate=8 (repeatable)",
    )
    parser.add_argument("--out", type=Path, help="output directory (default: <output.dir>/<name>)")
    parser.add_argument("--no-plots", action="store_true", help="skip writing PNG plots")
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr (default: a bar of ended requests on a terminal, else a line every 30 s or 5%%)",
    )


class _Signal:
    received: bool = False


@contextmanager
def sigterm_as_interrupt() -> Iterator[_Signal]:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does, so a terminated run stops and writes
    what an interrupted one writes; the yielded flag says whether it came."""
    term = _Signal()

    def handler(signum, frame) -> None:
        term.received = True
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield term
        return
    try:
        yield term
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(args: argparse.Namespace) -> int:
    from sim.config import load_config
    from sim.files import writing
    from sim.metrics.run_folder import RunFolder

    config = load_config(args.config, args.overrides)
    show_progress = not args.quiet and config.output.progress is not False
    out_dir = args.out or Path(config.output.dir) / config.name
    folder = RunFolder.prepare(out_dir)  # a bad folder fails now, not after the run
    from sim.engine import simulate  # the engine and the metrics, once the config is good
    from sim.metrics import format_summary, write_run

    with sigterm_as_interrupt() as term:
        try:
            result = simulate(config, show_progress)
            with writing(f"output folder {out_dir}"):  # the previous run there stays whole
                summary = write_run(result, folder, plots=config.output.plots and not args.no_plots)
        except KeyboardInterrupt:
            if not term.received:
                raise
            print("llumsim: terminated", file=sys.stderr)
            return EXIT_TERMINATED
        finally:
            folder.discard()
    print(format_summary(summary))
    replaced = " (replacing the previous run there)" if folder.replaces else ""
    print(f"\nwrote {', '.join(summary['files'])} to {out_dir}/{replaced}")
    if not result.interrupted:
        return 0
    return EXIT_TERMINATED if term.received else EXIT_INTERRUPTED
