"""Crash-safe writing, shared by a run's output folder and the sweep store.

Files and folders are written under a temporary name and renamed into place, so a reader —
or the next run after a ``kill -9`` — sees either the old whole or the new whole. Temporary
names carry the writer's pid (``.tmp-<pid>-<name>``, ``.old-<pid>-<name>``), so what a
killed writer left can be told from what a live one is writing, and removed.

Every command's output folder passes one check before anything runs
(``check_output_folder``), and a write that fails later — a full disk, a file system
remounted read-only — is an ``OutputError`` naming the path (``writing``), one line and exit
code 2 at the command line, after which the temporary copy is gone and the old whole stays.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Callable, Iterator

from sim.config.loader import ConfigError

TEMP_PREFIXES = (".tmp-", ".old-")


class OutputError(Exception):
    """Writing an output failed (no space, read-only, a name too long, a link loop); the
    message names the path and the system's reason, ``errno`` the system's code (None: not
    a system error)."""

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


@contextmanager
def writing(path: Path | str) -> Iterator[None]:
    """Turn an OSError inside the block into an OutputError naming ``path``."""
    try:
        yield
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}", exc.errno) from None


def check_output_folder(out_dir: Path | str, kind: str, owned: Callable[[Path], bool]) -> Path:
    """The resolved folder ``out_dir``, if a command may write its ``kind`` folder there:
    not a file system root, a file, under a file, a symbolic-link loop, nor a folder holding
    anything ``owned`` refuses (temporary names of writers aside). A ConfigError names it.
    Nothing is created."""
    where = f"output folder {out_dir}"
    try:
        final = Path(out_dir).expanduser().resolve()
        if final == final.parent:
            raise ConfigError(f"{where}: cannot be a {kind} folder (a file system root)")
        ancestor = final.parent
        while not ancestor.exists():
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise ConfigError(f"{where}: cannot be created: {ancestor} is a file")
        if final.exists() and not final.is_dir():
            raise ConfigError(f"{where}: exists and is not a folder")
        if final.is_dir():
            entries = sorted(e for e in final.iterdir() if not e.name.startswith(TEMP_PREFIXES))
            foreign = [e.name for e in entries if not owned(e)]
            if foreign:
                more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
                raise ConfigError(
                    f"{where}: not empty and not a llumsim {kind} folder (it holds "
                    f"{foreign[0]!r}{more}); choose a new or empty folder"
                )
    except RuntimeError:  # Path.resolve on a symbolic-link loop (Python 3.11)
        raise ConfigError(f"{where}: cannot be used (a symbolic link loop)") from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot be used ({exc.strerror or exc})") from None
    return final


def check_output_file(path: Path | str, flag: str) -> Path:
    """A file a command will write at ``path`` (a ``--plot FILE``), checked before the work
    that draws it: its folder exists and is one, and the path is not a folder. A ConfigError
    names ``flag`` and the path. Nothing is created."""
    final = Path(path).expanduser()
    folder = final.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ConfigError(f"{flag} {path}: its folder {folder} {what}; create it first")
    if final.is_dir():
        raise ConfigError(f"{flag} {path}: is a folder; name a file")
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"{flag} {path}: cannot write in {folder}")
    return final


def make_folder(folder: Path, where: str) -> None:
    """Create ``folder`` (and its parents) and prove it writable with a temporary file; a
    ConfigError naming ``where`` if not."""
    probe = folder / temp_name(".tmp-", "probe")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot write there ({exc.strerror or exc})") from None


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
    """Call ``write(tmp_path)`` then rename the file into place (readers never see half);
    a failure is an OutputError naming ``path``, and leaves the old file as it was."""
    tmp = path.with_name(temp_name(".tmp-", path.name))
    try:
        with writing(path):
            write(tmp)
            os.replace(tmp, path)
    finally:
        with suppress(OSError):  # never hides the write's own error
            tmp.unlink(missing_ok=True)


def swap_folder(staged: Path, final: Path) -> None:
    """Put the finished folder ``staged`` at ``final``, replacing what is there whole: the old
    folder is renamed aside first, then removed, so ``final`` is never half old, half new."""
    with writing(final):
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


def marked_text(path: Path, begin: str, end: str, where: str) -> str:
    """The text of a page a generated block goes into: a file, UTF-8, with ``begin`` and
    ``end`` markers in that order, in a folder that can be written; a ConfigError naming it
    (``where``) otherwise."""
    try:
        if not path.is_file():
            raise ConfigError(f"{where}: no such file")
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot be read ({exc.strerror or exc})") from None
    first, last = text.find(begin), text.find(end)
    if first < 0 or last < first:
        raise ConfigError(f"{where}: no {begin} ... {end} markers (in that order)")
    if not os.access(path.resolve().parent, os.W_OK):
        raise ConfigError(f"{where}: its folder cannot be written (the new table is renamed into place)")
    return text


def replace_marked(path: Path, begin: str, end: str, block: str, where: str) -> None:
    """Put ``block`` between the page's markers, replacing the file whole (renamed into
    place: a failed write leaves it as it was)."""
    head, rest = marked_text(path, begin, end, where).split(begin, 1)
    _, tail = rest.split(end, 1)
    text = f"{head}{begin}\n{block}\n{end}{tail}"
    atomic_write(path, lambda tmp: tmp.write_text(text))
