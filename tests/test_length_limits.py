"""The per-preset counts of what the artifact's length limits remove, as traces/PROVENANCE.md
and the presets' comments state them, are what traces/length_limits.py computes."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("length_limits", ROOT / "traces/length_limits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _provenance_rows() -> dict[str, list[int]]:
    rows = {}
    for line in (ROOT / "traces/PROVENANCE.md").read_text().splitlines():
        match = re.match(r"\| (fig1\w+|quickstart) \| ([\d,]+(?: \| [\d,]+){6}) \|$", line)
        if match:
            rows[match.group(1)] = [int(v.replace(",", "")) for v in match.group(2).split(" | ")]
    return rows


SCRIPT = _script()
STATED = _provenance_rows()


@pytest.mark.parametrize("path", SCRIPT.PRESETS, ids=lambda p: p.stem)
def test_the_stated_counts_are_the_computed_ones(path):
    row = SCRIPT.count(path, None)
    assert STATED[path.stem] == [row[c] for c in SCRIPT.COLUMNS]
    comment = path.read_text().split("\nname:")[0]
    if "total_below" in comment:
        assert f"At this seed: {row['client_total_dropped']} dropped" in comment
    else:
        assert f"({row['at_6144_cap']} at the cap here)" in comment
