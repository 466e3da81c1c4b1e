"""``llumsim`` entry point: sub-commands register themselves in ``COMMANDS``.

Bad input (unknown key, missing file, bad value) exits with code 2 and one line naming the
key or file — never a traceback; so does an output that cannot be written (a full disk, a
read-only file system). A run the watchdog stops (no progress) exits with code 3 and one
line naming the stuck requests and instances.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from sim.config import ConfigError
from sim.engine.watchdog import SimulationStalled
from sim.files import OutputError

# sub-command name -> module defining ``add_arguments(parser)`` and ``run(args) -> int``
COMMANDS = {
    "run": "sim.cli.run",
    "calibrate": "sim.cli.calibrate",
    "bench": "sim.cli.bench",
    "sweep": "sim.cli.sweep",
    "capacity": "sim.cli.capacity",
    "paper": "sim.cli.paper",
    "native": "sim.cli.native",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llumsim",
        description="Simulate Llumnix-style scheduling of LLM inference across instances.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        command = sub.add_parser(name, help=module.__doc__.strip().splitlines()[0])
        module.add_arguments(command)
        command.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._module.run(args) or 0)
    except (ConfigError, OutputError) as exc:
        print(f"llumsim: error: {exc}", file=sys.stderr)
        return 2
    except SimulationStalled as exc:
        print(f"llumsim: error: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("llumsim: interrupted", file=sys.stderr)
        return 130
