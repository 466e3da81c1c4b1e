"""vLLM 0.1.2's detokenizer as measured (``sim.hardware.detokenizer``): the rows on file, the
cost per held token drawn through them, the serving engine's charge, and the grade
``llumsim calibrate`` gives them."""

from __future__ import annotations

import csv

import pytest

from sim.hardware import calibration_report, detokenizer, overheads
from sim.hardware.catalog import DATA_DIR
from tests.hardware_support import replica


def line_steps(per_sequence_ms: float, per_token_ms: float, power: float = 1.0) -> detokenizer.Steps:
    """A measurement whose step costs ``per_sequence_ms`` a sequence plus ``per_token_ms`` ×
    (held tokens) ** ``power`` a sequence."""
    return {
        (batch, held): batch * (per_sequence_ms + per_token_ms * held**power)
        for batch in detokenizer.GRID_BATCHES
        for held in (1, *detokenizer.GRID_HELD)
    }


def test_the_measurement_covers_the_grid_on_both_paths_and_says_where_it_ran():
    with open(DATA_DIR / detokenizer.MEASUREMENT, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for path in (detokenizer.ARTIFACT_PATH, detokenizer.OTHER_PATH):
        points = {(int(r["batch"]), int(r["held_tokens"])) for r in rows if r["path"] == path}
        grid = {(b, h) for b in detokenizer.GRID_BATCHES for h in (1, *detokenizer.GRID_HELD)}
        assert grid <= points
        assert {h for b, h in points if b == 16} >= {2**k for k in range(12)}  # growth over 1-2,048 tokens
    assert all(r["cpu"] and r["load"] and r["date"] and "benchmarks/detokenizer.py" in r["command"] for r in rows)
    assert all("transformers 4.31.0" in r["versions"] for r in rows)  # the artifact's pin
    assert detokenizer.provenance()["cpu"] == rows[0]["cpu"]


def test_a_cost_linear_in_held_tokens_is_recovered_exactly():
    """Known answer: 5 µs a sequence plus 0.2 µs a held token."""
    steps = line_steps(5e-3, 2e-4)
    line = detokenizer.fit(steps)
    assert (line.per_sequence_ms, line.per_held_token_ms) == pytest.approx((5e-3, 2e-4), rel=1e-9)
    rows = detokenizer.rows(steps, line)
    assert len(rows) == 12 and all(r["rel_error"] == pytest.approx(0.0, abs=1e-9) for r in rows)
    assert all(r["per_sequence_ms"] == pytest.approx(5e-3 * r["batch"]) for r in rows)


def test_the_grade_fails_a_cost_that_no_line_describes():
    """A cost growing with the square of the held tokens: even the best line misses rows by
    far more than 10%, so the report fails; a charge 20% off a linear cost fails it too."""
    quadratic = line_steps(5e-3, 1e-7, power=2.0)
    fitted = detokenizer.rows(quadratic, detokenizer.fit(quadratic))
    assert not all(map(detokenizer.within_bound, fitted))
    linear = line_steps(5e-3, 2e-4)
    off = detokenizer.rows(linear, detokenizer.Line(5e-3, 1.2 * 2e-4))
    assert not all(map(detokenizer.within_bound, off))
    report = {"rows": [], "light_decode": [], "references": [], "heavy_decode": [], "heavy_prefill": [],
              "kv_kernel": {"transfer_holds": False}, "detokenizer": {"rows": fitted}}
    assert not calibration_report.passes(report)
    good = detokenizer.rows(linear, detokenizer.fit(linear))
    assert calibration_report.passes({**report, "detokenizer": {"rows": good}})


def test_the_serving_engine_is_charged_the_measured_cost_per_held_token():
    """The artifact's engine pays the slope of the line through its measured fast-path rows
    (within 10% of every grid row); vLLM V1 detokenises in another process and pays none."""
    assert overheads.DETOKENIZE_PER_OUTPUT_TOKEN_MS == pytest.approx(detokenizer.PER_HELD_TOKEN_MS, rel=1e-4)
    assert overheads.artifact_host_line(overheads.A40_REFERENCE).per_output_token_ms == overheads.DETOKENIZE_PER_OUTPUT_TOKEN_MS
    assert overheads.v1_host_line(overheads.A40_REFERENCE).per_output_token_ms == 0.0
    charged = detokenizer.Line(detokenizer.LINE.per_sequence_ms, overheads.DETOKENIZE_PER_OUTPUT_TOKEN_MS)
    assert all(map(detokenizer.within_bound, detokenizer.rows(line=charged)))
    # the per-sequence part is the measured step of one held token, to within 30%
    one_token = [detokenizer.measured_steps()[b, 1] / b for b in detokenizer.GRID_BATCHES]
    assert all(detokenizer.LINE.per_sequence_ms == pytest.approx(ms, rel=0.3) for ms in one_token)
    # the slow tokenizer, which the artifact did not use, costs an order of magnitude more
    assert detokenizer.other_path_line().per_held_token_ms > 5 * detokenizer.PER_HELD_TOKEN_MS


def test_calibrate_reports_the_rows_beside_the_replica_models_charge():
    model = replica("llama-7b")
    report = calibration_report.detokenizer_report(model)
    assert report["per_held_token_ms"] == pytest.approx(model.overhead_per_output_token * 1e3, rel=1e-12)
    assert [(r["batch"], r["held_tokens"]) for r in report["rows"]] == [
        (b, h) for b in (1, 16, 64, 256) for h in (128, 512, 2048)
    ]
    text = "\n".join(calibration_report.format_detokenizer(report))
    assert "benchmarks/detokenizer.py" in text and report["measured_on"]["cpu"] in text
    assert "OUTSIDE" not in text
