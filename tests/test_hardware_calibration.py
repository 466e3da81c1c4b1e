"""Acceptance: the replica model reproduces the A10 measurement table within its bounds."""

from __future__ import annotations

import json

import pytest

from sim.hardware.calibration import (
    TOLERANCE,
    batch_of,
    load_measurements,
    relative_error,
    table_attention_bound_ms,
)
from sim.hardware.catalog import FIT_JSON
from tests.hardware_support import figure_10_replica

ROWS = load_measurements()


def test_table_has_every_prefill_and_decode_row():
    assert {(m.model, m.quantity) for m in ROWS} == {
        (model, quantity)
        for model in ("llama-7b", "llama-30b")
        for quantity in ("prefill", "decode")
    }
    assert len(ROWS) == 24


@pytest.mark.parametrize("row", ROWS, ids=lambda m: f"{m.model}-{m.quantity}-{m.seq_len}")
def test_row_within_bound(row):
    """7B prefill and decode within ±10%, 30B (TP4) within ±15%, on the table's engine."""
    predicted_ms = figure_10_replica(row.model).batch_time(*batch_of(row)) * 1e3
    assert abs(relative_error(predicted_ms, row.measured_ms)) <= TOLERANCE[row.model]


def test_predictor_computes_the_fitted_function():
    """The fit evaluated the performance model at Vidur's lookup keys; the predictor, fitted
    on the written profiles, must give the same numbers (up to the profiles' 6 digits)."""
    fitted = json.loads(FIT_JSON.read_text())["rows"]
    assert len(fitted) == len(ROWS)
    for row, record in zip(ROWS, fitted):
        assert (row.model, row.quantity, row.seq_len) == (
            record["model"],
            record["quantity"],
            record["seq_len"],
        )
        predicted_ms = figure_10_replica(row.model).batch_time(*batch_of(row)) * 1e3
        assert predicted_ms == pytest.approx(record["predicted_ms"], rel=1e-5)


def test_decode_rows_use_the_length_including_the_new_token():
    decode = next(m for m in ROWS if m.quantity == "decode" and m.seq_len == 512)
    assert batch_of(decode) == ([], 16, 16 * 512)


def test_the_tables_growth_bounds_prefill_attention_by_its_quadratic_term():
    """A known answer: a prefill made of CPU work c, operators linear in tokens and attention
    quadratic gives back its own attention per layer from its times at n and 2n tokens."""
    cpu, linear_per_token, layers, attention_at_n, n = 2.0, 0.2, 32, 1.5, 4096

    def prefill_ms(tokens: int) -> float:
        return cpu + linear_per_token * tokens + layers * attention_at_n * (tokens / n) ** 2

    table = {n: prefill_ms(n), 2 * n: prefill_ms(2 * n)}
    assert table_attention_bound_ms(table, cpu, layers, n) == pytest.approx(attention_at_n)
    # a table that grows only linearly leaves no room for attention at all
    assert table_attention_bound_ms({n: 100.0, 2 * n: 200.0 - cpu}, cpu, layers, n) == pytest.approx(0.0)
