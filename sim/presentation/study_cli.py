"""What every study's command does around its own work: read a results folder's index,
write the README's marked block, and turn a bad folder or config into one line and exit 2."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

import pandas as pd

from sim.config import ConfigError
from sim.files import replace_marked


def read_results_index(folder: Path, marker: str, what: str, columns: Sequence[str] = ()) -> pd.DataFrame:
    """A results folder's ``index.parquet``, checked to be ``what`` (its ``marker`` file) and
    to hold the ``columns`` the study reads: another study's results of the same kind (a
    sweep of another grid) lack them, and are named as such rather than read."""
    if not (folder / marker).is_file():
        raise ConfigError(f"{folder}: no {marker}, so not {what}")
    try:
        index = pd.read_parquet(folder / "index.parquet")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{folder / 'index.parquet'}: cannot be read ({str(exc).splitlines()[0]})") from None
    missing = [column for column in columns if column not in index]
    if missing:
        raise ConfigError(
            f"{folder}: its runs have no {', '.join(missing)}, so not {what} (another grid's results?)"
        )
    return index


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
        print(f"llumsim: error: {study} study: {exc}", file=sys.stderr)
        return 2
    print(text)
    print(wrote)
    return 0
