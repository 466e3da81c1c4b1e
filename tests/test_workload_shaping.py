"""Workload shaping: each step's rule, their order, the ShareGPT preset, and key-naming errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sim.config import ArrivalConfig, ConfigError, WorkloadConfig, load_config
from sim.config.workload_schema import FieldShapeConfig, MatchConfig, ShapeConfig
from sim.workload import build_workload, match_mean_p95, scale_lengths
from sim.workload.shaping import resolve_shape

# Llumnix paper, Table 1: ShareGPT (GPT-4, first turn).
TABLE1_SHAREGPT = {"input": (306, 1484), "output": (500, 988)}


def lengths_file(tmp_path: Path, prompts: list[int], outputs: list[int]) -> Path:
    path = tmp_path / "lengths.csv"
    rows = "".join(f"{p},{o}\n" for p, o in zip(prompts, outputs))
    path.write_text("num_prefill_tokens,num_decode_tokens\n" + rows)
    return path


def shaped(**fields: FieldShapeConfig) -> ShapeConfig:
    return ShapeConfig(**fields)


def test_an_empty_shape_section_changes_nothing():
    plain = WorkloadConfig(num_requests=300)
    empty = load_config(
        base={"workload": {"num_requests": 300, "shape": {"input": {}, "output": {}}}}
    ).workload
    one, two = build_workload(plain, 4), build_workload(empty, 4)
    assert np.array_equal(one.prompt_tokens, two.prompt_tokens)
    assert np.array_equal(one.output_tokens, two.output_tokens)
    assert np.array_equal(one.arrival, two.arrival)
    assert one.description == two.description


def test_scale_multiplies_and_rounds_up_without_float_noise():
    assert scale_lengths(np.array([10, 3, 1]), 1.1).tolist() == [11, 4, 2]  # 10 × 1.1 = 11
    assert scale_lengths(np.array([1, 7]), 0.01).tolist() == [1, 1]  # at least one token
    assert scale_lengths(np.array([5]), 2.0).dtype == np.int64


def test_filters_drop_whole_requests_before_the_draw_so_n_stays_n(tmp_path):
    path = lengths_file(tmp_path, [5, 50, 500, 5000, 60, 70], [1, 2, 3, 4, 5, 6])
    cfg = WorkloadConfig(
        trace=str(path),
        num_requests=40,
        shape=shaped(
            input=FieldShapeConfig(scale=2.0, min=100, max=9000),  # scaled: 10 100 1000 ...
            output=FieldShapeConfig(max=5),
        ),
    )
    workload = build_workload(cfg, 0)
    assert len(workload) == 40
    # 5→10 (< min), 5000→10000 (> max) and the output-6 row go; 50, 500 and 60 stay, paired.
    pairs = set(zip(workload.prompt_tokens.tolist(), workload.output_tokens.tolist()))
    assert pairs == {(100, 2), (1000, 3), (120, 5)}
    assert "3 dropped by workload.shape" in workload.description


def test_filters_on_a_timestamped_trace_take_the_first_n_left(tmp_path):
    path = tmp_path / "azure.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.0,10,1\n2023-11-16 18:15:47.0,2000,2\n"
        "2023-11-16 18:15:48.0,30,3\n2023-11-16 18:15:50.0,40,4\n"
    )
    base = {
        "source": "timestamped",
        "trace": str(path),
        "arrival": ArrivalConfig("trace", None),
        "shape": shaped(input=FieldShapeConfig(max=1000)),
    }
    workload = build_workload(WorkloadConfig(num_requests=3, **base), 0)
    assert workload.prompt_tokens.tolist() == [10, 30, 40]
    assert workload.arrival.tolist() == [0.0, 2.0, 4.0]  # the dropped request leaves its gap
    with pytest.raises(ConfigError, match="has 3 requests after workload.shape dropped 1"):
        build_workload(WorkloadConfig(num_requests=4, **base), 0)


def test_cap_truncates_and_leaves_shorter_lengths_alone(tmp_path):
    path = lengths_file(tmp_path, [100, 7000, 6144, 6145], [9000, 10, 20, 30])
    cap = FieldShapeConfig(cap=6144)
    cfg = WorkloadConfig(trace=str(path), num_requests=None, shape=shaped(input=cap, output=cap))
    workload = build_workload(cfg, 0)
    assert sorted(workload.prompt_tokens.tolist()) == [100, 6144, 6144, 6144]
    assert sorted(workload.output_tokens.tolist()) == [10, 20, 30, 6144]


def test_match_hits_mean_and_p95_and_keeps_ranks_and_tail_ratios():
    rng = np.random.default_rng(1)
    lengths = np.ceil(rng.lognormal(5, 1.2, 5000)).astype(np.int64)
    mapped = match_mean_p95(lengths, mean=400, p95=1500)
    assert mapped.dtype == np.int64 and mapped.min() >= 1
    assert mapped.mean() == pytest.approx(400, abs=0.01)
    assert np.percentile(mapped, 95) == pytest.approx(1500, rel=0.002)
    assert stats.spearmanr(lengths, mapped).statistic == pytest.approx(1.0)
    assert np.all(np.diff(mapped[np.argsort(lengths, kind="stable")]) >= 0)  # monotone
    # Above the P95, lengths keep their ratio to it (up to rounding up).
    tail = lengths > np.percentile(lengths, 95)
    ratio = lengths[tail] / np.percentile(lengths, 95)
    assert mapped[tail] == pytest.approx(1500 * ratio, abs=1.0)


def test_match_with_a_cap_hits_the_mean_after_truncation():
    lengths = np.ceil(np.random.default_rng(2).pareto(1.5, 4000) * 100 + 1).astype(np.int64)
    mapped = match_mean_p95(lengths, mean=500, p95=1800, cap=2500)
    assert mapped.max() == 2500
    assert mapped.mean() == pytest.approx(500, abs=0.01)


def test_an_unreachable_match_names_the_key_and_the_reachable_range():
    with pytest.raises(ConfigError, match=r"^k: mean 5000 cannot be reached with P95 100 .*"):
        match_mean_p95(np.arange(1, 101), mean=5000, p95=100, key="k")


@given(
    values=st.lists(st.integers(1, 20_000), min_size=20, max_size=300),
    p95=st.floats(50, 5000),
    share=st.floats(0.05, 0.95),
)
@settings(max_examples=40, deadline=None)
def test_match_is_monotone_and_hits_any_reachable_mean(values, p95, share):
    lengths = np.array(values)
    ratio = lengths / np.percentile(lengths, 95)
    body = ratio <= 1

    def mean_at(exponent: float) -> float:  # the documented map, written out independently
        scaled = np.where(body, ratio**exponent, ratio) * p95
        return float(np.maximum(1, np.ceil(np.round(scaled, 9))).mean())

    target = mean_at(64.0) + share * (mean_at(0.0) - mean_at(64.0))
    mapped = match_mean_p95(lengths, target, p95)
    assert np.all(np.diff(mapped[np.argsort(lengths, kind="stable")]) >= 0)  # monotone
    # The mean is a step function of the exponent: it lands within one step of the target,
    # a step being one token for each request of the largest group of equal lengths.
    step = np.unique(lengths, return_counts=True)[1].max() / len(lengths)
    assert abs(mapped.mean() - target) <= 2 * step + 1e-9
    assert np.array_equal(mapped, match_mean_p95(lengths, target, p95))  # deterministic


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sharegpt_gpt4_preset_gives_a_10k_run_table1_statistics(seed):
    """Acceptance: what a 10,000-request run receives has Table 1's means and P95s (±5%)."""
    served = {"preset": "sharegpt-gpt4"}
    drawn = {**served, "total_below": 10_000_000}  # the artifact client's filter off
    for shape in (served, drawn):
        cfg = load_config(base={"workload": {"num_requests": 10_000, "shape": shape}}).workload
        workload = build_workload(cfg, seed)
        for name, values in (("input", workload.prompt_tokens), ("output", workload.output_tokens)):
            mean, p95 = TABLE1_SHAREGPT[name]
            assert values.mean() == pytest.approx(mean, rel=0.05), name
            assert np.percentile(values, 95) == pytest.approx(p95, rel=0.05), name
            if shape is drawn:  # exact by construction on the drawn requests
                assert values.mean() == pytest.approx(mean, abs=0.01), name
                assert np.percentile(values, 95) == pytest.approx(p95, rel=0.002), name
        assert "shaped (sharegpt-gpt4)" in workload.description


