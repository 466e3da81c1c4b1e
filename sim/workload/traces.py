"""Trace readers: four public CSV formats in, one validated table out.

Every reader returns a DataFrame with int64 ``prompt_tokens`` and ``output_tokens`` (both >= 1)
and, for formats that carry them, float64 ``timestamp`` seconds as recorded (Azure: seconds
after the file's earliest stamp). Validation happens here, on load, so that a bad cell is
reported as ``<file>: row <n>, column '<col>': <problem>`` before any simulation starts. Row
numbers are the file's line numbers (the header is row 1), as an editor shows them.

What is refused, and why: text that is not UTF-8; a row with more or fewer cells than the
header (read as it stands, it would shift every later column); a token count that is not a
whole number, is negative, or exceeds ``MAX_TOKENS_PER_REQUEST``; a timestamp that is not a
finite number of seconds in [0, ``MAX_TIMESTAMP_S``], or a date outside [``EARLIEST_DATE``,
``LATEST_DATE``). The bounds are far beyond any real request or trace, so they only catch
corrupt cells (1e30 tokens, a stamp in milliseconds, a year of 9999).
"""

from __future__ import annotations

import codecs
import csv
import io
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from sim.config import ConfigError

Format = Literal["auto", "lengths", "burstgpt", "azure", "mooncake"]

LENGTHS_COLUMNS = ("num_prefill_tokens", "num_decode_tokens")
LENGTHS_TIMESTAMP = "arrived_at"  # optional seconds column of Vidur's processed traces
BURSTGPT_COLUMNS = ("Timestamp", "Model", "Request tokens", "Response tokens", "Log Type")
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
# a Mooncake trace as traces/build_mooncake.py ships it: each request's longest shared prefix
# named by the earlier request it shares it with, in Mooncake's 512-token hash blocks
MOONCAKE_COLUMNS = ("timestamp", "input_length", "output_length", "prefix_of", "shared_blocks")
MOONCAKE_BLOCK_TOKENS = 512

# 10 million tokens: above the longest context window of any model (1–10M tokens in 2025), and
# ~730 times the KV capacity of a LLaMA-7B A10 instance — a count beyond it is a corrupt cell.
MAX_TOKENS_PER_REQUEST = 10_000_000
# 2100-01-01T00:00:00Z as Unix seconds: a trace's seconds are counted from its start (BurstGPT,
# Vidur) or from the Unix epoch, so anything later is a corrupt cell or a stamp in ms or µs.
MAX_TIMESTAMP_S = 4_102_444_800.0
# Azure-style date-and-time stamps must fall in these years (LLM traces begin in the 2020s).
EARLIEST_DATE = pd.Timestamp("1970-01-01", tz="UTC")
LATEST_DATE = pd.Timestamp("2100-01-01", tz="UTC")


class TraceError(ConfigError):
    """A trace file that cannot be used; the message names the file (and row and column)."""


def _decode(path: Path, data: bytes) -> str:
    """UTF-8 text (a leading byte-order mark dropped); else the row and column of the bad byte."""
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        header = next(csv.reader([data.split(b"\n", 1)[0].decode("utf-8", "replace")]), [])
        before = data[start : exc.start].decode("utf-8", "replace")
        index = len(next(csv.reader([before]), [""])) - 1 if before else 0
        column = (
            repr(header[index].strip()) if line > 1 and index < len(header) else f"#{index + 1}"
        )
        problem = f"not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as UTF-8"
        raise TraceError(f"{path}: row {line}, column {column}: {problem}") from None


def _read_csv(path: str | Path) -> pd.DataFrame:
    """All cells as stripped strings, indexed by line number, every row as wide as the header.

    Read with the ``csv`` module rather than pandas so that a row with an extra cell is an
    error here (pandas would take the first column as an index and shift the rest), and a
    short row is named as such instead of showing up as empty cells.
    """
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: trace file not found")
    text = _decode(path, path.read_bytes())
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True)
    try:
        header = next((row for row in reader if row), None)
        if header is None:
            raise TraceError(f"{path}: empty file (expected a CSV header and rows)")
        header = [cell.strip() for cell in header]
        repeated = sorted({name for name in header if header.count(name) > 1})
        if repeated:
            raise TraceError(
                f"{path}: row {reader.line_num}: column {repeated[0]!r} appears more than once"
            )
        rows, lines = [], []
        for row in reader:
            if not row:
                continue  # blank line
            if len(row) != len(header):
                raise TraceError(f"{path}: row {reader.line_num}, {_width_problem(row, header)}")
            rows.append([cell.strip() for cell in row])
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise TraceError(f"{path}: row {reader.line_num}: not a readable CSV ({exc})") from None
    return pd.DataFrame(rows, columns=header, index=lines, dtype=str)


def _width_problem(row: list[str], header: list[str]) -> str:
    """Which cell is missing or extra, as ``column '<col>': <problem>``."""
    cells = f"the row has {len(row)} cells, the header {len(header)}"
    if len(row) < len(header):
        return f"column {header[len(row)]!r}: missing cell ({cells})"
    extra = len(header) + 1
    return f"column #{extra} (not in the header): extra cell {row[len(header)]!r} ({cells})"


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
        raise TraceError(f"{path}: row {frame.index[position]}, column {column!r}: {problem}")


def _numbers(frame: pd.DataFrame, path: Path, column: str) -> pd.Series:
    values = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    _cell_error(path, frame, values.isna(), column, "{cell!r} is not a number")
    _cell_error(path, frame, ~np.isfinite(values), column, "{cell!r} is not a finite number")
    return values


