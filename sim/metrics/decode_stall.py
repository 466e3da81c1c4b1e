"""The part of decoding spent waiting behind prefill iterations (the summary's
``decode_stall`` section): every prefill step stalls its instance's running requests, since
vLLM 0.1.2 batches no prefill with decodes — the interference disaggregation removes."""

from __future__ import annotations

from typing import Any

from sim.engine.result import SimulationResult
from sim.engine.stall_result import DECODE_STALL
from sim.metrics.sections import SUMMARY_SECTIONS, SummarySection, Tables


def _section(result: SimulationResult, tables: Tables) -> dict[str, Any]:
    stall = DECODE_STALL.of(result)
    seconds = 0.0 if stall is None else stall
    finished = tables.requests[tables.requests["status"] == "finished"]
    return {
        "request_seconds": seconds,
        "per_output_token": seconds / max(float(finished["output_tokens"].sum()), 1.0),
    }


SUMMARY_SECTIONS.add(SummarySection("decode_stall", after="faults", summarize=_section))
