"""The A10 calibration report (``sim.hardware.calibration_report``): its rows, their bounds
and the verdict ``llumsim calibrate`` exits with."""

from __future__ import annotations

import pytest

from sim.hardware import calibration_report
from tests.hardware_support import fitted_cache


@pytest.fixture(scope="module")
def report() -> dict:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LLUMSIM_CACHE_DIR", fitted_cache()[0])
        return calibration_report.calibration()


def test_the_report_rows(report):
    assert calibration_report.passes(report)
    assert len(report["rows"]) == 24
    assert set(report["rows"][0]) == {
        "model",
        "quantity",
        "seq_len",
        "measured_ms",
        "predicted_ms",
        "rel_error",
    }
    capacity = {c["model"]: c for c in report["capacity"]}
    # 12,800 batched tokens: beyond the measured 12,000 (792), at the MLP's 96.5 KiB a token
    assert capacity["llama-7b"]["kv_capacity_blocks"] == 782
    measured = {c["max_batched_tokens"]: c for c in report["measured_capacity"]}
    assert measured[12000]["measured_blocks"] == 792 and measured[12000]["predicted_blocks"] == 792
    assert capacity["llama-30b"]["tensor_parallel"] == 4
    light = {d["model"]: d for d in report["light_decode"]}
    seven = light["llama-7b"]
    assert seven["ratio"] == pytest.approx(seven["heaviest_ms"] / seven["one_request_ms"])
    assert seven["target_ratio"] == 2.6 and light["llama-30b"]["target_ratio"] is None
    assert seven["heaviest_tokens"] == capacity["llama-7b"]["kv_capacity_tokens"]
    assert seven["one_request_ms"] >= seven["bandwidth_floor_ms"] + seven["one_request_overhead_ms"]
    checks = [r for r in report["references"] if r["role"] == "check"]
    assert len(checks) >= 2 and len({r["engine"] for r in checks}) >= 2  # independent sources
    assert all(abs(r["rel_error"]) <= 0.10 for r in checks)
    assert [r["num_tokens"] for r in report["linear_layers"]] == [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128]


REFUTED = {"transfer_holds": False, "kernel_ratio": 1.1}  # Figure 4 refutes the FlashAttention transfer
NO_DETOKENIZER = {"rows": []}


def test_the_report_fails_on_a_slowdown_outside_its_band():
    row = {"model": "llama-7b", "rel_error": 0.0}
    decode = {"model": "llama-7b", "target_ratio": 2.6, "ratio": 2.6}
    check = {"role": "check", "rel_error": 0.05}
    ok = {"rows": [row], "light_decode": [decode], "references": [check], "heavy_decode": [], "heavy_prefill": [],
          "kv_kernel": REFUTED, "detokenizer": NO_DETOKENIZER}
    assert calibration_report.passes(ok)
    assert not calibration_report.passes({**ok, "light_decode": [{**decode, "ratio": 2.0}]})
    assert calibration_report.passes({**ok, "light_decode": [{**decode, "target_ratio": None, "ratio": 1.7}]})


def test_the_report_fails_on_a_light_batch_check_off_by_more_than_ten_percent():
    ok = {"rows": [], "light_decode": [], "references": [{"role": "check", "rel_error": -0.09}],
          "heavy_decode": [], "heavy_prefill": [], "kv_kernel": REFUTED, "detokenizer": NO_DETOKENIZER}
    assert calibration_report.passes(ok)
    assert not calibration_report.passes({**ok, "references": [{"role": "check", "rel_error": -0.11}]})
    context = {"role": "context", "rel_error": -0.13}  # another engine: shown, not graded
    assert calibration_report.passes({**ok, "references": [*ok["references"], context]})
    unmodelled = {"role": "check", "rel_error": None}
    assert calibration_report.passes({**ok, "references": [unmodelled]})


