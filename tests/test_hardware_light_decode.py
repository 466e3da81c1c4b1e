"""Light-batch decode: the bandwidth floor, Figure 4's slowdown, and the config keys that set
the engine's overhead and scale the decode step."""

from __future__ import annotations

import inspect
import json

import pytest

from sim.config.loader import ConfigError, from_dict
from sim.config.schema import ClusterConfig, SimulationConfig
from sim.hardware import load_replica_model, overheads
from sim.hardware.calibration import (
    DECODE_SLOWDOWN,
    DECODE_SLOWDOWN_BOUND,
    NEAR_IDEAL_TOKENS,
    bandwidth_floor_ms,
    decode_range,
    default_kv_capacity_tokens,
)
from sim.hardware.catalog import FIT_JSON, find_layout
from tests.hardware_support import fitted_cache, replica

MIXED = ([(300, 300), (64, 900)], 12, 12 * 700)
DECODE_ONLY = ([], 40, 40 * 300)


def summary(model: str) -> dict:
    m = replica(model)
    layout = find_layout(model, "a10", None)
    return decode_range(
        model,
        m.kv_capacity_blocks * m.block_size,
        bandwidth_floor_ms(layout),
        lambda batch: m.batch_time(*batch) * 1e3,
    )


def test_llama_7b_floor_is_its_weights_at_600_gb_per_s():
    assert bandwidth_floor_ms(find_layout("llama-7b", "a10", None)) == pytest.approx(22.5, rel=0.01)


@pytest.mark.parametrize("model", ["llama-7b", "llama-30b"])
def test_one_request_step_is_no_faster_than_streaming_the_weights(model):
    """Every weight crosses the memory bus once per step; the engine's CPU work adds to that."""
    m = replica(model)
    floor_s = bandwidth_floor_ms(find_layout(model, "a10", None)) * 1e-3 + m.overhead_time(1)
    assert m.decode_time(1, 1) >= floor_s
    assert m.decode_time(1, 1) == summary(model)["one_request_ms"] * 1e-3


def test_heaviest_over_one_request_step_is_figure_4s_slowdown():
    """Llumnix Figure 4: batching degrades one decode step by up to 2.6× (LLaMA-7B, A10)."""
    s = summary("llama-7b")
    assert s["heaviest_tokens"] == replica("llama-7b").kv_capacity_blocks * 16
    assert abs(s["ratio"] / DECODE_SLOWDOWN["llama-7b"] - 1) <= DECODE_SLOWDOWN_BOUND


def test_decode_stays_near_ideal_up_to_the_high_priority_load_target():
    """The paper keeps high-priority instances under 1,600 tokens because decode is still
    near its ideal speed there: less than a fifth of the way to the heaviest step."""
    s = summary("llama-7b")
    slowdown = (s["at_1600_tokens_ms"] - s["one_request_ms"]) / (s["heaviest_ms"] - s["one_request_ms"])
    assert 0 < slowdown < 0.2
    assert NEAR_IDEAL_TOKENS == 1600


def test_predictor_computes_the_fitted_light_batch_steps():
    """The build recorded the light-batch steps from the performance model; the predictor,
    fitted on the written profiles, gives the same numbers."""
    recorded = {r["model"]: r for r in json.loads(FIT_JSON.read_text())["decode_range"]}
    for model, record in recorded.items():
        assert default_kv_capacity_tokens(find_layout(model, "a10", None)) == record["heaviest_tokens"]
        ours = summary(model)
        for key in ("one_request_ms", "heaviest_ms", "at_1600_tokens_ms"):
            assert ours[key] == pytest.approx(record[key], rel=1e-5), (model, key)


def loaded(**kwargs):
    return load_replica_model("llama-7b", cache_dir=fitted_cache()[0], **kwargs)


