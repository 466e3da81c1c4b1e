"""Crash-safe writing, shared by a run's output folder and the sweep store.

Files and folders are written under a temporary name and renamed into place, so a reader —
or the next run after a ``kill -9`` — sees either the old whole or the new whole. Temporary
names carry the writer's pid (``.tmp-<pid>-<name>``, ``.old-<pid>-<name>``), so what a
killed writer left can be told from what a live one is writing, and removed.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any, Callable

TEMP_PREFIXES = (".tmp-", ".old-")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def temp_name(prefix: str, name: str) -> str:
    """This process's temporary name for ``name`` (``prefix``: one of ``TEMP_PREFIXES``)."""
    return f"{prefix}{os.getpid()}-{name}"


def remove_leftovers(folder: Path, name: str | None = None) -> int:
    """Remove the temporary files and folders of writers that are no longer running (only
    those for ``name``, if given); those of a live process are left alone."""
    removed = 0
    for entry in Path(folder).iterdir():
        if not entry.name.startswith(TEMP_PREFIXES):
            continue
        pid_text, _, target = entry.name[len(TEMP_PREFIXES[0]) :].partition("-")
        if name is not None and target != name:
            continue
        try:
            pid = int(pid_text)
        except ValueError:
            pid = -1
        if pid != os.getpid() and pid_alive(pid):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed += 1
    return removed


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Call ``write(tmp_path)`` then rename the file into place (readers never see half)."""
    tmp = path.with_name(temp_name(".tmp-", path.name))
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def swap_folder(staged: Path, final: Path) -> None:
    """Put the finished folder ``staged`` at ``final``, replacing what is there whole: the old
    folder is renamed aside first, then removed, so ``final`` is never half old, half new."""
    if final.exists():
        old = final.with_name(temp_name(".old-", final.name))
        os.rename(final, old)
        os.rename(staged, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(staged, final)


def strict_json(value: Any, indent: int = 1) -> str:
    """JSON text in which NaN and infinities (not JSON) are written as null: no data."""
    return json.dumps(_finite_or_none(value), indent=indent, default=str, allow_nan=False)


def _finite_or_none(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(v) for v in value]
    return value
