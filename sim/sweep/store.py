"""The results store: one folder per run, keyed by the hash of the run's resolved config.

``<out>/runs/<key>/`` holds ``summary.json``, ``config.yaml`` and any kept tables
(``<table>.parquet``). A run is written into a temporary folder and renamed into place,
so at any moment — Ctrl-C, kill -9, a full disk — a run folder is either complete or
absent; leftovers of a killed writer are removed on the next start. Only the process that
owns the store (the sweep driver) writes to it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
import yaml

from sim.config import SimulationConfig, to_dict
from sim.files import remove_leftovers, strict_json, swap_folder, temp_name

SUMMARY = "summary.json"


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

    def is_done(self, key: str, tables: Iterable[str] = ()) -> bool:
        """Whether the run is stored with its summary and every table asked for."""
        folder = self.path(key)
        return (folder / SUMMARY).is_file() and all(
            (folder / f"{name}.parquet").is_file() for name in tables
        )

    def write(self, key: str, config: SimulationConfig, summary: dict[str, Any]) -> None:
        """Store a run: write a temporary folder, then rename it into place."""
        summary = dict(summary)
        tables = summary.pop("tables", {}) or {}
        tmp = self.root / temp_name(".tmp-", key)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        (tmp / SUMMARY).write_text(strict_json(summary))
        (tmp / "config.yaml").write_text(yaml.safe_dump(to_dict(config), sort_keys=False))
        for name, frame in tables.items():
            frame.to_parquet(tmp / f"{name}.parquet", index=False)
        swap_folder(tmp, self.path(key))  # stored before with fewer tables: never half-replace

    def summary(self, key: str) -> dict[str, Any]:
        return json.loads((self.path(key) / SUMMARY).read_text())

    def table(self, key: str, name: str) -> pd.DataFrame:
        """A kept per-run table (``tables:`` in the grid)."""
        path = self.path(key) / f"{name}.parquet"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: not kept; add {name!r} to the grid's tables")
        return pd.read_parquet(path)