@pytest.mark.parametrize("batch", [DECODE_ONLY, MIXED, ([(2048, 2048)], 0, 0)], ids=["decode", "mixed", "prefill"])
def test_overhead_keys_add_exactly_what_they_say(batch):
    default, changed = replica("llama-7b"), loaded(overhead_base=0.004, overhead_per_request=0.0005)
    requests = len(batch[0]) + batch[1]
    extra = (0.004 - default.overhead_base) + (0.0005 - default.overhead_per_request) * requests
    assert changed.batch_time(*batch) - default.batch_time(*batch) == pytest.approx(extra, rel=1e-9)
    zero = loaded(overhead_base=0.0, overhead_per_request=0.0)
    assert default.batch_time(*batch) - zero.batch_time(*batch) == pytest.approx(
        default.overhead_time(requests), rel=1e-9
    )


def test_decode_scale_multiplies_the_gpu_time_of_decode_only_iterations():
    default, slower = replica("llama-7b"), loaded(decode_scale=1.5)
    requests = DECODE_ONLY[1]
    gpu = default.batch_time(*DECODE_ONLY) - default.overhead_time(requests)
    assert slower.batch_time(*DECODE_ONLY) == pytest.approx(1.5 * gpu + default.overhead_time(requests), rel=1e-12)
    assert slower.decode_time(1, 1) > default.decode_time(1, 1)
    assert slower.batch_time(*MIXED) == default.batch_time(*MIXED)  # a prefill chunk: unscaled


def test_defaults_are_the_measured_overheads_the_calibration_assumed():
    """Schema, loader, the A10 entry's reference and fit record agree, so a default run is the
    calibrated model."""
    fitted = json.loads(FIT_JSON.read_text())["constants"]
    assert fitted["overhead_base_ms"] == overheads.BASE_MS
    assert fitted["overhead_per_request_ms"] == overheads.PER_REQUEST_MS
    a10 = overheads.engine_overheads(find_layout("llama-7b", "a10", None).device_sku.cpu_overheads)
    assert (a10.base_ms, a10.per_request_ms) == (overheads.BASE_MS, overheads.PER_REQUEST_MS)
    defaults = inspect.signature(load_replica_model).parameters
    cluster = ClusterConfig()
    assert cluster.overhead.base == pytest.approx(overheads.BASE_MS * 1e-3, rel=1e-12)
    assert cluster.overhead.per_request == pytest.approx(overheads.PER_REQUEST_MS * 1e-3, rel=1e-12)
    # None: the device entry's reference, here the A10's
    assert defaults["overhead_base"].default is defaults["overhead_per_request"].default is None
    model = replica("llama-7b")
    assert model.overhead_base == pytest.approx(cluster.overhead.base, rel=1e-12)
    assert model.overhead_per_request == pytest.approx(cluster.overhead.per_request, rel=1e-12)
    assert defaults["decode_scale"].default == cluster.decode_scale == 1.0
    assert cluster.overhead.per_output_token == pytest.approx(overheads.DETOKENIZE_PER_OUTPUT_TOKEN_MS * 1e-3, rel=1e-12)
    assert defaults["overhead_per_output_token"].default is None
    assert model.overhead_per_output_token == pytest.approx(cluster.overhead.per_output_token, rel=1e-12)


def test_measured_overhead_is_the_line_through_vidurs_a40_profile():
    """Base and per-request cost reproduce Vidur's per-batch totals within 0.2 ms."""
    per_request = overheads.VECTORISED_SAMPLER_PER_REQUEST_MS
    for batch, phases in overheads.VIDUR_A40_LLAMA2_7B_TP1_MS.items():
        assert overheads.BASE_MS + per_request * batch == pytest.approx(sum(phases), abs=0.2)


def test_the_sampler_loop_costs_what_vectorising_it_saved_per_generated_token():
    """vLLM PR #820: 3.70 -> 4.77 req/s at 1,771.58 tokens/s; 337.99 of every 499.3 tokens of
    a ShareGPT request are generated (vLLM paper), one per sequence and step."""
    saved_per_request_s = 1 / 3.70 - 1 / 4.77
    generated = 1771.58 / 3.70 * 337.99 / (161.31 + 337.99)
    assert overheads.SAMPLER_LOOP_PER_REQUEST_MS == pytest.approx(saved_per_request_s / generated * 1e3, rel=1e-4)
    assert overheads.PER_REQUEST_MS == pytest.approx(
        overheads.VECTORISED_SAMPLER_PER_REQUEST_MS + overheads.SAMPLER_LOOP_PER_REQUEST_MS, rel=1e-4
    )


