"""Build, remove or show the optional compiled engine (mypyc; same results, faster loop).

``build`` compiles the instance layer in place (needs ``pip install -e '.[native]'`` and a C
compiler; ~30 s); ``clean`` goes back to pure Python; ``status`` says which one runs.
``LLUMSIM_PURE=1`` runs pure Python without removing a build. See ``sim.native``.
"""

from __future__ import annotations

import argparse
import sys

from sim import native


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("build", "clean", "status"))


def run(args: argparse.Namespace) -> int:
    if args.action == "build":
        try:
            files = native.build()
        except native.NativeBuildError as exc:
            print(f"llumsim: error: {exc}", file=sys.stderr)
            return 1
        modules = len(native.MODULES)
        print(f"built the compiled engine: {modules} modules, {len(files)} files in {native.PACKAGE_DIR}")
    elif args.action == "clean":
        removed = native.clean()
        print(f"removed the compiled engine ({len(removed)} files)" if removed else "no compiled engine")
    print(f"engine: {native.status()}")
    return 0