def test_the_preset_keeps_the_rows_and_their_input_output_rank_relation():
    plain = build_workload(WorkloadConfig(num_requests=3000), 5)
    preset = build_workload(
        WorkloadConfig(num_requests=3000, shape=ShapeConfig(preset="sharegpt-gpt4")), 5
    )
    # Same rows drawn (shaping does not touch the draw), each field reordered by nothing.
    for field in ("prompt_tokens", "output_tokens"):
        before, after = getattr(plain, field), getattr(preset, field)
        assert stats.spearmanr(before, after).statistic == pytest.approx(1.0)
    rho_before = stats.spearmanr(plain.prompt_tokens, plain.output_tokens).statistic
    rho_after = stats.spearmanr(preset.prompt_tokens, preset.output_tokens).statistic
    assert rho_after == pytest.approx(rho_before, abs=0.01)
    assert np.array_equal(plain.arrival, preset.arrival)


def test_keys_set_next_to_a_preset_override_it_field_by_field():
    shape = {"preset": "sharegpt-gpt4", "input": {"cap": 4096}}
    cfg = load_config(base={"workload": {"num_requests": 4000, "shape": shape}}).workload
    workload = build_workload(cfg, 0)
    assert workload.prompt_tokens.max() == 4096
    assert workload.prompt_tokens.mean() == pytest.approx(306, abs=0.01)  # still matched
    assert workload.output_tokens.mean() == pytest.approx(500, abs=0.01)


