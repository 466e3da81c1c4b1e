"""The optional compiled engine: the instance layer and the scheduler's rules built with mypyc.

The modules in ``MODULES`` — the llumlet's parts, requests, the step loop, per-step report
delivery and the view it fills, the iteration-time memo, the load signals, the dispatch
and pairing rules and priority modes: where most of an event loop's time goes — are compiled by mypyc (the compiler mypy ships)
into C extensions placed next to their sources, which Python then imports instead. Same
source, so the same results: the request tables stay byte-identical
(``benchmarks/request_hashes.py --check``). What it buys is in ``benchmarks/README.md``.

``llumsim native build`` compiles them (needs ``pip install -e '.[native]'`` and a C
compiler) and records a hash of each source in ``native.json``; ``llumsim native clean``
removes the build. A build must never run code older than its source: when a compiled
module's source has changed since (or ``LLUMSIM_PURE=1`` is set), importing ``sim`` makes
Python load those modules from source, and says so once on stderr for a stale build.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Optional, Sequence

PACKAGE_DIR = Path(__file__).resolve().parent
MANIFEST = PACKAGE_DIR / "native.json"
WARNED = "LLUMSIM_NATIVE_WARNED"  # the warnings said, one per line, for child processes
LIBRARY = "sim.native_runtime"  # mypyc's shared library for the group: sim/native_runtime__mypyc*.so

# the per-batch path (a step, its report and memo lookup) and the per-dispatch and
# per-pairing-round one: each group buys >= 10% of the event loop on a preset, the rule
# (benchmarks/README.md). They compile together (mypyc calls across them directly, as C).
# Compiled code enforces annotations (an int field holding a float raises): a module joins
# only once its callers pass what it declares. A literal Final it imports from a module
# not listed here would be inlined unhashed: copy such constants (iteration_memo does).
MODULES = (
    "sim.cluster.dispatch",
    "sim.cluster.pairing",
    "sim.cluster.priority",
    "sim.cluster.step_reports",
    "sim.cluster.view",
    "sim.engine.instances",
    "sim.hardware.iteration_memo",
    "sim.instance.batch",
    "sim.instance.batching",
    "sim.instance.blocks",
    "sim.instance.endpoint",
    "sim.instance.limits",
    "sim.instance.load",
    "sim.instance.llumlet",
    "sim.instance.reporting",
    "sim.instance.request",
    "sim.instance.status",
    "sim.instance.virtual_usage",
    "sim.instance.waiting",
)


class NativeBuildError(RuntimeError):
    """The compiled engine could not be built (what is missing is in the message)."""


def source_path(module: str) -> Path:
    return PACKAGE_DIR.parent.joinpath(*module.split(".")).with_suffix(".py")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _built_files() -> list[Path]:
    """Every extension file in the package, for this and any other Python: the package ships
    none of its own, so each is a build's — of this version or of another (a branch that
    compiled other modules)."""
    return sorted(p for p in PACKAGE_DIR.rglob("*") if p.suffix in (".so", ".pyd"))


def stray_modules() -> list[str]:
    """Modules with an extension file for this Python that this version does not compile:
    left by a build of another version. Python would import one, and it would fail to
    find its code in this build's runtime library."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    found = []
    for path in PACKAGE_DIR.rglob(f"*{suffix}"):
        parts = path.relative_to(PACKAGE_DIR.parent).parts
        module = ".".join(parts[:-1] + (path.name[: -len(suffix)],))
        if module not in MODULES and not module.startswith(LIBRARY):
            found.append(module)
    return sorted(found)


def _built_here() -> bool:
    """A complete build exists for this Python (another Python ignores its extension files)."""
    if not MANIFEST.exists():
        return False
    return json.loads(MANIFEST.read_text()).get("python") == sys.implementation.cache_tag


