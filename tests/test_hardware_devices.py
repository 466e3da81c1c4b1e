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


def test_calibrate_device_names_an_unknown_gpu_as_bad_input(capsys):
    """Exit 2 and one line (bad input), not the 1 of "measurements miss the model"."""
    from sim.cli.main import main

    assert main(["calibrate", "--device", "h200"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("llumsim: error: --device: unknown device 'h200'; known devices: a10, ")
    assert len(err.splitlines()) == 1


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


LLAMA_70B = {"n_head": 64, "n_kv_head": 8, "n_embd": 8192, "n_expanded_embd": 28672,
             "vocab_size": 32768, "use_gated_mlp": True}
LLAMA_3_8B = {"n_head": 32, "n_kv_head": 8, "n_embd": 4096, "n_expanded_embd": 14336,
              "vocab_size": 128256, "use_gated_mlp": True}


def test_a_model_at_several_degrees_is_one_folder_measured_through_the_profiled_range(tmp_path):
    """Vidur keys a compute folder by device and model, so each of a model's tensor-parallel
    layouts adds its rows to one file; rows past 16,384 tokens, which no lookup reads, are left
    out, and rows measured that far are not continued."""
    from sim.hardware import operator_profiles

    vidur = pd.concat([vidur_rows(LLAMA_70B, tp, [1, 8, 16384, 32768], 0.001 * tp) for tp in (1, 2, 4, 8)])
    vidur.to_csv(tmp_path / "mlp.csv", index=False)
    (folder,) = operator_profiles.write(
        "a100_80gb", tmp_path / "mlp.csv", "a test file", profiles_dir=tmp_path, models=["llama-2-70b"]
    )
    mlp = pd.read_csv(folder / "mlp.csv.xz")
    assert mlp.groupby("num_tensor_parallel_workers")["num_tokens"].apply(list).to_dict() == {
        tp: [1, 8, 16384] for tp in (2, 4, 8)
    }
    assert set(mlp["vocab_size"]) == {32000}
    assert set(pd.read_csv(folder / "attention.csv.xz")["num_tensor_parallel_workers"]) == {2, 4, 8}
    note = (folder / "PROVENANCE.md").read_text()
    assert "at tensor parallelism 2, 4, 8" in note and "measured through 16384 tokens" in note
    # both 70B models have this block: a file of it holds either's shape, a 7B file neither's
    layouts = operator_layouts("a100_80gb")
    assert operator_profiles.holds_shape(vidur, layouts, "llama-3.1-70b")
    assert not operator_profiles.holds_shape(vidur_rows(LLAMA_7B, 1, [1], 1.0), layouts, "llama-2-70b")


def test_the_reference_ratio_carries_each_operator_at_each_count_it_measures(tmp_path):
    """--ratio-of: the rows of another GPU times one reference model's measured ratio between
    the two GPUs at the same count; past the reference's last count, the continuation."""
    from sim.hardware import operator_profiles

    layout = find_layout("llama-3.1-8b", "h100_80gb", 1)
    on_a100 = vidur_rows(LLAMA_3_8B, 1, [1, 8, 4096, 8192], 0.002)
    ref_a100 = vidur_rows(LLAMA_7B, 1, [1, 8, 4096], 0.001)
    ref_h100 = vidur_rows(LLAMA_7B, 1, [1, 8, 4096], 0.001)
    up = "time_stats.mlp_up_proj.median"
    ref_h100[up] = ref_h100[up] * [0.5, 0.6, 0.3]  # the H100's speed-up of one operator, per count
    ratio = operator_profiles.reference_ratio(ref_a100, ref_h100, 1)
    rows, last = operator_profiles.continued(
        operator_profiles.ratio_transferred(operator_profiles.vidur_rows(on_a100, layout), ratio)
    )
    column = rows.set_index("num_tokens")[up]
    assert last == 4096  # 8,192 is measured on the A100, but the ratio is not
    assert [column[t] for t in (1, 8, 4096)] == pytest.approx([0.002 * 0.5, 0.016 * 0.6, 8.192 * 0.3])
    assert column[8192] == pytest.approx(2 * column[4096])
    assert rows.set_index("num_tokens")["time_stats.add.median"][8] == pytest.approx(0.016)  # ratio 1
    on_a100.to_csv(tmp_path / "mlp.csv", index=False)
    with pytest.raises(ValueError, match="name it with --measured-on"):
        operator_profiles.write("h100_80gb", tmp_path / "mlp.csv", "s", profiles_dir=tmp_path,
                                models=["llama-3.1-8b"], ratio_of=(tmp_path / "mlp.csv", tmp_path / "mlp.csv"))


def all_reduce_rows(workers: int, per_node: int, sizes: list[int], ms_per_mib: float) -> pd.DataFrame:
    return pd.DataFrame({
        "time_stats.all_reduce.median": [ms_per_mib * s / 2**20 for s in sizes],
        "time_stats.all_reduce.mean": -1.0, "rank": 0, "num_workers": workers, "size": sizes,
        "collective": "all_reduce", "devices_per_node": per_node, "max_devices_per_node": 8,
    })


def test_all_reduce_rows_are_the_nodes_degrees_within_one_node_continued_by_bytes():
    from sim.hardware.network_profiles import measured_all_reduce, node_degrees
    from sim.hardware.predictor_settings import ALL_REDUCE_MAX_SIZE

    last = 64 * 2**20
    vidur = pd.concat([
        all_reduce_rows(2, 2, [2048, 10240, 10240, last - 2**17, last], 0.01),  # 10,240 twice: the first
        all_reduce_rows(2, 1, [2048, last], 9.0),  # across nodes: not read
        all_reduce_rows(4, 4, [2048, last], 0.02),
    ])
    rows, measured = measured_all_reduce(vidur, 2)
    assert measured == last and rows["size"].is_unique and rows["size"].max() == ALL_REDUCE_MAX_SIZE
    assert set(rows["devices_per_node"]) == {2} and not any(c.endswith(".mean") for c in rows)
    by_size = rows.set_index("size")["time_stats.all_reduce.median"]
    assert by_size[last + 2**17] == pytest.approx(by_size[last] * (last + 2**17) / last)  # the grid's last step
    assert by_size[4 * last] == pytest.approx(4 * by_size[last])
    with pytest.raises(ValueError, match="no all-reduce of 8 GPUs within one node"):
        measured_all_reduce(vidur, 8)
    assert node_degrees("a100_80gb_8") == node_degrees("h100_80gb_8") == [2, 4, 8]
    with pytest.raises(ValueError, match="has no tensor parallelism"):
        node_degrees("h100_80gb_1")
    with pytest.raises(ValueError, match="does not take Vidur's measured operators"):
        node_degrees("a10_pcie_4")
