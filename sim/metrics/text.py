"""How a summary's numbers read on a terminal, shared by the report and every feature's
report lines (``sim.metrics.sections``)."""

from __future__ import annotations

import math
from typing import Optional


def fmt(value: Optional[float]) -> str:
    """Seconds, short: whole above 100, two decimals above 1, milliseconds below; "-" for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value * 1000:.1f}ms"


def counts(by_name: dict) -> str:
    """``{"reason": n, ...}`` as "reason n, ..."."""
    return ", ".join(f"{reason} {n}" for reason, n in by_name.items())