def _unrecorded_extensions() -> bool:
    """Extension files this Python would import, with no build record for them: a build
    that was interrupted (the record is written last) or made by hand."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    return not _built_here() and any(
        source_path(m).with_name(source_path(m).stem + suffix).exists() for m in MODULES
    )


def stale_modules() -> list[str]:
    """Compiled modules whose source changed since the build."""
    sources = json.loads(MANIFEST.read_text()).get("sources", {})
    return [m for m in MODULES if sources.get(m) != _digest(source_path(m))]


def status() -> str:
    """Which engine this process runs: "compiled" or "pure Python" (and why)."""
    if _unrecorded_extensions():
        return "pure Python (compiled files without a complete build ignored)"
    if not _built_here():
        return "pure Python"
    if os.environ.get("LLUMSIM_PURE"):
        return "pure Python (LLUMSIM_PURE set)"
    if stale_modules():
        return "pure Python (compiled engine stale: `llumsim native build` rebuilds it)"
    return "compiled"


class _SourceFirst:
    """A meta-path finder that loads ``modules`` from their ``.py`` files, so a compiled
    build that is out of date (or switched off) is never imported."""

    def __init__(self, modules: Sequence[str]) -> None:
        self.modules = frozenset(modules)

    def find_spec(self, name: str, path: object = None, target: Optional[ModuleType] = None):
        if name not in self.modules:
            return None
        source = str(source_path(name))
        loader = importlib.machinery.SourceFileLoader(name, source)
        return importlib.util.spec_from_file_location(name, source, loader=loader)


def guard() -> None:
    """Called as ``sim`` is imported, before any compiled module: load from source what
    must not run compiled (INV-8 current-build)."""
    stray = stray_modules()
    if stray:
        sys.meta_path.insert(0, _SourceFirst(stray))
        _warn(
            f"llumsim: ignoring compiled files of modules this version does not compile "
            f"({', '.join(stray)}): left by another version's build (`llumsim native build` "
            "or `llumsim native clean` removes them)"
        )
    if _unrecorded_extensions():
        sys.meta_path.insert(0, _SourceFirst(MODULES))
        _warn(
            "llumsim: compiled files without a complete build of the compiled engine: running "
            "pure Python (`llumsim native build` builds it, `llumsim native clean` removes them)"
        )
        return
    if not _built_here():
        return
    if os.environ.get("LLUMSIM_PURE"):
        sys.meta_path.insert(0, _SourceFirst(MODULES))
        return
    stale = stale_modules()
    if stale:
        # a stale module's compiled callers would call into the old code: all go to source
        sys.meta_path.insert(0, _SourceFirst(MODULES))
        changed = source_path(stale[0]).relative_to(PACKAGE_DIR.parent)
        _warn(
            f"llumsim: the compiled engine is older than {changed}"
            f"{f' and {len(stale) - 1} more' if len(stale) > 1 else ''}: running pure Python "
            "(`llumsim native build` rebuilds it, `llumsim native clean` removes it)"
        )


def _warn(message: str) -> None:
    """Say ``message`` on stderr unless a parent process said it already: a sweep's worker
    processes inherit the environment, so a stale build is reported once, not per worker."""
    said = os.environ.get(WARNED, "")
    if message in said.split("\n"):
        return
    os.environ[WARNED] = f"{said}\n{message}" if said else message
    print(message, file=sys.stderr)


def build() -> list[Path]:
    """Compile ``MODULES`` in place and record their sources; returns the files written."""
    try:
        from mypyc.build import mypycify
        from setuptools import Distribution
    except ImportError as exc:
        raise NativeBuildError(
            f"{exc.name} is not installed: pip install -e '.[native]' (mypy brings mypyc)"
        ) from None
    clean()
    sources = [str(source_path(m).relative_to(PACKAGE_DIR.parent)) for m in MODULES]
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="llumsim-native-") as temp:
        os.chdir(PACKAGE_DIR.parent)  # mypyc names modules by their path from here
        try:
            extensions = mypycify(
                # the rest of the package is read for types, not checked or compiled
                ["--ignore-missing-imports", "--follow-imports=silent", f"--cache-dir={temp}/mypy"]
                + sources,
                opt_level="3",
                group_name=LIBRARY,
                target_dir=str(Path(temp) / "c"),
            )
            distribution = Distribution({"name": "llumsim-native", "ext_modules": extensions})
            command = distribution.get_command_obj("build_ext")
            command.inplace = True
            command.build_temp = str(Path(temp) / "o")
            distribution.run_command("build_ext")
        except (SystemExit, Exception) as exc:  # setuptools reports a compiler failure by exiting
            raise NativeBuildError(f"mypyc could not build the compiled engine: {exc}") from None
        finally:
            os.chdir(cwd)
    MANIFEST.write_text(
        json.dumps(
            {
                "python": sys.implementation.cache_tag,
                "sources": {m: _digest(source_path(m)) for m in MODULES},
            },
            indent=1,
        )
        + "\n"
    )
    return _built_files()


def clean() -> list[Path]:
    """Remove a build (every extension file and the manifest); returns what was removed."""
    removed = _built_files() + ([MANIFEST] if MANIFEST.exists() else [])
    for path in removed:
        path.unlink()
    return removed
