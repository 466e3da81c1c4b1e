"""The serving engine as a pool's part (``pools[*].engine``): it picks the batch former and the
host work the replica model adds, the run's header names it per pool, and a pool on another
engine than its GPU's deployments run is told so once."""

from __future__ import annotations

import numpy as np
import pytest

from sim.config import ConfigError
from sim.engine import Simulation
from sim.hardware import load_replica_model
from sim.hardware.overheads import reference_rows
from sim.instance.batching import BatchFormer
from sim.instance.v1_batching import V1BatchFormer
from sim.metrics import request_table
from sim.metrics.report import format_summary
from sim.metrics.summary import summarize
from sim.metrics.tables import cluster_table
from tests.doubles import LinearTimer, make_config, make_workload


def pools(*engines, device="a10"):
    return [{"name": f"p{i}", "instances": 1, "engine": engine, "device": device} for i, engine in enumerate(engines)]


def simulation(config):
    return Simulation(config, workload=make_workload([0.0, 0.1], [40, 40], [4, 4]), load_pool_model=lambda pool, key: LinearTimer())


def test_a_pools_engine_picks_its_batch_former_unless_the_pool_names_one():
    run = simulation(make_config(pools=pools("vllm-0.1.2", "vllm-v1")))
    assert [type(run.llumlet(i).batches) for i in (0, 1)] == [BatchFormer, V1BatchFormer]
    named = simulation(make_config(pools=[{**pools("vllm-v1")[0], "batch_former": "vllm"}]))
    assert type(named.llumlet(0).batches) is BatchFormer


@pytest.mark.parametrize(
    "pool, message",
    [
        ({"engine": "vllm-v2"}, r"pools\[0\]\.engine: unknown serving engine part 'vllm-v2' \(known: vllm-0.1.2, vllm-v1\)"),
        ({"engine": "vllm-v1", "max_batched_tokens": 100, "max_batch_size": 128},
         r"pools\[0\]\.max_batched_tokens: vLLM V1 decodes every running request in every step"),
    ],
)
def test_an_engine_that_cannot_run_is_refused_naming_the_key(pool, message):
    with pytest.raises(ConfigError, match=message):
        simulation(make_config(pools=[{"name": "p", "instances": 1, **pool}]))


def test_v1s_host_work_is_the_line_through_the_phases_left_on_its_critical_path():
    # scheduler, input preparation and sampler of the A100 host's measured phases, by least
    # squares here; no detokenizer per output token (it runs in V1's frontend process)
    rows = reference_rows("cpu_overheads_vidur_a100_llama2_7b_tp1.csv")  # schedule, sampler, prepare, outputs, ray
    batch = np.array(sorted(rows), dtype=float)
    kept = np.array([rows[b][0] + rows[b][1] + rows[b][2] for b in sorted(rows)])
    per_request, base = np.polyfit(batch, kept, 1)
    v1 = load_replica_model("llama-7b", "a100_80gb", engine="vllm-v1")
    old = load_replica_model("llama-7b", "a100_80gb")
    assert v1.overhead_base == pytest.approx(base * 1e-3, rel=1e-4)
    assert v1.overhead_per_request == pytest.approx(per_request * 1e-3, rel=1e-4)
    assert v1.overhead_per_output_token == 0.0 and old.overhead_per_output_token > 0
    assert v1.overhead_time(64) < old.overhead_time(64) / 3  # no outputs, Ray or sampler loop
    assert v1.kv_capacity_blocks == old.kv_capacity_blocks  # the same GPU's memory


def test_the_header_names_each_pools_engine_and_notes_todays_gpu_on_the_old_engine():
    mixed = simulation(make_config(pools=pools("vllm-0.1.2", "vllm-v1")))
    result = mixed.run()
    text = format_summary(summarize(result, request_table(result), cluster_table(result)))
    assert text.splitlines()[0].startswith("test  scheduler=infaas++  engines=p0:vllm-0.1.2,p1:vllm-v1  ")
    # the A10 is the artifact's testbed: its pools on V1 are noted, as an A100 pool on 0.1.2 is
    assert "note: pool p1 runs a10 on vllm-v1; its deployments run vllm-0.1.2" in text
    today = simulation(make_config(pools=pools("vllm-0.1.2", device="a100_80gb")))
    result = today.run()
    summary = summarize(result, request_table(result), cluster_table(result))
    assert summary["engines"] == {"p0": "vllm-0.1.2"}
    assert summary["engine_note"] == "pool p0 runs a100_80gb on vllm-0.1.2; its deployments run vllm-v1"
    assert format_summary(summary).count("note:") == 1


def test_a_prompt_longer_than_a_step_goes_to_the_pool_that_chunks_it():
    # both pools batch 256 tokens a step: only V1 chunks a 1,000-token prompt over steps, so
    # dispatch sends it there (pools of other limits), and it finishes instead of aborting
    config = make_config(
        pools=[
            {"name": "old", "instances": 1, "max_batched_tokens": 256, "max_batch_size": 8},
            {"name": "v1", "instances": 1, "max_batched_tokens": 256, "max_batch_size": 8, "engine": "vllm-v1"},
        ]
    )
    run = Simulation(config, workload=make_workload([0.0, 0.1], [1000, 100], [4, 4]), load_pool_model=lambda pool, key: LinearTimer())
    result = run.run()
    long, short = sorted(result.requests, key=lambda r: r.id)
    assert long.state == "finished" and long.instances == [1]
    assert short.state == "finished"
