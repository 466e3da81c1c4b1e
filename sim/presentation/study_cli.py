"""What every study's command does around its own work: read a results folder's index,
write the README's marked block, and turn a bad folder or config into one line and exit 2."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Optional

import pandas as pd

from sim.config import ConfigError
from sim.files import replace_marked


def read_results_index(folder: Path, marker: str, what: str) -> pd.DataFrame:
    """A results folder's ``index.parquet``, checked to be ``what`` (its ``marker`` file)."""
    if not (folder / marker).is_file():
        raise ConfigError(f"{folder}: no {marker}, so not {what}")
    try:
        return pd.read_parquet(folder / "index.parquet")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{folder / 'index.parquet'}: cannot be read ({str(exc).splitlines()[0]})") from None


def publish(
    study: str, work: Callable[[], tuple[str, str]], readme: Optional[Path], markers: tuple[str, str]
) -> int:
    """Run ``work`` (it returns the Markdown and a line saying what it wrote), put the Markdown
    between ``markers`` in ``readme`` if given, print both; 2 on a ``ConfigError``."""
    try:
        text, wrote = work()
        if readme:
            replace_marked(readme, *markers, text, f"--readme {readme}")
    except ConfigError as exc:
        print(f"{study} study: {exc}", file=sys.stderr)
        return 2
    print(text)
    print(wrote)
    return 0
