"""``llumsim calibrate``: table, JSON document and plot of predicted vs measured."""

from __future__ import annotations

import argparse
import json

import pytest

from sim.cli import calibrate
from tests.hardware_support import fitted_cache


@pytest.fixture
def run_calibrate(monkeypatch, capsys):
    monkeypatch.setenv("LLUMSIM_CACHE_DIR", fitted_cache()[0])

    def run(*argv: str):
        parser = argparse.ArgumentParser()
        calibrate.add_arguments(parser)
        code = calibrate.run(parser.parse_args(argv))
        return code, capsys.readouterr()

    return run


def test_json_document(run_calibrate):
    code, out = run_calibrate("--json")
    assert code == 0
    document = json.loads(out.out)
    assert len(document["rows"]) == 24
    assert set(document["rows"][0]) == {
        "model",
        "quantity",
        "seq_len",
        "measured_ms",
        "predicted_ms",
        "rel_error",
    }
    capacity = {c["model"]: c for c in document["capacity"]}
    # 12,800 batched tokens: beyond the measured 12,000 (792), at the MLP's 96.5 KiB a token
    assert capacity["llama-7b"]["kv_capacity_blocks"] == 782
    measured = {c["max_batched_tokens"]: c for c in document["measured_capacity"]}
    assert measured[12000]["measured_blocks"] == 792 and measured[12000]["predicted_blocks"] == 792
    assert capacity["llama-30b"]["tensor_parallel"] == 4
    light = {d["model"]: d for d in document["light_decode"]}
    seven = light["llama-7b"]
    assert seven["ratio"] == pytest.approx(seven["heaviest_ms"] / seven["one_request_ms"])
    assert seven["target_ratio"] == 2.6 and light["llama-30b"]["target_ratio"] is None
    assert seven["heaviest_tokens"] == capacity["llama-7b"]["kv_capacity_tokens"]
    assert seven["one_request_ms"] >= seven["bandwidth_floor_ms"] + seven["one_request_overhead_ms"]
    checks = [r for r in document["references"] if r["role"] == "check"]
    assert len(checks) >= 2 and len({r["engine"] for r in checks}) >= 2  # independent sources
    assert all(abs(r["rel_error"]) <= 0.10 for r in checks)
    assert [r["num_tokens"] for r in document["linear_layers"]] == [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128]


def test_table_and_plot(run_calibrate, tmp_path):
    plot = tmp_path / "calibration.png"
    code, out = run_calibrate("--plot", str(plot))
    assert code == 0
    assert "llama-30b  decode      8192" in out.out and "KV capacity" in out.out
    assert "Light-batch decode step" in out.out and "ratio" in out.out
    assert "Light-batch references" in out.out and "llama.cpp" in out.out
    assert "Heavy batches" in out.out and "Heavy prefills" in out.out
    # the one capacity point no monotone profile-run peak reproduces (test_hardware_capacity)
    outside = [line for line in out.out.splitlines() if "OUTSIDE" in line]
    assert outside == [line for line in outside if "7,500 batched tokens" in line] and len(outside) == 1
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_exit_status_fails_on_a_slowdown_outside_its_band():
    row = {"model": "llama-7b", "rel_error": 0.0}
    decode = {"model": "llama-7b", "target_ratio": 2.6, "ratio": 2.6}
    check = {"role": "check", "rel_error": 0.05}
    ok = {"rows": [row], "light_decode": [decode], "references": [check], "heavy_decode": [], "heavy_prefill": []}
    assert calibrate.passes(ok)
    assert not calibrate.passes({**ok, "light_decode": [{**decode, "ratio": 2.0}]})
    assert calibrate.passes({**ok, "light_decode": [{**decode, "target_ratio": None, "ratio": 1.7}]})


def test_exit_status_fails_on_a_light_batch_check_off_by_more_than_ten_percent():
    ok = {"rows": [], "light_decode": [], "references": [{"role": "check", "rel_error": -0.09}],
          "heavy_decode": [], "heavy_prefill": []}
    assert calibrate.passes(ok)
    assert not calibrate.passes({**ok, "references": [{"role": "check", "rel_error": -0.11}]})
    context = {"role": "context", "rel_error": -0.13}  # another engine: shown, not graded
    assert calibrate.passes({**ok, "references": [*ok["references"], context]})
    unmodelled = {"role": "check", "rel_error": None}
    assert calibrate.passes({**ok, "references": [unmodelled]})


def test_exit_status_fails_on_a_heavy_batch_check_off_by_more_than_ten_percent():
    """The weight stream of a heavy decode step and a prefill of the A10 table are checks; the
    KV stream (another kernel) is shown beside its measurement, never graded."""
    decode = {"weights_error": 0.09, "kv_ratio": 1.9}
    prefill = {"rel_error": -0.05}
    ok = {"rows": [], "light_decode": [], "references": [], "heavy_decode": [decode], "heavy_prefill": [prefill]}
    assert calibrate.passes(ok)
    assert not calibrate.passes({**ok, "heavy_decode": [{**decode, "weights_error": -0.11}]})
    assert not calibrate.passes({**ok, "heavy_prefill": [{"rel_error": 0.12}]})
    unmeasured = {"weights_error": None, "kv_ratio": None}  # batch 256: no memory-bound A40 row
    assert calibrate.passes({**ok, "heavy_decode": [unmeasured], "heavy_prefill": [{"rel_error": None}]})


def test_heavy_rows_cover_the_issued_grid_and_check_every_measured_weight_stream(run_calibrate):
    code, out = run_calibrate("--json")
    document = json.loads(out.out)
    decode = document["heavy_decode"]
    assert {(r["batch"], r["context"]) for r in decode} == {
        (b, c) for b in (8, 16, 32, 64, 128, 256) for c in (256, 1024, 2048)
    }
    measured = [r for r in decode if r["weights_error"] is not None]
    assert {r["batch"] for r in measured} == {8, 16, 32, 64, 128}  # the A40's memory-bound rows
    assert all(abs(r["weights_error"]) <= 0.10 for r in measured)
    for r in decode:  # the parts are the step: weights + KV + the engine's CPU work
        assert r["weights_ms"] + r["kv_ms"] + r["cpu_ms"] == pytest.approx(r["step_ms"], rel=1e-5)
        assert r["fits_kv_capacity"] == (r["batch"] * r["context"] <= 782 * 16)
    prefill = {r["tokens"]: r for r in document["heavy_prefill"]}
    assert prefill[128]["measured_ms"] is None and prefill[8192]["measured_ms"] == 1995
    attention = document["prefill_attention"]
    assert [r["tokens"] for r in attention["rows"]] == [128, 256, 512, 1024, 2048, 4096]
    assert attention["table_bound_tokens"] == 4096 and attention["table_bound_ms_per_layer"] > 0
