"""Long reproductions of the paper's serving results (``pytest -m slow``; ~30 s)."""

from __future__ import annotations

import pytest

from sim.engine import simulate
from sim.config import load_config
from sim.metrics import cluster_table, request_table, summarize

pytestmark = pytest.mark.slow


def serve(scheduler: str, **workload) -> dict:
    config = load_config(
        base={
            "name": f"serving-{scheduler}",
            "cluster": {"instances": 16},
            "workload": {"num_requests": 10000, **workload},
            "scheduler": {"name": scheduler},
        }
    )
    result = simulate(config)
    return summarize(result, request_table(result), cluster_table(result))


def test_sharegpt_serving_llumnix_beats_infaas_on_decode_tail_preemptions_and_fragmentation():
    arrival = {"arrival": {"process": "poisson", "rate": 22.0}}
    infaas, llumnix = serve("infaas++", **arrival), serve("llumnix", **arrival)
    assert llumnix["requests"]["finished"] == infaas["requests"]["finished"] == 10000
    assert llumnix["latency"]["decode_latency_per_token"]["p99"] < infaas["latency"]["decode_latency_per_token"]["p99"]
    assert llumnix["requests"]["preemptions"] < infaas["requests"]["preemptions"]
    assert llumnix["fragmentation"]["mean_fraction"] < 0.5 * infaas["fragmentation"]["mean_fraction"]


def test_long_inputs_near_saturation_llumnix_defragments_and_cuts_queueing():
    """L-L lengths (paper Fig. 11) at 3.3 req/s, just under what 16 instances sustain:
    de-fragmentation lowers the mean prefill latency (queueing) and the decode tail. (The
    P99 prefill here is the compute of the longest prompts, which migration cannot cut.)"""
    workload = {
        "source": "synthetic",
        "synthetic": {"input": "L", "output": "L"},
        "arrival": {"process": "poisson", "rate": 3.3},
    }
    infaas, llumnix = serve("infaas++", **workload), serve("llumnix", **workload)
    assert llumnix["latency"]["prefill_latency"]["mean"] < infaas["latency"]["prefill_latency"]["mean"]
    assert llumnix["latency"]["decode_latency_per_token"]["p99"] < infaas["latency"]["decode_latency_per_token"]["p99"]
    assert llumnix["requests"]["preemptions"] < 0.2 * infaas["requests"]["preemptions"]
    assert llumnix["fragmentation"]["mean_fraction"] < 0.5 * infaas["fragmentation"]["mean_fraction"]