def _seconds(frame: pd.DataFrame, path: Path, column: str) -> pd.Series:
    """Timestamps in seconds: finite, in [0, MAX_TIMESTAMP_S]."""
    values = _numbers(frame, path, column)
    _cell_error(path, frame, values < 0, column, "{cell} s is negative")
    _cell_error(
        path,
        frame,
        values > MAX_TIMESTAMP_S,
        column,
        f"{{cell}} s is after {MAX_TIMESTAMP_S:.0f} (2100-01-01 as Unix seconds, "
        "MAX_TIMESTAMP_S): not a time in seconds",
    )
    return values


def _tokens(frame: pd.DataFrame, path: Path, column: str, minimum: int) -> pd.Series:
    """Token counts: whole, non-negative numbers of at least ``minimum``, at most the bound."""
    values = _numbers(frame, path, column)
    _cell_error(path, frame, values < 0, column, "{cell} is negative")
    _cell_error(
        path,
        frame,
        values > MAX_TOKENS_PER_REQUEST,
        column,
        f"{{cell}} tokens is more than {MAX_TOKENS_PER_REQUEST:,} (MAX_TOKENS_PER_REQUEST)",
    )
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
        table.insert(0, "timestamp", _seconds(frame, path, LENGTHS_TIMESTAMP))
    return _nonempty(table.reset_index(drop=True), path)


def _burstgpt(
    frame: pd.DataFrame, path: Path, model: str | None, log_type: str | None
) -> pd.DataFrame:
    _require_columns(frame, path, BURSTGPT_COLUMNS)
    table = pd.DataFrame(
        {
            "timestamp": _seconds(frame, path, "Timestamp"),
            "prompt_tokens": _tokens(frame, path, "Request tokens", 0),
            "output_tokens": _tokens(frame, path, "Response tokens", 0),
        }
    )
    keep = pd.Series(True, index=frame.index)
    for column, wanted in (("Model", model), ("Log Type", log_type)):
        if wanted is not None:
            values = frame[column]
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
    stamps = pd.to_datetime(frame["TIMESTAMP"], format="ISO8601", utc=True, errors="coerce")
    _cell_error(path, frame, stamps.isna(), "TIMESTAMP", "{cell!r} is not a date and time")
    _cell_error(
        path,
        frame,
        (stamps < EARLIEST_DATE) | (stamps >= LATEST_DATE),
        "TIMESTAMP",
        f"{{cell!r}} is outside {EARLIEST_DATE.year}–{LATEST_DATE.year - 1}",
    )
    table = pd.DataFrame(
        {
            "timestamp": (stamps - stamps.min()).dt.total_seconds(),
            "prompt_tokens": _tokens(frame, path, "ContextTokens", 1),
            "output_tokens": _tokens(frame, path, "GeneratedTokens", 1),
        }
    )
    return _nonempty(table.reset_index(drop=True), path)


def _mooncake(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Also ``prefix_of`` (the earlier row whose first ``shared_tokens`` tokens it repeats, -1:
    none) and ``shared_tokens`` (whole shared 512-token blocks, at most either prompt)."""
    _require_columns(frame, path, MOONCAKE_COLUMNS)
    prompt = _tokens(frame, path, "input_length", 1)
    parent = _numbers(frame, path, "prefix_of")
    row = pd.Series(np.arange(len(frame)), index=frame.index)
    _cell_error(path, frame, (parent != np.floor(parent)) | (parent < -1) | (parent >= row), "prefix_of",
                "{cell} is not -1 or the number of an earlier request (rows count from 0)")
    parent = parent.astype(np.int64)
    blocks = _tokens(frame, path, "shared_blocks", 0)
    _cell_error(path, frame, (parent < 0) & (blocks > 0), "shared_blocks", "{cell} shared blocks with no prefix_of")
    parent_prompt = prompt.to_numpy()[np.maximum(parent.to_numpy(), 0)]
    # a block of 512 tokens is shared whole or, the last of a prompt, in part: a claim of more
    # blocks than either prompt has would be cut to the shorter prompt without a word
    held = np.ceil(np.minimum(prompt.to_numpy(), parent_prompt) / MOONCAKE_BLOCK_TOKENS)
    _cell_error(path, frame, (parent >= 0) & (blocks > held), "shared_blocks",
                f"{{cell}} shared blocks of {MOONCAKE_BLOCK_TOKENS} tokens exceed what this prompt and the "
                "one it repeats (prefix_of) hold")
    shared = np.where(parent >= 0, np.minimum(blocks * MOONCAKE_BLOCK_TOKENS, np.minimum(prompt, parent_prompt)), 0)
    stamps = _seconds(frame, path, "timestamp")
    # rows name earlier rows: replayed as recorded, the file's order must be the time order
    _cell_error(path, frame, stamps < stamps.cummax(), "timestamp",
                "{cell} s is earlier than a row above it (prefix_of counts rows in time order)")
    table = pd.DataFrame(
        {
            "timestamp": stamps,
            "prompt_tokens": prompt,
            "output_tokens": _tokens(frame, path, "output_length", 1),
            "prefix_of": parent,
            "shared_tokens": shared,
        }
    )
    return _nonempty(table.reset_index(drop=True), path)


def detect_format(columns: list[str] | pd.Index, path: str | Path) -> str:
    """Tell the format from the header, so configs can say ``format: auto``."""
    names = set(columns)
    if {"prefix_of", "shared_blocks"} <= names:
        return "mooncake"
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
        f"{', '.join(BURSTGPT_COLUMNS)} or Mooncake's {', '.join(MOONCAKE_COLUMNS)}"
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
    if kind == "mooncake":
        return _mooncake(frame, path)
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
