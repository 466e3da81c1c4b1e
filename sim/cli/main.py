"""``llumsim`` entry point: sub-commands register themselves in ``COMMANDS``; only the one
invoked is imported, so each command pays for its own imports alone.

Bad input (unknown key, missing file, bad value) exits with code 2 and one line naming the
key or file — never a traceback; so does an output that cannot be written (a full disk, a
read-only file system). A run the watchdog stops (no progress) exits with code 3 and one
line naming the stuck requests and instances.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import sys
from pathlib import Path
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
    "studies": "sim.cli.studies",
    "native": "sim.cli.native",
}


def one_line_help(module_name: str) -> str:
    """A command's one-line help: its module docstring's first line, read from the source
    without importing the module (``llumsim --help`` must not pay every command's imports)."""
    spec = importlib.util.find_spec(module_name)
    assert spec is not None and spec.origin is not None, module_name
    docstring = ast.get_docstring(ast.parse(Path(spec.origin).read_text(encoding="utf-8")))
    return (docstring or "").strip().splitlines()[0]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser: ``command``'s arguments (its module imported), every other command listed
    by its one-line help only."""
    parser = argparse.ArgumentParser(
        prog="llumsim",
        description="Simulate Llumnix-style scheduling of LLM inference across instances.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module_name in COMMANDS.items():
        if name != command:
            sub.add_parser(name, help=one_line_help(module_name))
            continue
        module = importlib.import_module(module_name)
        parser_of_command = sub.add_parser(name, help=one_line_help(module_name))
        module.add_arguments(parser_of_command)
        parser_of_command.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
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
