"""A table as GitHub Markdown: the paper's claims and the K-tier findings print theirs through
it (no tabulate dependency)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd


def markdown(table: pd.DataFrame, floats: Optional[str] = None) -> str:
    """A GitHub Markdown table (no tabulate dependency)."""
    def cell(value) -> str:
        if isinstance(value, float):
            return "—" if not np.isfinite(value) else (format(value, floats) if floats else f"{value:.4g}")
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)
