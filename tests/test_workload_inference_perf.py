"""Workloads as the field benchmarks them: an inference-perf profile's stages and data
(``sim/workload/inference_perf.py``), played stage after stage (``sim/workload/stages.py``,
``Kernel._staged_arrivals``), and summarised per stage (``sim/metrics/stages.py``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from sim.cli.main import main
from sim.config import ConfigError, load_config
from sim.engine import Simulation
from sim.engine.kernel import STAGES
from sim.metrics import summarize
from sim.metrics.tables import cluster_table, request_table
from sim.workload.build import build_workload
from sim.workload.inference_perf import constant_offsets, poisson_offsets

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = "experiments/configs/inference_perf.yaml"
PROFILE = {
    "load": {"type": "constant", "interval": 5, "stages": [{"rate": 2, "duration": 10}, {"rate": 3.5, "duration": 8}]},
    "server": {"type": "vllm", "base_url": "http://0.0.0.0:8000", "ignore_eos": True},
    "api": {"type": "completion"},
    "data": {
        "type": "shared_prefix",
        "shared_prefix": {
            "num_groups": 3,  # the former names, still read
            "num_prompts_per_group": 4,
            "system_prompt_len": 64,
            "question_len": 20,
            "output_len": 7,
        },
    },
}


def write(tmp_path: Path, profile: dict, name: str = "profile.yml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(profile))
    return path


def config(path: Path, **cluster):
    return load_config(base={
        "name": "ip",
        "cluster": {"instances": 1, "ledger": "prefix-caching", **cluster},
        "workload": {"source": "inference-perf", "profile": str(path)},
    })


def test_each_stage_sends_int_rate_times_duration_requests_and_constant_ones_end_at_the_duration():
    rng = np.random.default_rng(0)
    offsets = constant_offsets(rng, 3.5, 8)
    assert len(offsets) == 28 and np.all(np.diff(offsets) > 0) and offsets[0] > 0
    assert offsets[-1] == pytest.approx(8.0)  # gaps scaled to sum to the duration
    assert len(constant_offsets(rng, 0.29, 100)) == 28  # int(0.29 * 100) = int(28.999...), as inference-perf counts
    assert len(constant_offsets(rng, 0.05, 10)) == 0


def test_poisson_stages_draw_a_poisson_count_for_each_second():
    offsets = poisson_offsets(np.random.default_rng(1), 40.0, 400)
    assert len(offsets) == 16_000 and np.all(np.diff(offsets) >= 0)
    per_second = np.bincount(np.ceil(offsets).astype(int) - 1)[:-1]  # whole seconds only
    assert per_second.mean() == pytest.approx(40.0, abs=40.0 * 0.03)
    assert per_second.var() / per_second.mean() == pytest.approx(1.0, abs=0.15)  # Poisson: variance = mean


def test_a_shared_prefix_profile_gives_exact_lengths_and_shares_a_system_prompt_within_a_group_only(tmp_path):
    built = build_workload(config(write(tmp_path, PROFILE)).workload, seed=0)
    assert len(built) == 20 + 28 and built.stages.first.tolist() == [0, 20, 48]
    assert (built.prompt_tokens == 84).all() and (built.output_tokens == 7).all()
    group = built.sharing.system
    assert set(group.tolist()) == {0, 1, 2}
    contents = built.sharing.contents()
    for a in range(len(built)):
        for b in range(a):
            same_system = contents[a].block_key(3, 16) == contents[b].block_key(3, 16)  # tokens 48-63: system prompt
            assert same_system == (group[a] == group[b])
    # 12 prompts, shuffled once; each stage sends them in that order from the first: item j and
    # item j + 12 are one prompt, shared whole (block 4 holds question tokens), answers apart
    for stage_first in (0, 20):
        a, b = stage_first + 1, stage_first + 13
        assert contents[a].block_key(4, 16) == contents[b].block_key(4, 16)
        assert contents[a].block_key(5, 16) != contents[b].block_key(5, 16)  # tokens 80-95: past the prompt
    assert contents[0].block_key(4, 16) == contents[20].block_key(4, 16)  # stage 1 starts the order again
    assert contents[0].block_key(4, 16) != contents[1].block_key(4, 16)


def test_random_lengths_are_drawn_once_and_each_stage_sends_them_from_the_first(tmp_path):
    fixed = {"type": "fixed", "mean": 300, "min": 1, "max": 4096}
    profile = {**PROFILE, "load": {**PROFILE["load"], "type": "poisson"}, "data": {
        "type": "random", "input_distribution": fixed,
        "output_distribution": {"mean": 100, "std_dev": 30, "min": 10, "max": 200},
    }}
    built = build_workload(config(write(tmp_path, profile)).workload, seed=4)
    assert (built.prompt_tokens == 300).all() and built.sharing is None
    assert built.output_tokens.min() >= 10 and built.output_tokens.max() <= 200 and len(set(built.output_tokens)) > 5
    assert built.output_tokens[20:40].tolist() == built.output_tokens[:20].tolist()
    assert build_workload(config(write(tmp_path, profile)).workload, seed=4).output_tokens.tolist() == built.output_tokens.tolist()


def test_each_stage_starts_once_the_generator_finds_the_one_before_ended(tmp_path):
    result = Simulation(config(write(tmp_path, PROFILE))).run()
    first, second = STAGES.of(result)
    assert (first.first, first.end, second.first, second.end) == (0, 20, 20, 48)
    assert (first.started, first.timer) == (0.0, 1.0)
    # the generator checks once a second from the stage's start; the next stage starts 5 s later
    assert first.ended == math.ceil(first.last_end) and first.ended >= first.last_end
    assert second.started == first.ended + 5 and second.timer == second.started + 1
    arrival = {r.id: r.arrival for r in result.requests}
    ends = [r.finish_time for r in result.requests if r.id < 20]
    assert max(ends) == first.last_end
    assert min(arrival[i] for i in range(20, 48)) > second.timer
    assert max(arrival[i] for i in range(20, 48)) == pytest.approx(second.timer + 8)
    summary = summarize(result, request_table(result), cluster_table(result))
    stages = summary["stages"]
    assert list(stages) == ["0", "1"] and stages["1"]["requests"] == 28 and stages["1"]["rate"] == 3.5
    for row in stages.values():
        assert {"e2e", "ttft", "itl"} <= set(row) and row["itl"]["count"] == row["finished"] == row["requests"]
        assert row["e2e"]["p99"] >= row["e2e"]["p90"] > row["ttft"]["p90"] > 0
    assert stages["0"]["throughput"]["achieved_rate"] == pytest.approx(20 / (10 - (arrival[0] - 1)), rel=1e-9)
    assert summary["prefix_cache"]["tokens"]["hit"] > 0


def test_a_run_without_stages_has_no_stages_section():
    result = Simulation(load_config(base={"name": "plain", "workload": {"source": "synthetic", "num_requests": 20}})).run()
    assert STAGES.of(result) is None
    assert summarize(result, request_table(result), cluster_table(result))["stages"] is None


@pytest.mark.parametrize("change, message", [
    ({"load": {"stages": [{"rate": 2, "duration": 10}, {"rate": -1, "duration": 5}]}},
     "load.stages[1].rate: must be > 0 requests/s, got -1"),
    ({"load": {"stages": [{"rate": 2, "duration": 7.5}]}}, "load.stages[0].duration: expected an integer, got 7.5"),
    ({"load": {"stages": [{"rate": 2}]}}, "load.stages[0].duration: required key missing"),
    ({"load": {"type": "concurrent", "stages": [{"num_requests": 10, "concurrency_level": 2}]}},
     "load.type: 'concurrent' is not read"),
    ({"load": {"stages": []}}, "load.stages: none given"),
    ({"load": {"stages": [{"rate": 0.05, "duration": 10}]}}, "load.stages: no stage sends a request"),
    ({"load": {"stages": [{"rate": 1, "duration": 10}], "sweep": {"type": "linear"}}}, "load.sweep: not read"),
    ({"data": {"type": "shareGPT"}}, "data.type: 'shareGPT' is not read"),
    ({"data": {"type": "shared_prefix", "shared_prefix": {"question_len": {"type": "normal", "mean": 50}}}},
     "data.shared_prefix.question_len: a distribution of lengths is not read here"),
    ({"data": {"type": "shared_prefix", "shared_prefix": {"output_len": 0}}},
     "data.shared_prefix.output_len: must be >= 1 tokens, got 0"),
    ({"data": {"type": "shared_prefix", "shared_prefix": {"num_groups": 2, "num_unique_system_prompts": 2}}},
     "data.shared_prefix.num_groups: the former name of num_unique_system_prompts"),
    ({"data": {"type": "random", "input_distribution": {"mean": 5000}, "output_distribution": {}}},
     "data.input_distribution.mean: must lie in [min, max] = [10, 1024]"),
    ({"data": {"type": "shared_prefix", "shared_prefix": {}, "typo": 1}}, "data.typo: unknown key"),
    ({"data": {"type": "shared_prefix", "shared_prefix": {"multimodal": {"image": {"count": 1}}}}},
     "data.shared_prefix.multimodal: not modelled"),
    ({"server": {"base_url": "http://x", "ignore_eos": False}}, "server.ignore_eos: false"),
    ({"loadgen": {}}, "loadgen: unknown key"),
])
def test_a_bad_profile_is_a_one_line_config_error_naming_the_file_and_key(tmp_path, change, message):
    path = write(tmp_path, {**PROFILE, **change})
    with pytest.raises(ConfigError) as error:
        build_workload(config(path).workload, seed=0)
    text = str(error.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_a_profile_is_read_only_by_source_inference_perf_and_replaces_shape_and_system_prompt(tmp_path):
    path = str(write(tmp_path, PROFILE))
    for workload, message in [
        ({"source": "lengths", "profile": path}, "workload.profile: set, but source is 'lengths'"),
        ({"source": "inference-perf"}, "workload.profile: required for source 'inference-perf'"),
        ({"source": "inference-perf", "profile": path, "system_prompt": {"tokens": 10}}, "workload.system_prompt:"),
        ({"source": "inference-perf", "profile": path, "shape": {"preset": "sharegpt-gpt4"}}, "workload.shape:"),
    ]:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
            load_config(base={"name": "t", "workload": workload})
    with pytest.raises(ConfigError, match="no/such.yml: inference-perf profile not found"):
        build_workload(load_config(base={"name": "t", "workload": {"source": "inference-perf", "profile": "no/such.yml"}}).workload, 0)


def test_the_example_config_prints_a_line_per_stage(tmp_path, capsys):
    assert main(["run", EXAMPLE, "--out", str(tmp_path / "out"), "--no-plots", "--quiet"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("stage ")]
    assert [line.split(" (")[0] for line in lines] == ["stage 0", "stage 1", "stage 2"]
    assert lines[2].startswith("stage 2 (12 req/s x 30 s, 360 requests, 360 finished): E2E ")
    assert all(" TTFT " in line and " ITL " in line and line.count(" p90 ") == 3 for line in lines)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [row["requests"] for row in summary["stages"].values()] == [120, 240, 360]
    shown = (REPO / "docs" / "workloads.md").read_text(encoding="utf-8")
    assert all(f"\n{line}\n" in shown for line in lines)  # the page shows what the run prints
