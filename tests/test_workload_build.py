"""build_workload: selection rules, arrival wiring, determinism, path resolution, errors."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.config import (
    ArrivalConfig,
    ConfigError,
    PriorityConfig,
    SyntheticLengthsConfig,
    WorkloadConfig,
    load_config,
)
from sim.workload import TraceError, Workload, build_workload
from sim.workload.build import REPO_ROOT

AZURE = (
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2023-11-16 18:15:50.0000000,30,3\n"  # out of order on purpose
    "2023-11-16 18:15:46.0000000,10,1\n"
    "2023-11-16 18:15:48.0000000,20,2\n"
    "2023-11-16 18:15:54.0000000,40,4\n"
)


def lengths_file(tmp_path: Path, rows: int = 5) -> Path:
    path = tmp_path / "lengths.csv"
    body = "".join(f"{i + 1},{100 + i}\n" for i in range(rows))
    path.write_text("num_prefill_tokens,num_decode_tokens\n" + body)
    return path


def azure_file(tmp_path: Path) -> Path:
    path = tmp_path / "azure.csv"
    path.write_text(AZURE)
    return path


def assert_same(one: Workload, two: Workload) -> None:
    for name in ("arrival", "prompt_tokens", "output_tokens", "tier"):
        assert np.array_equal(getattr(one, name), getattr(two, name)), name
    assert one.description == two.description


def test_workload_shape_types_and_frame():
    cfg = WorkloadConfig(source="synthetic", num_requests=300)
    workload = build_workload(cfg, seed=0)
    assert len(workload) == 300
    assert workload.arrival.dtype == np.float64 and workload.tier.dtype == np.int64
    assert np.all(np.diff(workload.arrival) >= 0) and workload.arrival[0] >= 0
    frame = workload.to_frame()
    assert list(frame.columns) == ["arrival", "prompt_tokens", "output_tokens", "tier"]
    assert frame.index.name == "request_id" and len(frame) == 300
    with pytest.raises(ValueError):
        workload.arrival[0] = 1.0  # read-only: a run cannot mutate its input
    assert "\n" not in workload.description
    assert "synthetic M-M" in workload.description and "7.5 req/s" in workload.description


def test_workload_rejects_broken_arrays():
    ones = np.ones(2, dtype=np.int64)
    with pytest.raises(ValueError):
        Workload(np.array([1.0, 0.5]), ones, ones, ones * 0, "x")
    with pytest.raises(ValueError):
        Workload(np.array([0.0, 1.0]), ones * 0, ones, ones * 0, "x")
    with pytest.raises(ValueError):
        Workload(np.array([0.0]), ones, ones, ones, "x")


CONFIGS = [
    WorkloadConfig(
        source="synthetic", num_requests=200, synthetic=SyntheticLengthsConfig("S", "L")
    ),
    WorkloadConfig(num_requests=200, priority=PriorityConfig("gaussian", 5)),
    WorkloadConfig(
        source="timestamped",
        trace="traces/azure/azure_code_2023.csv",
        num_requests=500,
        arrival=ArrivalConfig("trace", rate=4.0),
        priority=PriorityConfig("share", 3, 0.2),
    ),
    WorkloadConfig(
        source="timestamped",
        trace="traces/burstgpt_shaped/burstgpt_shaped_gpt4_conv.csv",
        num_requests=300,
        arrival=ArrivalConfig("gamma", rate=8.0, cv=3.0),
        burstgpt_model="GPT-4",
    ),
]


@pytest.mark.parametrize("cfg", CONFIGS)
def test_same_config_and_seed_give_identical_workloads(cfg):
    assert_same(build_workload(cfg, 11), build_workload(cfg, 11))
    other = build_workload(cfg, 12)
    assert not np.array_equal(build_workload(cfg, 11).tier, other.tier) or cfg.priority.tiers == 1


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 60))
@settings(max_examples=25, deadline=None)
def test_determinism_for_any_seed(seed, n):
    cfg = WorkloadConfig(num_requests=n, priority=PriorityConfig("enterprise", 4))
    assert_same(build_workload(cfg, seed), build_workload(cfg, seed))


def test_changing_the_sampler_keeps_lengths_and_arrivals():
    base = WorkloadConfig(num_requests=100)
    other = WorkloadConfig(num_requests=100, priority=PriorityConfig("enterprise", 4))
    one, two = build_workload(base, 3), build_workload(other, 3)
    assert np.array_equal(one.prompt_tokens, two.prompt_tokens)
    assert np.array_equal(one.arrival, two.arrival)


def test_length_table_draws_without_replacement_until_it_must(tmp_path):
    path = lengths_file(tmp_path, rows=5)
    drawn = build_workload(WorkloadConfig(trace=str(path), num_requests=5), 0)
    assert sorted(drawn.prompt_tokens.tolist()) == [1, 2, 3, 4, 5]
    assert np.array_equal(drawn.output_tokens, drawn.prompt_tokens + 99)  # rows stay paired
    everything = build_workload(WorkloadConfig(trace=str(path), num_requests=None), 0)
    assert sorted(everything.prompt_tokens.tolist()) == [1, 2, 3, 4, 5]
    more = build_workload(WorkloadConfig(trace=str(path), num_requests=12), 0)
    assert len(more) == 12 and set(more.prompt_tokens.tolist()) <= {1, 2, 3, 4, 5}


def test_timestamped_takes_first_n_by_time_and_replays(tmp_path):
    path = azure_file(tmp_path)
    cfg = WorkloadConfig(
        source="timestamped", trace=str(path), num_requests=3, arrival=ArrivalConfig("trace", None)
    )
    workload = build_workload(cfg, 0)
    assert workload.prompt_tokens.tolist() == [10, 20, 30]
    assert workload.arrival.tolist() == [0.0, 2.0, 4.0]
    assert "recorded arrivals" in workload.description


def test_timestamped_time_scaled_to_target_rate(tmp_path):
    cfg = WorkloadConfig(
        source="timestamped",
        trace=str(azure_file(tmp_path)),
        num_requests=None,
        arrival=ArrivalConfig("trace", rate=1.5),
    )
    workload = build_workload(cfg, 0)
    # Recorded offsets 0, 2, 4, 8 s: 3 gaps in 8 s; at 1.5 req/s they span 2 s.
    assert workload.arrival.tolist() == pytest.approx([0.0, 0.5, 1.0, 2.0])
    assert "time-scaled to 1.5 req/s" in workload.description


def test_timestamped_lengths_with_renewal_arrivals(tmp_path):
    cfg = WorkloadConfig(
        source="timestamped",
        trace=str(azure_file(tmp_path)),
        num_requests=4,
        arrival=ArrivalConfig("poisson", rate=3.0),
    )
    workload = build_workload(cfg, 0)
    assert workload.prompt_tokens.tolist() == [10, 20, 30, 40]
    assert workload.arrival[0] > 0


def test_asking_a_timestamped_trace_for_too_many_requests(tmp_path):
    cfg = WorkloadConfig(source="timestamped", trace=str(azure_file(tmp_path)), num_requests=5)
    with pytest.raises(ConfigError, match="workload.num_requests: 5 requested, but .* has 4"):
        build_workload(cfg, 0)


def test_timestamped_source_needs_timestamps(tmp_path):
    cfg = WorkloadConfig(source="timestamped", trace=str(lengths_file(tmp_path)), num_requests=2)
    with pytest.raises(TraceError, match="needs timestamps; this is a length table"):
        build_workload(cfg, 0)


def test_relative_paths_resolve_against_cwd_then_root_then_repo(tmp_path, monkeypatch):
    lengths_file(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert len(build_workload(WorkloadConfig(trace="lengths.csv", num_requests=2), 0)) == 2
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert (
        len(build_workload(WorkloadConfig(trace="lengths.csv", num_requests=2), 0, root=tmp_path))
        == 2
    )
    # The shipped default resolves against the repository from any directory.
    assert len(build_workload(WorkloadConfig(num_requests=2), 0)) == 2
    with pytest.raises(TraceError, match="nothing.csv: trace file not found"):
        build_workload(WorkloadConfig(trace="nothing.csv"), 0)


def test_negative_seed_is_a_config_error():
    with pytest.raises(ConfigError, match="seed: must be >= 0"):
        build_workload(WorkloadConfig(source="synthetic", num_requests=1), -1)


def test_schema_rules_for_workloads():
    with pytest.raises(
        ConfigError, match=r"^workload\.num_requests: required for source 'synthetic'"
    ):
        load_config(base={"workload": {"source": "synthetic", "num_requests": None}})
    with pytest.raises(
        ConfigError, match=r"^workload\.arrival\.cv: only the gamma arrival process"
    ):
        load_config(base={"workload": {"arrival": {"process": "poisson", "cv": 2.0}}})
    cfg = load_config(base={"workload": {"arrival": {"process": "gamma", "cv": 2.0}}})
    assert cfg.workload.arrival.cv == 2.0
    assert (REPO_ROOT / WorkloadConfig().trace).is_file()


def test_gamma_arrivals_through_the_config():
    cfg = WorkloadConfig(
        source="synthetic", num_requests=20_000, arrival=ArrivalConfig("gamma", rate=26.0, cv=4.0)
    )
    gaps = np.diff(build_workload(cfg, 0).arrival)
    assert 1 / gaps.mean() == pytest.approx(26.0, rel=0.06)
    assert gaps.std() / gaps.mean() == pytest.approx(4.0, rel=0.12)


# sha256 (first 16 hex) of arrival, prompt, output and tier arrays and the description, as
# built by this version: later options must leave the default path byte-identical.
DEFAULT_PATH_DIGESTS = {
    "quickstart": (  # the first quickstart: ShareGPT V3 lengths as shipped, 22 req/s
        None,
        {
            "name": "quickstart",
            "workload": {
                "source": "lengths",
                "trace": "traces/sharegpt/sharegpt_v3_first_turn.csv",
                "num_requests": 5000,
                "arrival": {"process": "poisson", "rate": 22.0},
            },
        },
        "6ac5af75ae9fa2c0",
    ),
    "ll-gamma-cv4": (
        None,
        {
            "name": "autoscale-ll-gamma-cv4",
            "workload": {
                "source": "synthetic",
                "num_requests": 5000,
                "synthetic": {"input": "L", "output": "L"},
                "arrival": {"process": "gamma", "rate": 2.0, "cv": 4.0},
            },
        },
        "318ab6893792b370",
    ),
    "synthetic-s-m-share": (
        None,
        {
            "seed": 3,
            "workload": {
                "source": "synthetic",
                "num_requests": 3000,
                "synthetic": {"input": "S", "output": "M"},
                "arrival": {"process": "poisson", "rate": 9.0},
                "priority": {"sampler": "share", "tiers": 2, "high_share": 0.1},
            },
        },
        "ed8b5d0548de1e30",
    ),
    "sharegpt-gpt4-enterprise": (
        None,
        {
            "seed": 1,
            "workload": {
                "num_requests": 2000,
                "shape": {"preset": "sharegpt-gpt4"},
                "priority": {"sampler": "enterprise", "tiers": 4},
            },
        },
        "41225e5de873b260",  # the description now says the 12,800 total rule dropped none
    ),
    "azure-replay": (
        None,
        {
            "workload": {
                "source": "timestamped",
                "trace": "traces/azure/azure_code_2023.csv",
                "num_requests": 1500,
                "arrival": {"process": "trace", "rate": 4.0},
            }
        },
        "b98f74c4da40ee1a",
    ),
}


@pytest.mark.parametrize("client", [None, "llumsim"])
@pytest.mark.parametrize("name", list(DEFAULT_PATH_DIGESTS))
def test_default_client_leaves_workloads_byte_identical(name, client):
    path, base, expected = DEFAULT_PATH_DIGESTS[name]
    overrides = [] if client is None else [f"workload.client={client}"]
    # deepcopy: overrides are written into the nested mapping they are applied to
    cfg = load_config(REPO_ROOT / path if path else None, overrides, base=copy.deepcopy(base))
    workload = build_workload(cfg.workload, cfg.seed, REPO_ROOT)
    digest = hashlib.sha256()
    for array in (workload.arrival, workload.prompt_tokens, workload.output_tokens, workload.tier):
        digest.update(array.tobytes())
    digest.update(workload.description.encode())
    assert digest.hexdigest()[:16] == expected


def test_burst_and_uniform_arrivals_through_the_config():
    base = {"source": "synthetic", "num_requests": 4}
    burst = load_config(base={"workload": {**base, "arrival": {"process": "burst", "rate": None}}})
    assert build_workload(burst.workload, 0).arrival.tolist() == [0.0] * 4
    uniform = load_config(base={"workload": {**base, "arrival": {"process": "uniform", "rate": 2}}})
    workload = build_workload(uniform.workload, 0)
    assert workload.arrival.tolist() == [0.5, 1.0, 1.5, 2.0]
    assert "uniform arrivals at 2 req/s" in workload.description
    with pytest.raises(ConfigError, match=r"^workload\.arrival\.rate: required for the uniform"):
        load_config(base={"workload": {"arrival": {"process": "uniform", "rate": None}}})
