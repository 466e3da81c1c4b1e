"""The committed studies and where the pages quote them: each study folder under ``results/``
carries ``study.json`` — the commands that made it, when, how long they took, the engines it
ran and their fingerprint (``sim.studies.fingerprint``) — and each place README.md or docs/
quotes a study carries its stale mark, ``<!-- stale:NAME --><!-- /stale:NAME -->``: empty
(unseen) while the study is current, a generated line between the two naming the engine it
was made on once the physics has moved (``llumsim studies marks`` writes them).

A study's tables go into a page as a generated block (``<!-- k-map:begin -->`` …); the
study names its blocks (``blocks``), so a page showing a block without the study's mark is
caught (``unmarked_blocks``) — a quote cannot go stale silently.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from sim.config import ConfigError
from sim.studies.fingerprint import REPO, fingerprint, moved, short

MANIFEST = "study.json"
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARK = re.compile(r"<!-- stale:(?P<name>[\w.-]+) -->\n?(?P<body>.*?)<!-- /stale:(?P=name) -->", re.S)


@dataclass
class Study:
    """One committed study, as its ``study.json`` records it."""

    name: str
    commands: list[str]  # run in order from the repository root; {store}: the study's sweep store
    engines: list[str]  # the serving engines its runs use
    fingerprint: dict[str, str]  # canonical run -> request-table hash, on its engines, when made
    made: str  # the date it was made (ISO)
    seconds: Optional[float]  # how long its commands took, in all (None: not measured)
    blocks: list[str] = field(default_factory=list)  # the generated blocks its tables go into
    folder: Path = field(default=Path("."), compare=False)

    def moved(self, hashes: dict[str, str]) -> list[str]:
        """The canonical runs of its engines that have moved since it was made (none: current)."""
        return moved(self.fingerprint, fingerprint(self.engines, hashes))

    def mark(self, hashes: dict[str, str]) -> str:
        """The line a page shows under a quote of this study: empty while it is current."""
        runs = self.moved(hashes)
        if not runs:
            return ""
        current = fingerprint(self.engines, hashes)
        now = short({run: current[run] for run in self.fingerprint if run in current})  # the same runs
        shown = ", ".join(runs[:4]) + (f" and {len(runs) - 4} more" if len(runs) > 4 else "")
        return (f"> **Stale:** made on engine {'+'.join(self.engines)} @ {short(self.fingerprint)} ({self.made}); "
                f"this checkout's is @ {now} (request tables moved: {shown}). "
                f"Re-make it: `llumsim studies remake {self.name}`.\n")

    def write(self) -> None:
        record = {k: v for k, v in asdict(self).items() if k != "folder"}
        (self.folder / MANIFEST).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def load_study(folder: Path) -> Study:
    """The study in ``folder``; a damaged or incomplete ``study.json`` is a ConfigError naming it."""
    path = folder / MANIFEST
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        return Study(**record, folder=folder)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{path}: not a study record ({exc})") from None


def studies(results: Path) -> list[Study]:
    """Every study under ``results`` (a folder with ``study.json``), by name."""
    return sorted((load_study(path.parent) for path in results.glob(f"*/{MANIFEST}")), key=lambda s: s.name)


def render_marks(text: str, known: dict[str, Study], hashes: dict[str, str], where: str) -> str:
    """``text`` with every stale mark rewritten for its study's status now."""
    def body(match: re.Match) -> str:
        name = match["name"]
        if name not in known:
            raise ConfigError(f"{where}: <!-- stale:{name} --> names no study (known: {', '.join(sorted(known))})")
        line = known[name].mark(hashes)  # empty: the mark's two comments on one line, unseen
        return f"<!-- stale:{name} -->{chr(10) + line if line else ''}<!-- /stale:{name} -->"
    return MARK.sub(body, text)


def unmarked_blocks(text: str, known: dict[str, Study]) -> list[str]:
    """The studies whose generated block ``text`` shows without their stale mark."""
    marked = {match["name"] for match in MARK.finditer(text)}
    return sorted(study.name for study in known.values() if study.name not in marked
                  and any(f"<!-- {block}:begin -->" in text for block in study.blocks))

