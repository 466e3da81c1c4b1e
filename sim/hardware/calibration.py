"""The A10 measurement table and what each of its rows asks of a replica model.

Rows of ``data/a10_measurements.csv`` (Llumnix artifact, Figure 10): for sequence length L,
the batch holds ~8,192 tokens, i.e. 8192 // L requests of L tokens each.

* ``prefill``: one fresh sequence of L tokens is prefilled (q = kv = L).
* ``decode``: one decode step of 8192 // L requests whose context is L tokens once this
  step's token is in (Vidur's ``num_kv_tokens`` counts the KV after the iteration).

The migration rows (``live_migration_downtime``, ``blocking_copy_downtime``) are kept in the
file for the migration model; they are not execution times and are not calibrated here.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import Callable, Sequence

from sim.hardware.catalog import MEASUREMENTS_CSV

BATCH_TOKENS = 8192
EXECUTION_QUANTITIES = ("prefill", "decode")
# Acceptance bounds on |predicted / measured - 1| (issue #2).
TOLERANCE = {"llama-7b": 0.10, "llama-30b": 0.15}
# Paper §6.1: LLaMA-7B on one A10 holds 13,616 tokens = 851 blocks of 16 at utilisation 0.9.
PAPER_KV_BLOCKS = {"llama-7b": 851}

Batch = tuple[Sequence[tuple[int, int]], int, int]  # (prefills, num_decodes, decode_kv_tokens)


@dataclass(frozen=True)
class Measurement:
    model: str
    quantity: str
    seq_len: int
    measured_ms: float


def load_measurements(quantities: Sequence[str] = EXECUTION_QUANTITIES) -> list[Measurement]:
    """The measurement rows of the given quantities, in file order."""
    with open(MEASUREMENTS_CSV, newline="") as handle:
        return [
            Measurement(row["model"], row["quantity"], int(row["seq_len"]), float(row["measured_ms"]))
            for row in csv.DictReader(handle)
            if row["quantity"] in quantities
        ]


def batch_of(measurement: Measurement) -> Batch:
    """The ``batch_time`` arguments that reproduce one measurement row."""
    length = measurement.seq_len
    if measurement.quantity == "prefill":
        return [(length, length)], 0, 0
    if measurement.quantity == "decode":
        requests = BATCH_TOKENS // length
        return [], requests, requests * length
    raise ValueError(f"{measurement.quantity!r} is not an execution-time quantity")


def relative_error(predicted_ms: float, measured_ms: float) -> float:
    return predicted_ms / measured_ms - 1


def compare(
    measurements: Sequence[Measurement], batch_time_ms: Callable[[str, Batch], float]
) -> list[dict]:
    """Predicted vs measured per row; ``batch_time_ms(model, batch)`` is the predictor."""
    rows = []
    for m in measurements:
        predicted = batch_time_ms(m.model, batch_of(m))
        rows.append(
            {
                "model": m.model,
                "quantity": m.quantity,
                "seq_len": m.seq_len,
                "measured_ms": m.measured_ms,
                "predicted_ms": predicted,
                "rel_error": relative_error(predicted, m.measured_ms),
            }
        )
    return rows
