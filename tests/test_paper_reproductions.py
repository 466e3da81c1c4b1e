"""Long reproductions of the paper's serving comparisons on its presets (``pytest -m slow``).

The paper's Fig. 11 set-ups as the artifact ran them (experiments/configs/paper/), 10,000
requests each; the assertions are the paper's qualitative findings, with margins far from
the measured values (results/paper: ``llumsim paper``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.config import load_config
from sim.engine import simulate
from sim.metrics import cluster_table, request_table, summarize

pytestmark = pytest.mark.slow

PRESETS = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "paper"


def serve(preset: str, scheduler: str, rate: float) -> dict:
    config = load_config(
        PRESETS / preset, [f"scheduler.name={scheduler}", f"workload.arrival.rate={rate}"]
    )
    result = simulate(config)
    return summarize(result, request_table(result), cluster_table(result))


def test_sharegpt_llumnix_beats_infaas_and_round_robin_on_prefill_tail_preemptions_fragmentation():
    """Fig. 11 ShareGPT at 7.5 req/s: P99 prefill, the decode tail, preemptions and
    fragmented memory all lower under Llumnix; round-robin worst."""
    runs = {s: serve("fig11_sharegpt.yaml", s, 7.5) for s in ("round-robin", "infaas++", "llumnix")}
    rr, infaas, llumnix = runs["round-robin"], runs["infaas++"], runs["llumnix"]
    assert all(r["requests"]["finished"] == 10000 for r in runs.values())
    p99 = {s: r["latency"]["prefill_latency"]["p99"] for s, r in runs.items()}
    assert p99["llumnix"] * 2 < p99["infaas++"] < p99["round-robin"]
    decode = "decode_latency_per_token"
    assert llumnix["latency"][decode]["p99"] < infaas["latency"][decode]["p99"] < rr["latency"][decode]["p99"]
    assert llumnix["requests"]["preemptions"] < 0.2 * infaas["requests"]["preemptions"]
    assert llumnix["fragmentation"]["mean_fraction"] < 0.5 * infaas["fragmentation"]["mean_fraction"]


def test_long_inputs_llumnix_defragments_and_cuts_queueing():
    """Fig. 11 L-L at 2.8 req/s: de-fragmentation lowers the mean prefill latency
    (queueing), nearly removes preemptions and fragmented memory."""
    infaas, llumnix = serve("fig11_ll.yaml", "infaas++", 2.8), serve("fig11_ll.yaml", "llumnix", 2.8)
    assert llumnix["latency"]["prefill_latency"]["mean"] < 0.8 * infaas["latency"]["prefill_latency"]["mean"]
    assert llumnix["requests"]["preemptions"] < 0.2 * infaas["requests"]["preemptions"]
    assert llumnix["fragmentation"]["mean_fraction"] < 0.5 * infaas["fragmentation"]["mean_fraction"]
