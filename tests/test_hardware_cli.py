"""``llumsim calibrate``: the report (``sim.hardware.calibration_report``) as a table, a JSON
document and a plot, and its verdict as the exit status."""

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
    assert set(document) >= {"rows", "capacity", "light_decode", "heavy_decode", "kv_kernel"}
    assert len(document["rows"]) == 24


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