def test_figure_10_rows_are_modelled_on_the_vectorised_engine_they_were_measured_on():
    """The table came from vLLM 0.2.0 (vectorised sampler): its rows are compared with that
    engine's CPU work, which is below the serving engine's at every batch size."""
    from sim.hardware.calibration import FIGURE_10_PER_REQUEST_MS

    assert FIGURE_10_PER_REQUEST_MS == overheads.VECTORISED_SAMPLER_PER_REQUEST_MS < overheads.PER_REQUEST_MS


@pytest.mark.parametrize(
    "cluster, key",
    [
        ({"overhead": {"base": -0.001}}, "cluster.overhead.base"),
        ({"overhead": {"per_request": -1e-4}}, "cluster.overhead.per_request"),
        ({"overhead": {"per_output_token": -1e-7}}, "cluster.overhead.per_output_token"),
        ({"overhead": {"base": "fast"}}, "cluster.overhead.base"),
        ({"decode_scale": 0}, "cluster.decode_scale"),
        ({"decode_scale": -2.0}, "cluster.decode_scale"),
    ],
)
def test_bad_values_are_config_errors_naming_the_key(cluster, key):
    with pytest.raises(ConfigError, match=f"^{key}: "):
        from_dict(SimulationConfig, {"cluster": cluster})


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"overhead_base": -1.0}, "overhead_base"),
        ({"overhead_per_request": -1.0}, "overhead_per_request"),
        ({"decode_scale": 0.0}, "decode_scale"),
    ],
)
def test_loader_rejects_bad_values_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        loaded(**kwargs)


def test_reference_protocols_are_computed_as_stated():
    """Hand-computed: a 10 ms prefill, steps of 20 ms + 0.1 ms per context token, 2 outputs."""
    from sim.hardware.calibration import LightDecodeReference, predicted_per_token_ms

    def ref(scope: str) -> LightDecodeReference:
        return LightDecodeReference("check", "e", "g", 600.0, 1, 100, 2, scope, 30.0, "s")

    def decode(context: int) -> float:
        return (20 + 0.1 * context) * 1e-3

    def prefill(tokens: int) -> float:
        return 10e-3

    steps = (30.1 + 30.2) / 2  # contexts 101 and 102
    assert predicted_per_token_ms(ref("step"), prefill, decode, 0.002) == pytest.approx(steps)
    assert predicted_per_token_ms(ref("gpu_forward"), prefill, decode, 0.002) == pytest.approx(steps - 2)
    with_prefill = predicted_per_token_ms(ref("per_token_with_own_prefill"), prefill, decode, 0.002)
    assert with_prefill == pytest.approx((10 + 30.1 + 30.2) / 2)
    assert predicted_per_token_ms(ref("per_token_with_prefills"), prefill, decode, 0.002) is None
    assert LightDecodeReference("check", "e", "g", 936.0, 1, 1, 1, "step", 19.29, "s").on_a10_ms == pytest.approx(
        19.29 * 936 / 600
    )


def test_the_assumed_sharegpt_prompt_is_the_shipped_tables_mean():
    """TGI's benchmark sent ShareGPT first turns of unpublished length: the references assume
    the mean first-turn prompt of the shipped V3 table, which this recomputes."""
    import pandas as pd

    from sim.hardware.calibration import load_light_decode_references

    from pathlib import Path

    table = pd.read_csv(Path(__file__).parents[1] / "traces/sharegpt/sharegpt_v3_first_turn.csv")
    tgi = [r for r in load_light_decode_references() if r.engine.startswith("TGI")]
    assert tgi and {r.prompt_tokens for r in tgi} == {round(table["num_prefill_tokens"].mean())}
