"""Trace readers: three public CSV formats in, one validated table out.

Every reader returns a DataFrame with int64 ``prompt_tokens`` and ``output_tokens`` (both >= 1)
and, for formats that carry them, float64 ``timestamp`` seconds as recorded (Azure: seconds
after the file's earliest stamp). Validation happens here, on load, so that a bad cell is
reported as ``<file>: row <n>, column '<col>': <problem>`` before any simulation starts. Row
numbers count the header as row 1, as a spreadsheet or editor shows them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from sim.config import ConfigError

Format = Literal["auto", "lengths", "burstgpt", "azure"]

LENGTHS_COLUMNS = ("num_prefill_tokens", "num_decode_tokens")
LENGTHS_TIMESTAMP = "arrived_at"  # optional seconds column of Vidur's processed traces
BURSTGPT_COLUMNS = ("Timestamp", "Model", "Request tokens", "Response tokens", "Log Type")
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


class TraceError(ConfigError):
    """A trace file that cannot be used; the message names the file (and row and column)."""


def _read_csv(path: str | Path) -> pd.DataFrame:
    """All cells as stripped strings, so that validation sees exactly what the file holds."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: trace file not found")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise TraceError(f"{path}: empty file (expected a CSV header and rows)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: not a readable CSV ({str(exc).strip()})") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def _require_columns(frame: pd.DataFrame, path: Path, columns: tuple[str, ...]) -> None:
    for column in columns:
        if column not in frame.columns:
            found = ", ".join(repr(c) for c in frame.columns)
            raise TraceError(f"{path}: missing column {column!r} (columns found: {found})")


def _cell_error(path: Path, frame: pd.DataFrame, mask: pd.Series, column: str, what: str) -> None:
    """Raise for the first row where ``mask`` holds; ``what`` formats the offending cell."""
    if mask.any():
        position = int(np.flatnonzero(mask.to_numpy())[0])
        cell = frame[column].iloc[position]
        problem = "empty cell" if cell == "" else what.format(cell=cell)
        raise TraceError(f"{path}: row {position + 2}, column {column!r}: {problem}")


def _numbers(frame: pd.DataFrame, path: Path, column: str) -> pd.Series:
    values = pd.to_numeric(frame[column].str.strip(), errors="coerce").astype("float64")
    _cell_error(path, frame, ~np.isfinite(values), column, "{cell!r} is not a number")
    return values


def _tokens(frame: pd.DataFrame, path: Path, column: str, minimum: int) -> pd.Series:
    """Token counts: whole, non-negative numbers of at least ``minimum``."""
    values = _numbers(frame, path, column)
    _cell_error(path, frame, values < 0, column, "{cell} is negative")
    _cell_error(path, frame, values != np.floor(values), column, "{cell} is not a whole number")
    _cell_error(path, frame, values < minimum, column, f"{{cell}} tokens (must be >= {minimum})")
    return values.astype(np.int64)