def test_synthetic_lengths_can_be_scaled_matched_and_capped_but_not_filtered():
    base = {"source": "synthetic", "num_requests": 3000}
    plain = build_workload(WorkloadConfig(**base), 0)
    shape = shaped(
        input=FieldShapeConfig(scale=2.0, cap=300),
        output=FieldShapeConfig(match=MatchConfig(200, 700)),
    )
    workload = build_workload(WorkloadConfig(**base, shape=shape), 0)
    assert np.array_equal(workload.prompt_tokens, np.minimum(plain.prompt_tokens * 2, 300))
    assert workload.output_tokens.mean() == pytest.approx(200, abs=0.01)
    with pytest.raises(ConfigError, match=r"^workload\.shape\.input\.min: filters need a trace"):
        build_workload(WorkloadConfig(**base, shape=shaped(input=FieldShapeConfig(min=5))), 0)


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ({"preset": "gpt5"}, r"^workload\.shape\.preset: unknown preset 'gpt5' \(known: sharegpt"),
        ({"input": {"scale": 0}}, r"^workload\.shape\.input\.scale: must be > 0"),
        ({"output": {"min": 0}}, r"^workload\.shape\.output\.min: must be >= 1 token"),
        ({"input": {"min": 9, "max": 3}}, r"^workload\.shape\.input\.max: must be >= min \(9\)"),
        (
            {"input": {"cap": 100, "match": {"mean": 50, "p95": 200}}},
            r"^workload\.shape\.input\.match\.p95: 200.* cannot lie above cap 100",
        ),
        ({"input": {"match": {"mean": 50}}}, r"^workload\.shape\.input\.match\.p95: required"),
        ({"output": {"limit": 5}}, r"^workload\.shape\.output\.limit: unknown key"),
        (
            {"preset": "sharegpt-gpt4", "output": {"scale": 2}},
            r"^workload\.shape\.output\.scale: has no effect with match",
        ),
        (
            {"input": {"min": 10**6}},
            r"^workload\.shape: the min/max filters keep none of .*'s 9373 requests",
        ),
    ],
)
def test_bad_shaping_keys_are_config_errors_naming_the_dotted_key(shape, expected):
    with pytest.raises(ConfigError, match=expected):
        cfg = load_config(base={"workload": {"num_requests": 10, "shape": shape}})
        build_workload(cfg.workload, 0)


def test_total_below_drops_whole_requests_after_the_match_and_says_how_many(tmp_path):
    """The artifact's ShareGPT client keeps a pair only if prompt + answer < 12,800: a request
    at the limit goes, one below it stays, and the run has fewer requests."""
    path = lengths_file(tmp_path, [100, 12000, 799, 800], [50, 800, 12000, 12000])
    cfg = WorkloadConfig(trace=str(path), num_requests=None, shape=ShapeConfig(total_below=12800))
    workload = build_workload(cfg, 0)
    pairs = sorted(zip(workload.prompt_tokens.tolist(), workload.output_tokens.tolist()))
    assert pairs == [(100, 50), (799, 12000)]  # 12,800 and 12,800 are not below 12,800
    assert len(workload.arrival) == 2 and "input + output < 12800 (2 dropped)" in workload.description


def test_total_below_on_a_timestamped_trace_keeps_the_survivors_clock(tmp_path):
    path = tmp_path / "azure.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.0,10,1\n2023-11-16 18:15:47.0,2000,2\n2023-11-16 18:15:49.0,30,3\n"
    )
    cfg = WorkloadConfig(
        source="timestamped",
        trace=str(path),
        num_requests=None,
        arrival=ArrivalConfig("trace", None),
        shape=ShapeConfig(total_below=1000),
    )
    workload = build_workload(cfg, 0)
    assert workload.prompt_tokens.tolist() == [10, 30]
    assert workload.arrival.tolist() == [0.0, 3.0]


def test_the_sharegpt_preset_applies_the_artifact_clients_total_limit():
    shape = resolve_shape(ShapeConfig(preset="sharegpt-gpt4"))
    assert shape.total_below == 12800
    assert resolve_shape(ShapeConfig(preset="sharegpt-gpt4", total_below=20000)).total_below == 20000
    with pytest.raises(ConfigError, match=r"^workload\.shape\.total_below: must be >= 2"):
        load_config(base={"workload": {"shape": {"total_below": 1}}})
