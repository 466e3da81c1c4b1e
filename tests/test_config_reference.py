"""docs/configuration.md is what ``python -m sim.config.reference`` writes: the reference of
every config key cannot drift from the schema it is generated from."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from sim.config.reference import markdown, sections

DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def test_the_committed_reference_is_what_the_schema_generates():
    assert DOC.read_text(encoding="utf-8") == markdown(), (
        "docs/configuration.md is stale: run python -m sim.config.reference > docs/configuration.md"
    )


def test_every_key_with_a_range_shows_it():
    from sim.config import SimulationConfig

    shown = {(s.path, k.name): k.range for s in sections() for k in s.keys}
    assert shown[("top level", "time_limit")] == "(0, 1e+09] s"
    assert shown[("cluster", "gpu_memory_utilization")] == "(0, 1]"
    assert shown[("workload.arrival", "rate")] == "[0.001, 1e+06] requests/s"
    # every top-level field is a key or a section of its own
    paths = {s.path.split(".")[0].removesuffix("[]") for s in sections()}
    keys = {name for (path, name) in shown if path == "top level"}
    assert {f.name for f in dataclasses.fields(SimulationConfig)} == (paths | keys) - {"top level"}