def test_the_report_fails_on_a_heavy_batch_check_off_by_more_than_ten_percent():
    """The weight stream of a heavy decode step and a prefill of the A10 table are checks; the
    KV stream (another kernel) is shown beside its measurement while Figure 4 refutes the
    transfer, and graded against it (× the kernel ratio) where Figure 4 would allow it."""
    decode = {"weights_error": 0.09, "kv_ratio": 1.9}
    prefill = {"rel_error": -0.05}
    ok = {"rows": [], "light_decode": [], "references": [], "heavy_decode": [decode], "heavy_prefill": [prefill],
          "kv_kernel": REFUTED, "detokenizer": NO_DETOKENIZER}
    assert calibration_report.passes(ok)
    assert not calibration_report.passes({**ok, "heavy_decode": [{**decode, "weights_error": -0.11}]})
    assert not calibration_report.passes({**ok, "heavy_prefill": [{"rel_error": 0.12}]})
    unmeasured = {"weights_error": None, "kv_ratio": None}  # batch 256: no memory-bound A40 row
    assert calibration_report.passes({**ok, "heavy_decode": [unmeasured], "heavy_prefill": [{"rel_error": None}]})
    held = {**REFUTED, "transfer_holds": True}
    assert not calibration_report.passes({**ok, "kv_kernel": held})  # 1.9 / 1.1 - 1 = +73%
    assert calibration_report.passes({**ok, "kv_kernel": held, "heavy_decode": [{**decode, "kv_ratio": 1.19}]})
    assert not calibration_report.passes({**ok, "kv_kernel": held, "heavy_decode": [{**decode, "kv_ratio": 1.22}]})


def test_heavy_rows_cover_the_issued_grid_and_check_every_measured_weight_stream(report):
    decode = report["heavy_decode"]
    assert {(r["batch"], r["context"]) for r in decode} == {
        (b, c) for b in (8, 16, 32, 64, 128, 256) for c in (256, 1024, 2048)
    }
    measured = [r for r in decode if r["weights_error"] is not None]
    assert {r["batch"] for r in measured} == {8, 16, 32, 64, 128}  # the A40's memory-bound rows
    assert all(abs(r["weights_error"]) <= 0.10 for r in measured)
    for r in decode:  # the parts are the step: weights + KV + the engine's CPU work
        assert r["weights_ms"] + r["kv_ms"] + r["cpu_ms"] == pytest.approx(r["step_ms"], rel=1e-5)
        assert r["fits_kv_capacity"] == (r["batch"] * r["context"] <= 782 * 16)
    prefill = {r["tokens"]: r for r in report["heavy_prefill"]}
    assert prefill[128]["measured_ms"] is None and prefill[8192]["measured_ms"] == 1995
    attention = report["prefill_attention"]
    assert [r["tokens"] for r in attention["rows"]] == [128, 256, 512, 1024, 2048, 4096]
    assert attention["table_bound_tokens"] == 4096 and attention["table_bound_ms_per_layer"] > 0
    # the finding's cause: Vidur's A40 kernel is slower than the A10 table allows, on each card's own peak
    assert 0 < attention["a40_peak_fraction"] < attention["table_bound_peak_fraction"] <= 1


def test_causal_attention_counts_the_pairs_a_causal_mask_keeps():
    from sim.hardware.calibration import causal_attention_flops

    # 2 tokens: pairs (0,0), (1,0), (1,1); QK^T and PV, one multiply-add (2 FLOPs) each per pair
    assert causal_attention_flops(2, heads=1, head_dim=1) == 3 * 2 * 2
    assert causal_attention_flops(2, heads=32, head_dim=128) == 32 * 128 * 3 * 2 * 2


def test_figure_4_decides_whether_the_flash_attention_rows_measure_the_artifacts_kernel(report):
    """The counterfactual is computed, and it could have come out for the transfer: the kernel
    ratio Figure 4 implies, put back in, gives Figure 4's target exactly."""
    from sim.hardware.calibration import figure_4_with_kv, kernel_ratio_for_ratio

    finding = report["kv_kernel"]
    assert finding["requests"] == 49 and finding["context"] == 256
    assert not finding["transfer_holds"] and finding["figure_4_ratio"] < 2.6 * 0.9
    assert finding["implied_kernel_ratio"] > 1.1 * 1.1  # well past vllm#3010's "10+%"
    one, heavy, modelled, flash = 30.0, 76.0, (0.3, 22.0), (0.45, 13.5)
    k = kernel_ratio_for_ratio(one, heavy, modelled, flash, 2.6)
    assert figure_4_with_kv(one, heavy, modelled, (k * flash[0], k * flash[1])) == pytest.approx(2.6)
    assert figure_4_with_kv(one, heavy, modelled, modelled) == pytest.approx(heavy / one)


def test_measurements_interpolate_linearly_between_batch_sizes():
    from sim.hardware.calibration import interpolated_in_batch

    rows = {32: 10.0, 64: 18.0}
    assert interpolated_in_batch(rows, 48) == 14.0
    assert interpolated_in_batch(rows, 32) == 10.0 and interpolated_in_batch(rows, 64) == 18.0
