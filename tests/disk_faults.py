"""A file system that fills up or turns read-only under one folder, injected at the write.

Mounting a small tmpfs needs root, which CI may not have; every way llumsim writes a file —
``Path.write_text``/``write_bytes``/``mkdir``, pandas' ``to_csv``/``to_parquet``,
matplotlib's ``savefig``, ``os.replace``/``os.rename`` — is patched instead, so the error
comes from the same call a real full disk would fail in. A failing byte write leaves half its
bytes behind first, as a disk that fills mid-file does.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Callable

import pandas as pd
from matplotlib.figure import Figure

BYTE_WRITES = {
    (Path, "write_text"): 0,  # (owner, name): index of the path argument (0: self)
    (Path, "write_bytes"): 0,
    (pd.DataFrame, "to_csv"): 1,
    (pd.DataFrame, "to_parquet"): 1,
    (Figure, "savefig"): 1,
}
OTHER_WRITES = {(Path, "mkdir"): 0}
RENAMES = ("replace", "rename")


class FailingDisk:
    """Writes under ``root`` fail with ``error`` (ENOSPC: a full disk; EROFS: remounted
    read-only, renames fail too) from the moment ``when()`` is true (default: at once);
    ``heal()`` makes room again."""

    def __init__(
        self, monkeypatch, root: Path, error: int = errno.ENOSPC, when: Callable[[], bool] = lambda: True
    ) -> None:
        self.root = str(Path(root).resolve())
        self.error = error
        self.when = when
        self.full = False
        self.failed = 0
        self.healed = False
        for (owner, name), at in {**BYTE_WRITES, **OTHER_WRITES}.items():
            monkeypatch.setattr(owner, name, self._wrap(getattr(owner, name), at, (owner, name) in BYTE_WRITES))
        for name in RENAMES:
            monkeypatch.setattr(os, name, self._wrap_rename(getattr(os, name)))

    def heal(self) -> None:
        self.healed = True

    def _under(self, path) -> bool:
        if isinstance(path, int) or not isinstance(path, (str, os.PathLike)):
            return False
        return os.path.abspath(os.fspath(path)).startswith(self.root)

    def _fails(self, path) -> bool:
        if self.healed or not self._under(path):
            return False
        self.full = self.full or self.when()  # once full, full until healed
        self.failed += self.full
        return self.full

    def _raise(self, path) -> None:
        raise OSError(self.error, os.strerror(self.error), os.fspath(path))

    def _wrap(self, original, at: int, writes_bytes: bool):
        def patched(*args, **kwargs):
            path = args[at] if len(args) > at else kwargs.get("path") or kwargs.get("fname")
            if not self._fails(path):
                return original(*args, **kwargs)
            if writes_bytes and self.error == errno.ENOSPC:
                original(*args, **kwargs)  # the bytes go down, then half of them are lost
                size = os.path.getsize(path)
                with open(path, "r+b") as handle:
                    handle.truncate(size // 2)
            self._raise(path)

        return patched

    def _wrap_rename(self, original):
        def patched(source, target, *args, **kwargs):
            if self.error == errno.EROFS and self._fails(target):
                self._raise(target)
            return original(source, target, *args, **kwargs)

        return patched
