"""GPUs beyond the A10: profiles from Vidur's measured operators, and validation on the device."""

from __future__ import annotations

import argparse

import pandas as pd
import pytest

from sim.cli import calibrate
from sim.hardware import device_validation, load_replica_model
from sim.hardware.calibration import DeviceReference, generation_gpu_with_sampler_ms
from sim.hardware.catalog import DEVICE_REFERENCES_CSV, LAYOUTS, find_layout
from sim.hardware.operator_profiles import measured_operators, operator_layouts
from sim.hardware.timing import TOKEN_OPS
from tests.hardware_support import fitted_cache

OTHER_DEVICES = sorted({layout.device for layout in LAYOUTS} - {"a10"})
# the GPUs with published measurements of their own (the A100 40GB has none: carried over)
VALIDATED = sorted({row["device"] for row in pd.read_csv(DEVICE_REFERENCES_CSV).to_dict("records")})


def vidur_rows(shape: dict, tp: int, tokens: list[int], scale: float) -> pd.DataFrame:
    frame = pd.DataFrame({**shape, "num_tokens": tokens, "num_tensor_parallel_workers": tp})
    for op in TOKEN_OPS:
        frame[f"time_stats.{op}.median"] = [scale * t for t in tokens]
        frame[f"time_stats.{op}.mean"] = -1.0  # other statistics are not read
    return frame


LLAMA_7B = {"n_head": 32, "n_kv_head": 32, "n_embd": 4096, "n_expanded_embd": 11008,
            "vocab_size": 32768, "use_gated_mlp": True}


def test_measured_operators_take_the_layouts_shape_and_continue_in_proportion_to_tokens():
    layout = find_layout("llama-7b", OTHER_DEVICES[0], None)
    other_shape = {**LLAMA_7B, "n_embd": 5120}
    vidur = pd.concat([
        vidur_rows(LLAMA_7B, 1, [1, 8, 16, 4096], 0.001),
        vidur_rows(LLAMA_7B, 1, [16], 9.0),  # profiled twice: the first row counts
        vidur_rows(LLAMA_7B, 2, [1, 8], 5.0),  # another tensor parallelism
        vidur_rows(other_shape, 1, [1, 8], 7.0),  # another model
    ])
    operators, last = measured_operators(vidur, layout)
    assert last == 4096
    column = operators.set_index("num_tokens")["time_stats.mlp_up_proj.median"]
    assert column[16] == pytest.approx(0.016)
    assert column[8192] == pytest.approx(2 * column[4096]) and column[16384] == pytest.approx(4 * column[4096])
    assert operators["num_tokens"].is_monotonic_increasing and operators["num_tokens"].max() == 16384
    assert set(operators["vocab_size"]) == {32000}  # the layout's own vocabulary, which the predictor keys by
    assert not any(c.endswith(".mean") for c in operators.columns)


def test_measured_operators_name_what_is_missing():
    layout = find_layout("llama-7b", OTHER_DEVICES[0], None)
    with pytest.raises(ValueError, match="no rows of llama-7b's shape at tensor parallelism 1"):
        measured_operators(vidur_rows(LLAMA_7B, 2, [1], 1.0), layout)
    with pytest.raises(ValueError, match="lacks time_stats.add.median"):
        measured_operators(vidur_rows(LLAMA_7B, 1, [1], 1.0).drop(columns="time_stats.add.median"), layout)


def test_only_a_device_whose_entry_takes_vidurs_operators_is_written():
    assert [layout.device for layout in operator_layouts(OTHER_DEVICES[0])] == [OTHER_DEVICES[0]]
    with pytest.raises(ValueError, match="does not take Vidur's measured operators"):
        operator_layouts("a10")
    with pytest.raises(ValueError, match="no layout uses device 'tpu'"):
        operator_layouts("tpu")


def test_shipped_operator_profiles_continue_past_the_measured_range(monkeypatch):
    monkeypatch.setenv("LLUMSIM_CACHE_DIR", fitted_cache()[0])
    for device in OTHER_DEVICES:
        layout = find_layout("llama-7b", device, None)
        mlp = pd.read_csv(layout.compute_dir / "mlp.csv.xz").set_index("num_tokens")
        carried = "Measured on" in (layout.compute_dir / "PROVENANCE.md").read_text()
        for op in TOKEN_OPS:  # (a card measured on another: times its transfer ratio, below)
            times = mlp[f"time_stats.{op}.median"]
            assert carried or times[16384] == pytest.approx(4 * times[4096], rel=1e-5)
        # the instance is faster than an A10's and holds more KV: the physics points the right way
        model, a10 = load_replica_model("llama-7b", device), load_replica_model("llama-7b", "a10")
        assert model.decode_time(8, 512) < a10.decode_time(8, 512)
        assert model.prefill_time(2048) < a10.prefill_time(2048)
        assert model.kv_capacity_blocks > 3 * a10.kv_capacity_blocks  # 40 or 80 GB against 24


