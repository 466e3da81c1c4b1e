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
    assert capacity["llama-7b"]["kv_capacity_blocks"] == pytest.approx(851, rel=0.02)
    assert capacity["llama-30b"]["tensor_parallel"] == 4
    light = {d["model"]: d for d in document["light_decode"]}
    seven = light["llama-7b"]
    assert seven["ratio"] == pytest.approx(seven["heaviest_ms"] / seven["one_request_ms"])
    assert seven["target_ratio"] == 2.6 and light["llama-30b"]["target_ratio"] is None
    assert seven["heaviest_tokens"] == capacity["llama-7b"]["kv_capacity_tokens"]
    assert seven["one_request_ms"] >= seven["bandwidth_floor_ms"] + seven["one_request_overhead_ms"]


def test_table_and_plot(run_calibrate, tmp_path):
    plot = tmp_path / "calibration.png"
    code, out = run_calibrate("--plot", str(plot))
    assert code == 0
    assert "llama-30b  decode      8192" in out.out and "KV capacity" in out.out
    assert "Light-batch decode step" in out.out and "ratio" in out.out
    assert "OUTSIDE" not in out.out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_exit_status_fails_on_a_slowdown_outside_its_band():
    row = {"model": "llama-7b", "rel_error": 0.0}
    decode = {"model": "llama-7b", "target_ratio": 2.6, "ratio": 2.6}
    assert calibrate.passes({"rows": [row], "light_decode": [decode]})
    assert not calibrate.passes({"rows": [row], "light_decode": [{**decode, "ratio": 2.0}]})
    assert calibrate.passes({"rows": [row], "light_decode": [{**decode, "target_ratio": None, "ratio": 1.7}]})