def _nonempty(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    if frame.empty:
        raise TraceError(f"{path}: no requests (header only, or every row filtered out)")
    return frame


def _lengths(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    _require_columns(frame, path, LENGTHS_COLUMNS)
    table = pd.DataFrame(
        {
            "prompt_tokens": _tokens(frame, path, "num_prefill_tokens", 1),
            "output_tokens": _tokens(frame, path, "num_decode_tokens", 1),
        }
    )
    if LENGTHS_TIMESTAMP in frame.columns:
        table.insert(0, "timestamp", _numbers(frame, path, LENGTHS_TIMESTAMP))
    return _nonempty(table, path)


def _burstgpt(
    frame: pd.DataFrame, path: Path, model: str | None, log_type: str | None
) -> pd.DataFrame:
    _require_columns(frame, path, BURSTGPT_COLUMNS)
    table = pd.DataFrame(
        {
            "timestamp": _numbers(frame, path, "Timestamp"),
            "prompt_tokens": _tokens(frame, path, "Request tokens", 0),
            "output_tokens": _tokens(frame, path, "Response tokens", 0),
        }
    )
    keep = pd.Series(True, index=frame.index)
    for column, wanted in (("Model", model), ("Log Type", log_type)):
        if wanted is not None:
            values = frame[column].str.strip()
            if not (values == wanted).any():
                found = ", ".join(repr(v) for v in sorted(values.unique()))
                raise TraceError(f"{path}: no rows with {column} {wanted!r} (found: {found})")
            keep &= values == wanted
    # BurstGPT logs failed requests with 0 response tokens: they never ran, so they are dropped.
    keep &= table["output_tokens"] > 0
    _cell_error(
        path,
        frame,
        keep & (table["prompt_tokens"] < 1),
        "Request tokens",
        "{cell} tokens (must be >= 1)",
    )
    return _nonempty(table[keep].reset_index(drop=True), path)


def _azure(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    _require_columns(frame, path, AZURE_COLUMNS)
    # 2023 stamps are naive with 7 fractional digits, 2024 ones carry +00:00: read both as UTC.
    stamps = pd.to_datetime(
        frame["TIMESTAMP"].str.strip(), format="ISO8601", utc=True, errors="coerce"
    )
    _cell_error(path, frame, stamps.isna(), "TIMESTAMP", "{cell!r} is not a date and time")
    table = pd.DataFrame(
        {
            "timestamp": (stamps - stamps.min()).dt.total_seconds(),
            "prompt_tokens": _tokens(frame, path, "ContextTokens", 1),
            "output_tokens": _tokens(frame, path, "GeneratedTokens", 1),
        }
    )
    return _nonempty(table, path)


def detect_format(columns: list[str] | pd.Index, path: str | Path) -> str:
    """Tell the format from the header, so configs can say ``format: auto``."""
    names = set(columns)
    if {"TIMESTAMP", "ContextTokens"} <= names:
        return "azure"
    if {"Timestamp", "Request tokens"} <= names:
        return "burstgpt"
    if "num_prefill_tokens" in names:
        return "lengths"
    found = ", ".join(repr(c) for c in columns)
    raise TraceError(
        f"{path}: cannot tell the trace format from its columns ({found}); expected "
        f"{', '.join(LENGTHS_COLUMNS)} or {', '.join(AZURE_COLUMNS)} or BurstGPT's "
        f"{', '.join(BURSTGPT_COLUMNS)}"
    )


def read_trace(
    path: str | Path,
    format: Format = "auto",
    burstgpt_model: str | None = None,
    burstgpt_log_type: str | None = None,
) -> pd.DataFrame:
    """Read and validate any accepted trace file (``format='auto'``: from its header)."""
    path = Path(path)
    frame = _read_csv(path)
    kind = detect_format(frame.columns, path) if format == "auto" else format
    if kind == "burstgpt":
        return _burstgpt(frame, path, burstgpt_model, burstgpt_log_type)
    if burstgpt_model is not None or burstgpt_log_type is not None:
        raise TraceError(f"{path}: Model/Log Type filters apply to BurstGPT traces, not {kind}")
    return _azure(frame, path) if kind == "azure" else _lengths(frame, path)


def read_lengths_table(path: str | Path) -> pd.DataFrame:
    """Vidur-style ``num_prefill_tokens,num_decode_tokens`` table (optional ``arrived_at`` s)."""
    return read_trace(path, "lengths")


def read_burstgpt(
    path: str | Path, model: str | None = None, log_type: str | None = None
) -> pd.DataFrame:
    """BurstGPT CSV, optionally one Model / Log Type; failed rows (0 response tokens) dropped."""
    return read_trace(path, "burstgpt", model, log_type)


def read_azure(path: str | Path) -> pd.DataFrame:
    """Azure LLM inference trace CSV (2023 or 2024 timestamp style)."""
    return read_trace(path, "azure")


def summarise(table: pd.DataFrame) -> dict[str, float]:
    """The statistics PROVENANCE.md lists for a trace (P95: numpy's linear interpolation)."""
    stats: dict[str, float] = {"rows": float(len(table))}
    for column, label in (("prompt_tokens", "input"), ("output_tokens", "output")):
        values = table[column].to_numpy()
        stats[f"{label}_mean"] = float(values.mean())
        stats[f"{label}_p50"] = float(np.percentile(values, 50))
        stats[f"{label}_p95"] = float(np.percentile(values, 95))
    if "timestamp" in table.columns and len(table) > 1:
        times = np.sort(table["timestamp"].to_numpy())
        gaps = np.diff(times)
        stats["duration_s"] = float(times[-1] - times[0])
        stats["rate"] = float((len(times) - 1) / stats["duration_s"])
        stats["gap_cv"] = float(gaps.std() / gaps.mean())
    return stats