def test_generation_latency_is_one_prefill_and_output_minus_one_steps_with_the_sampler_for_the_host_work():
    ref = DeviceReference("check", "x", "d", "g", batch=4, prompt_tokens=100, output_tokens=5,
                          scope="generation_gpu_with_sampler", measured_ms=1.0, source="s")
    calls = []

    def batch_time(prefills, decodes, kv):
        calls.append((prefills, decodes, kv))
        return 0.100 if prefills else 0.010

    ms = generation_gpu_with_sampler_ms(ref, batch_time, lambda n: 0.002 * n, lambda n: 0.001 * n)
    # 0.1 + 4 × 0.01 s, and 5 iterations each trading 8 ms of host work for 4 ms of sampler
    assert ms == pytest.approx((0.100 + 4 * 0.010 + 5 * (0.004 - 0.008)) * 1e3)
    assert calls[0][0] == ((100, 100),) * 4
    assert [kv for _, _, kv in calls[1:]] == [4 * 101, 4 * 102, 4 * 103, 4 * 104]


def test_a_device_passes_only_with_every_check_within_fifteen_percent():
    check = {"role": "check", "rel_error": -0.149}
    context = {"role": "context", "rel_error": 0.9}
    assert device_validation.passes({"references": [check, context]})
    assert not device_validation.passes({"references": [{**check, "rel_error": -0.151}]})
    assert not device_validation.passes({"references": [context]})  # nothing validated it


@pytest.fixture
def calibrate_device(monkeypatch, capsys):
    monkeypatch.setenv("LLUMSIM_CACHE_DIR", fitted_cache()[0])

    def run(*argv: str):
        parser = argparse.ArgumentParser()
        calibrate.add_arguments(parser)
        code = calibrate.run(parser.parse_args(argv))
        return code, capsys.readouterr().out

    return run


def test_a_gpu_without_a_measurement_of_its_own_is_not_validated(calibrate_device):
    unvalidated = sorted(set(OTHER_DEVICES) - set(VALIDATED))
    assert unvalidated == ["a100_40gb"]
    code, out = calibrate_device("--device", "a100_40gb")
    assert code == 1 and "not validated" in out


def test_the_a100_40gb_is_the_80gb_card_carried_over_by_bandwidth(monkeypatch):
    """Same die and FLOP/s, 1,555 against 2,039 GB/s: a memory-bound operator takes the
    bandwidth ratio longer, a compute-bound one the same."""
    monkeypatch.setenv("LLUMSIM_CACHE_DIR", fitted_cache()[0])
    small, large = (pd.read_csv(find_layout("llama-7b", d, None).compute_dir / "mlp.csv.xz").set_index("num_tokens")
                    for d in ("a100_40gb", "a100_80gb"))
    up = "time_stats.mlp_up_proj.median"
    assert small[up][1] / large[up][1] == pytest.approx(2039 / 1555, rel=0.03)  # one token: weights
    assert small[up][4096] / large[up][4096] == pytest.approx(1.0, abs=0.03)  # 4,096: compute
    assert load_replica_model("llama-7b", "a100_40gb").kv_capacity_blocks < load_replica_model(
        "llama-7b", "a100_80gb").kv_capacity_blocks / 2


@pytest.mark.parametrize("device", VALIDATED)
def test_calibrate_device_prints_independent_measurements_of_that_gpu(calibrate_device, device):
    code, out = calibrate_device("--device", device)
    result = device_validation.validation(device)
    checks = [r for r in result["references"] if r["role"] == "check"]
    assert len(checks) >= 2 and {r["batch"] for r in checks} >= {1, 8}
    assert code == (0 if device_validation.passes(result) else 1)
    assert all(r["engine"] in out for r in checks) and "KV capacity" in out
    for r in checks:  # the per-iteration gap is the whole gap, spread over the iterations
        assert r["unexplained_ms_per_iteration"] * r["output_tokens"] == pytest.approx(r["measured_ms"] - r["predicted_ms"])


def test_calibrate_device_names_an_unknown_gpu(calibrate_device):
    with pytest.raises(SystemExit, match="unknown device 'h200'; known devices: a10, "):
        calibrate_device("--device", "h200")


def test_a_pool_left_at_the_default_cpu_line_takes_its_own_gpus(monkeypatch):
    """The config's CPU-line defaults are the A10 entry's; a pool on another GPU left at them
    gets that GPU's measured line (an A100 host's), one that sets them keeps what it set."""
    from sim.config import load_config
    from sim.config.schema import OverheadConfig
    from sim.engine.setup import load_model
    from sim.hardware import overheads

    monkeypatch.setenv("LLUMSIM_CACHE_DIR", fitted_cache()[0])

    def pool_model(**pool):
        return load_model(load_config(base={"pools": [{"name": "p", **pool}]}).instance_pools()[0])

    a100 = overheads.engine_overheads(find_layout("llama-7b", "a100_80gb", None).device_sku.cpu_overheads)
    model = pool_model(device="a100_80gb")
    assert model.overhead_base == pytest.approx(a100.base_ms * 1e-3) != OverheadConfig().base
    assert model.overhead_per_request == pytest.approx(a100.per_request_ms * 1e-3)
    assert pool_model(device="a100_80gb", overhead={"base": 0.001}).overhead_base == 0.001
    a10 = pool_model(device="a10")
    assert (a10.overhead_base, a10.overhead_per_request) == (OverheadConfig().base, OverheadConfig().per_request)
