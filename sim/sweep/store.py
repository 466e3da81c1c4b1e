"""The results store: one folder per run, keyed by the hash of the run's resolved config.

``<out>/runs/<key>/`` holds ``summary.json``, ``config.yaml``, ``code.txt`` (the fingerprint
of the simulator that made it) and any kept tables (``<table>.parquet``); a run that failed
holds ``failed.json`` (its kind and reason) instead of a summary, until a retry replaces it.
A run is written into a temporary folder and renamed into place, so at any moment — Ctrl-C,
kill -9, a full disk — a run folder is either complete or absent: a write that fails
removes its temporary folder and raises ``OutputError``, and leftovers of a killed writer
are removed on the next start. Only the process that owns the store (the sweep driver)
writes to it; two sweeps sharing a folder may store the same run at once (the same config,
so the same result), and the one that loses the rename keeps the winner's folder.
"""

from __future__ import annotations

import errno
import hashlib
import json
import shutil
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
import yaml

from sim.config import ConfigError, SimulationConfig, to_dict
from sim.files import OutputError, remove_leftovers, strict_json, swap_folder, temp_name, writing
from sim.sweep.backends import RunError

SUMMARY = "summary.json"
FAILED = "failed.json"
CODE = "code.txt"
PACKAGE = Path(__file__).resolve().parents[1]  # sim/
# what a rename meets when another sweep swaps the same run folder in or out meanwhile
RENAME_RACES = frozenset({errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY})


# what a build of the compiled engine adds to the package (sim.native): the same sources
# compiled, byte-identical results (benchmarks/request_hashes.py --check on both engines),
# so a run is not "made by other code" because the engine was built or rebuilt
BUILD_SUFFIXES = (".so", ".pyd")
BUILD_RECORD = "native.json"


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """What a run's results depend on besides its config: the simulator's sources and shipped
    data (profiles, fits) and the installed Vidur. A run is keyed by its config alone, so a
    store reuses runs across code changes; this tells which were made by other code."""
    return package_fingerprint(PACKAGE, version("vidur"))


def package_fingerprint(package: Path, vidur_version: str) -> str:
    """The digest of every source and data file under ``package`` (build products left out)."""
    digest = hashlib.sha256(f"vidur {vidur_version}".encode())
    for path in sorted(package.rglob("*")):
        if (
            path.is_file()
            and "__pycache__" not in path.parts
            and path.suffix not in BUILD_SUFFIXES
            and path.relative_to(package).as_posix() != BUILD_RECORD
        ):
            digest.update(str(path.relative_to(package)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


class RunStore:
    """Run folders under ``root``, written atomically by one driver process."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def clean(self) -> int:
        """Remove what killed writers left behind in the store."""
        return remove_leftovers(self.root)

    def path(self, key: str) -> Path:
        return self.root / key

    def is_done(self, key: str, tables: Iterable[str] = (), this_code_only: bool = False) -> bool:
        """Whether the run is stored with its summary and every table asked for (and, with
        ``this_code_only``, by the code of this checkout)."""
        folder = self.path(key)
        done = (folder / SUMMARY).is_file() and all(
            (folder / f"{name}.parquet").is_file() for name in tables
        )
        return done and not (this_code_only and self.made_by_other_code(key))

    def made_by_other_code(self, key: str) -> bool:
        """The stored run's code fingerprint differs from this checkout's (or is unknown: a
        run stored before fingerprints were kept)."""
        path = self.path(key) / CODE
        return not path.is_file() or path.read_text().strip() != code_fingerprint()

    def is_failed(self, key: str) -> bool:
        """The run is stored as failed (and not since retried to a result)."""
        folder = self.path(key)
        return (folder / FAILED).is_file() and not (folder / SUMMARY).is_file()

    def failure(self, key: str) -> RunError:
        return RunError(**self._read(key, FAILED))

    def write(self, key: str, config: SimulationConfig, summary: dict[str, Any]) -> None:
        """Store a run: write a temporary folder, then rename it into place."""
        summary = dict(summary)
        tables = summary.pop("tables", {}) or {}

        def fill(tmp: Path) -> None:
            (tmp / SUMMARY).write_text(strict_json(summary))
            for name, frame in tables.items():
                frame.to_parquet(tmp / f"{name}.parquet", index=False)

        self._store(key, config, fill)

    def write_failure(self, key: str, config: SimulationConfig, error: RunError) -> None:
        """Store why a run failed, in the run's folder (a retry replaces it whole)."""
        self._store(key, config, lambda tmp: (tmp / FAILED).write_text(strict_json(error._asdict())))

    def _store(self, key: str, config: SimulationConfig, fill) -> None:
        """Write a run folder (its config, the code fingerprint, what ``fill`` adds) under a
        temporary name, then swap it into place: stored before with fewer tables, it is never
        half-replaced; a failed write leaves no temporary folder and the old one whole."""
        tmp = self.root / temp_name(".tmp-", key)
        try:
            with writing(self.path(key)):
                shutil.rmtree(tmp, ignore_errors=True)
                tmp.mkdir()
                (tmp / "config.yaml").write_text(yaml.safe_dump(to_dict(config), sort_keys=False))
                (tmp / CODE).write_text(code_fingerprint() + "\n")
                fill(tmp)
            self._swap(tmp, key)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _swap(self, tmp: Path, key: str, tries: int = 3) -> None:
        """Rename ``tmp`` into place; a rename lost to another sweep storing the same run
        keeps its folder (the same result) rather than failing the sweep."""
        for attempt in range(tries):
            try:
                swap_folder(tmp, self.path(key))
                return
            except OutputError as exc:
                if exc.errno not in RENAME_RACES or attempt == tries - 1:
                    raise
                if self.is_done(key) or self.is_failed(key):
                    return

    def _read(self, key: str, name: str) -> dict[str, Any]:
        """A stored JSON file; damaged (cut short by a crash of another tool, edited) it is a
        ConfigError naming it and how to recompute it."""
        path = self.path(key) / name
        try:
            return json.loads(path.read_text())
        except ValueError as exc:  # not JSON, or not UTF-8
            raise ConfigError(
                f"{path}: damaged, not JSON ({exc}); delete {path.parent} and rerun to recompute that run"
            ) from None

    def summary(self, key: str) -> dict[str, Any]:
        return self._read(key, SUMMARY)

    def table(self, key: str, name: str) -> pd.DataFrame:
        """A kept per-run table (``tables:`` in the grid)."""
        path = self.path(key) / f"{name}.parquet"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: not kept; add {name!r} to the grid's tables")
        return pd.read_parquet(path)
