"""The paper's Figure 10 in the simulator, with the real A10 replica and transfer models:
which rows fitted the constants, and predictions of rows held out of the fit."""

from __future__ import annotations

import json
import math

import pytest

from sim.bench.fit_transfer import _solve
from sim.bench.holdout import FIT_LENGTHS, format_held_out, held_out_checks, held_out_lengths
from sim.bench.migration import LENGTHS, BenchRow, format_rows, reference_ms, run_bench
from sim.cli.main import main
from sim.hardware import load_replica_model


@pytest.fixture(scope="module")
def rows():
    return run_bench()


def test_every_row_meets_its_bound(rows):
    failing = [(r.model, r.mode, r.seq_len, round(r.downtime_ms, 1), r.reference_ms) for r in rows if not r.ok]
    assert not failing


@pytest.mark.parametrize("model", ["llama-7b", "llama-30b"])
def test_live_migration_is_short_two_stage_and_nearly_constant(rows, model):
    live = [r for r in rows if r.model == model and r.mode == "live"]
    assert [r.seq_len for r in live] == list(LENGTHS)
    assert all(r.stages == 2 and r.downtime_ms <= 40.0 for r in live)
    blocking = {r.seq_len: r.downtime_ms for r in rows if r.model == model and r.mode == "blocking"}
    recompute = {r.seq_len: r.downtime_ms for r in rows if r.model == model and r.mode == "recompute"}
    # constant vs linear: at 8k live migration is ~100x cheaper than either alternative
    assert blocking[8192] > 40 * live[-1].downtime_ms and recompute[8192] > 40 * live[-1].downtime_ms
    assert blocking[8192] > 20 * blocking[256] and recompute[8192] > 20 * recompute[256]
    # the copy slows co-located decode steps by the configured fraction, never more
    assert all(r.slowdown <= 0.01 + 1e-9 for r in live if r.slowdown == r.slowdown)


def test_each_row_says_whether_a_fit_saw_its_reference(rows):
    role = {(r.model, r.mode, r.seq_len): r.role for r in rows}
    assert {role[("llama-7b", mode, n)] for mode in ("live", "blocking") for n in LENGTHS} == {"fit: transfer"}
    assert role[("llama-30b", "blocking", 8192)] == "fit: network"
    assert {role[(m, "recompute", n)] for m in ("llama-7b", "llama-30b") for n in LENGTHS} == {"fit: replica"}
    assert {role[("llama-30b", "live", n)] for n in LENGTHS} == {"prediction"}
    assert role[("llama-30b", "blocking", 256)] == "no reference"
    assert "fit: transfer" in format_rows(rows) and "prediction" in format_rows(rows)


def test_the_stage_fit_recovers_known_constants():
    """Rows whose references follow a + blocks * bytes / bw exactly give back a and bw."""
    a, bw, block_bytes = 0.011, 2.4e9, 16 * 524288
    rows = [
        BenchRow("m", mode, n, 0.0, 1, blocks, last, math.nan, 1e3 * (a + (blocks if mode == "blocking" else last) * block_bytes / bw),
                 "synthetic", 0.0, True, "fit: transfer")
        for mode, n, blocks, last in [("blocking", 256, 17, 0), ("blocking", 8192, 513, 0), ("live", 256, 17, 1), ("live", 8192, 515, 3)]
    ]
    assert _solve(rows, block_bytes) == pytest.approx((a, bw))


@pytest.fixture(scope="module")
def held_out():
    return held_out_checks()


def test_lengths_held_out_of_the_fit_are_predicted_within_the_bench_bounds(held_out):
    lengths = held_out[0]
    assert lengths.split == "lengths" and [p.seq_len for p in lengths.predictions] == [512, 2048, 8192] * 2
    assert lengths.ok, format_held_out([lengths])
    assert lengths.worst_error < 0.30


def test_a_7b_fit_alone_does_not_predict_the_30b_blocking_copy(held_out):
    """Uncapped, a 4-GPU instance copies at 4 x the 7B per-GPU rate: ~1.4 s at 8k against the
    paper's ~3.2 s, which is why the network bandwidth is fitted to that point (its row's
    role says so)."""
    models = held_out[1]
    (blocking,) = [p for p in models.predictions if p.mode == "blocking"]
    c = models.constants
    big = load_replica_model("llama-30b")
    blocks = -(-8192 // big.block_size) + 1  # the request's blocks after a few decode steps
    expected = c["stage_latency"] + blocks * big.kv_bytes_per_token * big.block_size / (4 * c["gpu_bandwidth"])
    assert blocking.predicted_ms == pytest.approx(expected * 1e3, rel=0.01)
    assert blocking.error < -0.30 and not blocking.ok and not models.ok
    assert f"worst held-out error {models.worst_error * 100:.1f}%" in format_held_out([models])


def test_the_held_out_check_fails_when_the_held_out_rows_disagree():
    """References 1.5x larger at the held-out lengths (a transfer that is not linear in the
    blocks): the fit on the others cannot predict them, and the check says so."""
    def reference(model, mode, seq_len):
        ref, source = reference_ms(model, mode, seq_len)
        return (ref * 1.5, source) if seq_len not in FIT_LENGTHS and mode == "blocking" else (ref, source)

    check = held_out_lengths(reference=reference)
    blocking = [p for p in check.predictions if p.mode == "blocking"]
    assert not check.ok and all(not p.ok and p.error < -0.25 for p in blocking)


def test_the_command_prints_roles_and_the_held_out_errors(capsys):
    assert main(["bench", "migration", "--model", "llama-7b", "--held-out", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {row["role"] for row in document["rows"]} == {"fit: transfer", "fit: replica"}
    assert [c["split"] for c in document["held_out"]] == ["lengths", "models"]
    assert all(p["error"] is not None for c in document["held_out"] for p in c["predictions"])
    assert main(["bench", "migration", "--model", "llama-7b", "--held-out"]) == 0
    text = capsys.readouterr().out
    assert "held out, lengths" in text and "worst held-out error" in text and "prediction" not in text.split("held out")[0]
