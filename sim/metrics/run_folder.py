"""A run's output folder: checked before the run starts, written whole or not at all.

Every file of a run is written into a staging folder beside the run folder
(``.tmp-<pid>-<name>``), which is renamed into place at the end, replacing the previous
run's folder whole. A run folder therefore holds exactly one run: after ``kill -9`` at any
moment it holds the previous complete run or nothing, never a mix; what the killed writer
left is removed by the next run. A folder that holds anything but a run's own outputs is
refused rather than cleared.
"""

from __future__ import annotations

import shutil
import signal
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from sim.config import ConfigError
from sim.files import TEMP_PREFIXES, check_output_folder, remove_leftovers, swap_folder, temp_name

# every name a run may write (sim.metrics.report.write_run)
RUN_FILES = frozenset(
    {
        "requests.csv",
        "instances.csv",
        "cluster.csv",
        "migrations.csv",
        "config.yaml",
        "summary.json",
        "timeline.json",
        "latency.png",
        "timeline.png",
        "migrations.png",
    }
)


def _run_output(entry: Path) -> bool:
    return entry.name in RUN_FILES and entry.is_file()


@dataclass
class RunFolder:
    final: Path  # where the run's outputs end up
    staging: Path  # where they are written first
    replaces: bool  # the folder holds a previous run, replaced whole at the end

    @classmethod
    def prepare(cls, out_dir: Path) -> RunFolder:
        """Check, before the run, that ``out_dir`` can take it (``check_output_folder``), and
        create the staging folder beside it (which proves the place writable). A
        ConfigError names the folder."""
        final = check_output_folder(out_dir, "run", _run_output)
        replaces = final.is_dir() and any(
            not e.name.startswith(TEMP_PREFIXES) for e in final.iterdir()
        )
        staging = final.parent / temp_name(".tmp-", final.name)
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            remove_leftovers(final.parent, final.name)
            staging.mkdir()
        except OSError as exc:
            raise ConfigError(
                f"output folder {out_dir}: cannot write there ({exc.strerror or exc})"
            ) from None
        return cls(final, staging, replaces)

    def commit(self) -> None:
        """Put the finished run in place (Ctrl-C and SIGTERM wait until it is)."""
        with _signals_deferred():
            swap_folder(self.staging, self.final)

    def discard(self) -> None:
        """Drop the staging folder (the run failed or was stopped before its outputs were
        whole); a committed folder is not touched."""
        shutil.rmtree(self.staging, ignore_errors=True)


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM for the two renames of a swap, so neither lands between them."""
    held = {signal.SIGINT, signal.SIGTERM}
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (AttributeError, ValueError):  # no pthread_sigmask here
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
