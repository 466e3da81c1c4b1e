"""Every relative link of the README and docs/ points at a file of the repository (and an
anchor at a heading of its page), so moving a page or a file cannot leave a dead link."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.sweep_support import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to -."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(page):
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    dead = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and anchor not in anchors(file)):
            dead.append(target)
    assert not dead, f"{page.relative_to(REPO)}: dead links {dead}"
