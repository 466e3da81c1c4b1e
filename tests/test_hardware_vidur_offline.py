"""Vidur's own predictor and simulator run offline on our seeded profiles and predictions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sim.hardware.vidur_offline import prepare_vidur_offline
from tests.hardware_support import fitted_cache, replica

# Builds Vidur's built-in predictor from the setup's flags, as vidur.main would.
VIDUR_PREDICTOR = """
import json, sys
import sim.hardware  # registers our SKUs and model configs with Vidur
from vidur.config import SimulationConfig
from vidur.entities import Batch
from vidur.execution_time_predictor import ExecutionTimePredictorRegistry
flags, batches = json.loads(sys.stdin.read())
sys.argv = ["vidur"] + flags
config = SimulationConfig.create_from_cli_args()
predictor = ExecutionTimePredictorRegistry.get(
    config.execution_time_predictor_config.get_type(),
    predictor_config=config.execution_time_predictor_config,
    replica_config=config.cluster_config.replica_config,
    cache_config=config.cluster_config.cache_config,
)
print(json.dumps([type(predictor).__name__] + [
    predictor.get_execution_time(Batch(0, [None] * len(q), q, kv), 0).total_time
    for q, kv in batches
]))
"""
BATCHES = [([512], [512]), ([1] * 16, [700] * 16), ([300, 1, 1], [900, 40, 2000])]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return prepare_vidur_offline(tmp_path_factory.mktemp("vidur"), cache_dir=fitted_cache()[0])


def offline_env(setup) -> dict[str, str]:
    return {**os.environ, **setup.env}


def test_vidurs_predictor_loads_offline_and_agrees(setup):
    result = subprocess.run(
        [sys.executable, "-c", VIDUR_PREDICTOR],
        input=json.dumps([setup.args, BATCHES]),
        capture_output=True,
        text=True,
        env=offline_env(setup),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    name, *times = json.loads(result.stdout.splitlines()[-1])
    assert name == "RandomForrestExecutionTimePredictor"  # Vidur's class, not ours
    assert not (setup.vidur_cache_dir / "predictors").exists()  # loaded, nothing trained
    ours = replica("llama-7b")
    for (q, kv), vidur_seconds in zip(BATCHES, times):
        prefills = [(a, b) for a, b in zip(q, kv) if a > 1]
        decodes = [b for a, b in zip(q, kv) if a == 1]
        assert ours.batch_time(prefills, len(decodes), sum(decodes)) == pytest.approx(
            vidur_seconds + ours.overhead_time(len(q)), rel=1e-12
        )


def test_vidurs_simulator_runs_offline(setup):
    workload = [
        "--synthetic_request_generator_config_num_requests", "20",
        "--fixed_request_length_generator_config_prefill_tokens", "512",
        "--fixed_request_length_generator_config_decode_tokens", "64",
        "--fixed_request_length_generator_config_max_tokens", "1024",
        "--synthetic_request_generator_config_max_tokens", "1024",
    ]  # fmt: skip
    result = subprocess.run(
        setup.command + workload, capture_output=True, text=True, env=offline_env(setup)
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Simulation ended" in result.stdout
