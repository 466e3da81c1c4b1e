"""vLLM V1 against published serving runs (``llumsim calibrate --engine vllm-v1``) and what it
needs: the benchmark's clients and ShareGPT sampler, async scheduling's overlap of host and
GPU work, and vLLM's own all-reduce on an NVLink node."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pandas as pd
import pytest

from sim.cli.main import main
from sim.config import ConfigError
from sim.engine import Simulation
from sim.hardware import load_replica_model
from sim.bench import v1_serving
from sim.hardware import custom_all_reduce, overheads
from sim.hardware.catalog import find_layout
from sim.hardware.replica_model import load_tables
from sim.hardware.timing import overlapped_iteration_seconds
from sim.metrics import request_table
from sim.workload.vllm_bench import (
    MAX_PROMPT,
    MAX_TOTAL,
    MIN_TOKENS,
    _sharegpt_entries,
    benchmark_workload,
    poisson_arrivals,
    sharegpt_lengths,
)
from tests.doubles import ConstantTimer, make_config


# ---------------------------------------------------------------- the benchmark's workloads
def test_a_concurrency_client_sends_the_next_request_when_one_ends():
    # constant 1 s prefill, 0.1 s decode steps, 3 output tokens: a request takes 1.2 s alone;
    # at concurrency 2 the third request starts when the first ends, never earlier
    workload = benchmark_workload(np.full(5, 16), np.full(5, 3), "concurrency", 2)
    config = make_config(cluster={"instances": 1, "batch_former": "vllm"})
    result = Simulation(config, workload=workload, load_pool_model=lambda pool, key: ConstantTimer(1.0, 0.1)).run()
    table = request_table(result).set_index("id")
    assert table.loc[[0, 1], "arrival"].tolist() == [0.0, 0.0]
    for later in (2, 3, 4):
        assert table.loc[later, "arrival"] == pytest.approx(table.loc[later - 2, "finish"])
    running = [((table.arrival <= t) & (table.finish > t)).sum() for t in np.linspace(0, table.finish.max() - 1e-9, 200)]
    assert max(running) == 2


def test_the_sharegpt_sampler_is_the_benchmarks_shuffle_then_filter():
    prompt, output = _sharegpt_entries()
    order = list(range(len(prompt)))
    random.seed(0)  # benchmark_serving: random.seed(args.seed); random.shuffle(dataset)
    random.shuffle(order)
    first = next(i for i in order if MIN_TOKENS <= prompt[i] <= MAX_PROMPT and output[i] >= MIN_TOKENS and prompt[i] + output[i] <= MAX_TOTAL)
    drawn_prompt, drawn_output = sharegpt_lengths(300)
    assert (drawn_prompt[0], drawn_output[0]) == (prompt[first], output[first])
    assert (drawn_prompt >= MIN_TOKENS).all() and (drawn_output >= MIN_TOKENS).all()
    assert (drawn_prompt <= MAX_PROMPT).all() and (drawn_prompt + drawn_output <= MAX_TOTAL).all()
    longer_prompt, _ = sharegpt_lengths(400)
    assert (longer_prompt[:300] == drawn_prompt).all()  # the same order, cut later
    assert not (sharegpt_lengths(300, seed=1)[0] == drawn_prompt).all()


def test_poisson_arrivals_start_at_once_and_keep_the_rate():
    arrivals = poisson_arrivals(20_001, rate=4.0)
    assert arrivals[0] == 0.0 and (np.diff(arrivals) >= 0).all()
    assert 20_000 / arrivals[-1] == pytest.approx(4.0, rel=0.03)


def test_an_unknown_client_is_named():
    with pytest.raises(ValueError, match="unknown benchmark client 'burst'"):
        benchmark_workload(np.ones(2), np.ones(2), "burst", 1)


# ---------------------------------------------------------------- async scheduling
def test_async_scheduling_costs_the_longer_of_gpu_and_overlapped_host_work():
    # GPU 5 ms, host 3 ms of which 2 overlap: 5 + 1; GPU 1 ms: the 2 ms overlapped dominate
    assert overlapped_iteration_seconds(1, 5.0, 3.0, 0.0, 2.0, 0.0, 1) == pytest.approx(6e-3)
    assert overlapped_iteration_seconds(1, 1.0, 3.0, 0.0, 2.0, 0.0, 1) == pytest.approx(3e-3)
    sync = load_replica_model("llama-3.1-8b", "h100_80gb", engine="vllm-v1", max_batched_tokens=8192)
    overlapped = load_replica_model("llama-3.1-8b", "h100_80gb", engine="vllm-v1", max_batched_tokens=8192, async_scheduling=True)
    beside = overheads.v1_overlapped("cpu_overheads_vidur_a100_llama2_7b_tp1.csv")
    hidden = (beside.base_ms + beside.vectorised_per_request_ms) * 1e-3
    # a decode step's GPU time outlasts the scheduler and input preparation: they vanish
    assert overlapped.decode_time(1, 1024) == pytest.approx(sync.decode_time(1, 1024) - hidden, rel=1e-9)
    assert 0 < hidden < sync.overhead_time(1)


def test_async_scheduling_is_refused_on_an_engine_without_it():
    pool = {"name": "p", "instances": 1, "engine": "vllm-0.1.2", "async_scheduling": True}
    with pytest.raises(ConfigError, match=r"pools\[0\]\.async_scheduling: only vLLM V1 schedules a step ahead; pools\[0\]\.engine is 'vllm-0.1.2'"):
        Simulation(make_config(pools=[pool]))


# ---------------------------------------------------------------- vLLM's all-reduce
def test_the_custom_all_reduce_interpolates_its_measurements_and_stops_at_8_mib():
    layout = find_layout("llama-3.1-70b", "h100_80gb", 4)  # hidden 8,192: 16 KiB a token
    ms = custom_all_reduce.per_call_ms(layout, np.array([1, 4, 8, 511, 512]))
    assert ms[0] == pytest.approx(8.5e-3)  # measured at 16 KiB
    assert ms[2] == pytest.approx(np.interp(131072, [16384, 131072], [8.5, 9.2]) * 1e-3)
    assert ms[3] == pytest.approx(40.2e-3 * 511 * 16384 / 4194304)  # past 4 MiB: in proportion to bytes
    assert np.isnan(ms[4])  # 8 MiB: NCCL's
    assert np.isnan(custom_all_reduce.per_call_ms(find_layout("llama-30b", "a10", 4), np.array([1]))).all()


def test_v1_replaces_nccls_all_reduce_on_an_nvlink_node_and_the_artifact_engine_keeps_it():
    # a 64-token prompt (1 MiB a call): prefill attention is the same kernel in both engines,
    # so the steps differ by the two all-reduces of each layer exactly
    layout = find_layout("llama-3.1-70b", "h100_80gb", 4)
    old = load_replica_model("llama-3.1-70b", "h100_80gb", 4, max_batched_tokens=8192)
    v1 = load_replica_model("llama-3.1-70b", "h100_80gb", 4, engine="vllm-v1", max_batched_tokens=8192)
    nccl_ms = load_tables(layout)["comm_ms"][64]
    own_ms = custom_all_reduce.per_call_ms(layout, np.array([64]))[0]
    assert nccl_ms > 2 * own_ms  # Vidur's eager NCCL + launch against vLLM's kernel (20.6 us at 1 MiB)
    gpu_old = old.prefill_time(64) - old.overhead_time(1)
    gpu_v1 = v1.prefill_time(64) - v1.overhead_time(1)
    assert (gpu_old - gpu_v1) * 1e3 == pytest.approx(2 * old.num_layers * (nccl_ms - own_ms), rel=1e-9)
    one_gpu = [load_replica_model("llama-3.1-8b", "h100_80gb", engine=e) for e in ("vllm-0.1.2", "vllm-v1")]
    assert [m.prefill_time(64) - m.overhead_time(1) for m in one_gpu] == pytest.approx(
        [one_gpu[0].prefill_time(64) - one_gpu[0].overhead_time(1)] * 2
    )  # one GPU: nothing to all-reduce


# ---------------------------------------------------------------- the grading rule
def _reference(**changes) -> v1_serving.ServingReference:
    row = next(r for r in v1_serving.load_references() if r.id == "E2-1k")
    return dataclasses.replace(row, **changes)


def test_a_published_row_is_played_as_it_was_run():
    row = _reference()
    value, unfinished, in_flight = v1_serving.simulate(row, seed=0)
    model = load_replica_model("llama-3.1-8b", "h100_80gb", engine="vllm-v1", max_batched_tokens=8192, async_scheduling=True)
    # one request at a time: every decode step is the model's batch-1 step at its context
    steps = [model.decode_time(1, 1024 + k) for k in range(2, 129)]
    assert value == pytest.approx(np.median(steps) * 1e3, rel=1e-6)
    assert (unfinished, in_flight) == (0, 1)


def test_the_rule_fails_a_row_outside_15_percent_unfinished_requests_or_too_few_sources():
    row = {**_reference().__dict__, "predicted": 1.0, "predicted_range": [1.0, 1.0], "unfinished": 0, "most_in_flight": 1}
    inside = {**row, "measured": 1.1, "rel_error": 1.0 / 1.1 - 1}
    outside = {**row, "measured": 1.2, "rel_error": 1.0 / 1.2 - 1}
    enough = {"model": None, "sources": ["a", "b", "c"], "models": ["8b", "70b"]}
    assert v1_serving.passes({**enough, "references": [inside]})
    assert not v1_serving.passes({**enough, "references": [inside, outside]})
    assert not v1_serving.passes({**enough, "references": [{**inside, "unfinished": 3}]})
    assert not v1_serving.passes({**enough, "sources": ["a", "b"], "references": [inside]})
    assert not v1_serving.passes({**enough, "models": ["8b"], "references": [inside]})
    assert v1_serving.passes({**enough, "model": "8b", "models": ["8b"], "references": [inside]})


def test_calibrate_on_a_gpu_without_published_v1_runs_says_so_and_exits_1(capsys):
    assert main(["calibrate", "--engine", "vllm-v1", "--device", "a100_80gb", "--model", "llama-3.1-70b"]) == 1
    out = capsys.readouterr().out
    assert "no published measurement of vLLM V1 on this device: not validated (exit 1)" in out
    assert "context B7-q2" in out  # vLLM 0.6.0's run is shown, not graded


def test_a_bad_reference_row_names_its_line_and_column(tmp_path):
    text = v1_serving.REFERENCES.read_text().splitlines()
    header, first = text[0], text[1].replace(",concurrency,1,", ",concurrency,one,")
    bad = tmp_path / "refs.csv"
    bad.write_text(f"{header}\n{first}\n")
    with pytest.raises(ValueError, match=r"refs.csv: line 2, column 'load': 'one'"):
        v1_serving.load_references(bad)


# ---------------------------------------------------------------- V1's decode kernel
def test_flash_decode_attention_is_the_measured_kernel_carried_by_bytes_and_bandwidth():
    from sim.hardware.flash_attention import decode_table

    def table(model, device):
        return decode_table(find_layout(model, device, None), 256, 256, 16384)

    measured = table("llama-7b", "a100_80gb")  # the measured shape on the measuring GPU
    assert measured[8][2] == pytest.approx(0.073) and measured[128][8] == pytest.approx(2.142)
    assert measured[24][2] == pytest.approx((0.110 + 0.185) / 2)  # between batches 16 and 32
    # Llama-3.1-8B streams a quarter of the bytes a token (8 KV heads of 32): 1,024 tokens of
    # it cost what 256 of LLaMA-2-7B do
    assert table("llama-3.1-8b", "a100_80gb")[64][4] == pytest.approx(measured[64][1])
    # the H100 by the datasheets' bandwidth ratio; short contexts by bytes, down to one short
    # sequence's time
    h100 = table("llama-7b", "h100_80gb")
    assert h100[64][2] == pytest.approx(measured[64][2] * 2039 / 3350)
    assert np.nanmin(table("llama-3.1-8b", "a100_80gb")) == pytest.approx(0.012)
    assert table("llama-3.1-8b", "a100_80gb")[128][1] == pytest.approx(0.38 * 64 / 256)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--device", "tpu9"], "llumsim: error: --device: unknown device 'tpu9'"),
        (["--device", "h100_80gb", "--model", "llama-9b"], "llumsim: error: --model: 'llama-9b' is not a model of h100_80gb"),
    ],
)
def test_calibrate_v1_answers_bad_input_with_exit_2_before_any_run(argv, message, capsys):
    assert main(["calibrate", "--engine", "vllm-v1", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_row_held_to_the_profiled_batch_says_so():
    row = {**_reference().__dict__, "predicted": 1.0, "predicted_range": [1.0, 1.0], "unfinished": 0, "rel_error": 0.0}
    result = {"device": "h100_80gb", "model": None, "sources": [], "models": []}
    held = v1_serving.format_validation({**result, "references": [{**row, "most_in_flight": 256}]})
    free = v1_serving.format_validation({**result, "references": [{**row, "most_in_flight": 40}]})
    assert "held to the profiles' 256 sequences; that vLLM runs 1024" in held
    assert "held to" not in free
