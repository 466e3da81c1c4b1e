"""The replica model's error bands (issue 29): prefill and decode step time and KV capacity
scaled, so a conclusion can be checked against step time ×0.9/×1.1 and KV ±5%."""

from __future__ import annotations

import pytest

from sim.config import ConfigError, load_config
from sim.config.loader import config_hash, to_dict
from sim.engine.setup import load_model


def _model(**scales):
    config = load_config("experiments/configs/quickstart.yaml", [f"cluster.{k}={v}" for k, v in scales.items()])
    return load_model(config.cluster)


def test_prefill_scale_scales_the_gpu_time_of_prefill_iterations_only():
    plain, slower = _model(), _model(prefill_scale=1.1)
    gpu = plain.prefill_time(1000) - plain.overhead_time(1)
    assert slower.prefill_time(1000) - slower.overhead_time(1) == pytest.approx(1.1 * gpu)
    assert slower.decode_time(32, 500) == plain.decode_time(32, 500)
    both = _model(prefill_scale=0.9, decode_scale=0.9)  # the "step time x0.9" band
    decode_gpu = plain.decode_time(32, 500) - plain.overhead_time(32)
    assert both.decode_time(32, 500) - both.overhead_time(32) == pytest.approx(0.9 * decode_gpu)


def test_kv_scale_scales_the_planned_kv_blocks():
    plain = _model().kv_capacity_blocks
    assert _model(kv_scale=0.95).kv_capacity_blocks == round(plain * 0.95) < plain
    assert _model(kv_scale=1.05).kv_capacity_blocks == round(plain * 1.05) > plain


def test_the_knobs_leave_the_config_hash_alone_at_their_defaults_and_move_it_when_set():
    plain = load_config("experiments/configs/quickstart.yaml")
    assert "kv_scale" not in to_dict(plain.cluster) and "prefill_scale" not in to_dict(plain.cluster)
    assert config_hash(plain) == config_hash(load_config("experiments/configs/quickstart.yaml", ["cluster.kv_scale=1.0"]))
    assert config_hash(plain) != config_hash(load_config("experiments/configs/quickstart.yaml", ["cluster.kv_scale=0.95"]))


def test_a_scale_of_zero_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match="prefill_scale"):
        load_config("experiments/configs/quickstart.yaml", ["cluster.prefill_scale=0"])
