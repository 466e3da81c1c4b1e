"""vLLM 0.1.2's detokenizer, measured: the rows ``benchmarks/detokenizer.py`` wrote
(``data/detokenizer_llama_transformers431.csv``), the cost per held output token the serving
engine is charged from them, and those rows beside that charge for ``llumsim calibrate``.

The Llumnix artifact (osdi24ae) turns every running sequence's whole output back into text at
every step (``vllm/transformers_utils/tokenizer.py`` ``detokenize_incrementally``, called per
sequence by ``vllm/engine/llm_engine.py`` ``_decode_sequences``). The benchmark runs that code
as written with transformers 4.31.0 (the artifact's pin) and LLaMA's tokenizer, on the fast
path the artifact's ``get_tokenizer`` took and on the slow one, at batch {1, 16, 64, 256} x
held output tokens {1, 128, 512, 2,048} per sequence and over 1-2,048 held tokens at batch
16. Each row's CPU, package versions, date and command are in the file.

What the rows show: a step costs a part per sequence (~5 µs on the fast path: the
special-id check and the new token's lookup) plus a part that grows linearly with the tokens
each sequence holds (``fit``: the line through the grid; ``rows``: each measured step beside
it, graded ±10%). The first is what any vLLM pays per sequence and step, and Vidur's
profile, which the model's per-request line is drawn through, already holds it: its phases
are sarathi-serve's timers (``CpuOperationMetrics``), and its ``process_model_outputs`` timer
wraps the sequence manager's step completion, which detokenises each sequence incrementally
(sarathi-serve ``sarathi/engine/base_llm_engine.py`` ``_on_step_completed``;
``sarathi/core/sequence_manager/engine_sequence_manager.py`` ``_decode_seq``). The second is
what the artifact's engine adds over an incremental detokenizer, and what the model charges:
``PER_HELD_TOKEN_MS`` per output token a batched request holds (a row's held tokens count the
step's new one, as the batch former's charge does).

The host: the CPU the rows were measured on (in the file). The artifact's host CPU is not
published, so there is no transfer: the rows are taken as the artifact host's cost.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache

import sim.hardware.catalog as catalog

MEASUREMENT = "detokenizer_llama_transformers431.csv"
# the artifact's ``get_tokenizer`` loads ``AutoTokenizer`` with ``use_fast`` (tokenizer.py lines
# 22-39) and its launch scripts set no ``--tokenizer-mode`` (default ``'auto'``, arg_utils.py line 15)
ARTIFACT_PATH = "fast"
OTHER_PATH = "slow"
GRID_BATCHES = (1, 16, 64, 256)
GRID_HELD = (128, 512, 2048)
TOLERANCE = 0.10  # a measured step against the line's

Steps = dict[tuple[int, int], float]  # (batch, held tokens) -> step ms


@lru_cache(maxsize=None)
def measured_steps(path: str = ARTIFACT_PATH) -> Steps:
    """One tokenizer path's measured step times."""
    with open(catalog.DATA_DIR / MEASUREMENT, newline="") as handle:
        steps = {
            (int(row["batch"]), int(row["held_tokens"])): float(row["step_ms"])
            for row in csv.DictReader(handle)
            if row["path"] == path
        }
    if not steps:
        raise ValueError(f"{MEASUREMENT}: no rows of tokenizer path {path!r}")
    return steps


def provenance() -> dict[str, str]:
    """Where the rows were measured: CPU, the host's load, package versions, date, command."""
    with open(catalog.DATA_DIR / MEASUREMENT, newline="") as handle:
        first = next(csv.DictReader(handle))
    return {key: first[key] for key in ("cpu", "load", "versions", "date", "command")}


@dataclass(frozen=True)
class Line:
    """A step's detokenizer time per sequence: ``per_sequence_ms`` + ``per_held_token_ms`` ×
    the output tokens it holds."""

    per_sequence_ms: float
    per_held_token_ms: float


def fit(steps: Steps) -> Line:
    """The line through the grid rows' time per sequence that minimises their squared
    relative errors (each row's residual divided by its measurement)."""
    points = [(h, steps[b, h] / b) for b in GRID_BATCHES for h in GRID_HELD]
    # normal equations of sum(((c + k * h) / y - 1) ** 2) in (c, k)
    s00 = sum(1 / y**2 for h, y in points)
    s01 = sum(h / y**2 for h, y in points)
    s11 = sum(h * h / y**2 for h, y in points)
    r0 = sum(1 / y for h, y in points)
    r1 = sum(h / y for h, y in points)
    det = s00 * s11 - s01 * s01
    return Line((r0 * s11 - r1 * s01) / det, (s00 * r1 - s01 * r0) / det)


LINE = fit(measured_steps(ARTIFACT_PATH))
PER_HELD_TOKEN_MS = LINE.per_held_token_ms


def rows(steps: Steps | None = None, line: Line = LINE) -> list[dict]:
    """Each grid row of the artifact's path: the measured step beside ``line``'s, in its two
    parts (the per-sequence one is in the per-request line; the engine is charged the
    other)."""
    steps = measured_steps(ARTIFACT_PATH) if steps is None else steps
    out = []
    for batch in GRID_BATCHES:
        for held in GRID_HELD:
            per_sequence = line.per_sequence_ms * batch
            tokens = line.per_held_token_ms * batch * held
            out.append(
                {
                    "batch": batch,
                    "held_tokens": held,
                    "measured_ms": steps[batch, held],
                    "per_sequence_ms": per_sequence,
                    "held_tokens_ms": tokens,
                    "model_ms": per_sequence + tokens,
                    "rel_error": (per_sequence + tokens) / steps[batch, held] - 1,
                }
            )
    return out


def within_bound(row: dict) -> bool:
    return abs(row["rel_error"]) <= TOLERANCE


def other_path_line() -> Line:
    """The slow tokenizer's line (not the artifact's path; context)."""
    return fit(measured_steps(OTHER_PATH))
