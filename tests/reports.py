"""The one way tests build a ``LoadReport``: by field name, every field not given that of an
empty instance, so a test states only what it is about and a new report field changes
this file, not every test that builds one."""

from __future__ import annotations

from typing import Any

from sim.instance.load import LoadReport

# the fields LoadReport has no default for: an empty instance of 1,000 blocks
EMPTY: dict[str, Any] = dict(
    instance_id=0,
    capacity_blocks=1000,
    used_blocks=0,
    reserved_blocks=0,
    num_running=0,
    num_waiting=0,
    waiting_demand_blocks=0,
    head_demand_blocks=0,
)


def make_report(**fields: Any) -> LoadReport:
    """A report with ``fields`` set by name and every other field an empty instance's."""
    return LoadReport(**{**EMPTY, **fields})
