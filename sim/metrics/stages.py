"""A staged workload's stages in the summary (its ``stages`` section and one line per stage):
what each stage asked for and got, as inference-perf reports a stage (its
``reportgen/base.py``, ``summarize_requests``), over the stage's finished requests:

* ``e2e``: arrival to last token (``e2e_latency``); ``ttft``: arrival to first token
  (``prefill_latency``);
* ``itl``: per request, the mean time per output token after the first — (last token − first
  token) / (output tokens − 1), the ``decode_latency_per_token`` column; inference-perf calls
  this ``time_per_output_token``, and its ``inter_token_latency`` pools every gap between two
  tokens of every request, which the simulator does not record token by token;
* each with mean, p50, p90, p99 and count;
* ``throughput``: ``achieved_rate``, the stage's requests over the span of their arrivals
  (inference-perf's ``load_summary.achieved_rate``), and ``requests_per_s`` and
  ``output_tokens_per_s``, finished requests and their output tokens over the span from the
  stage's first arrival to its last finish (its ``throughput``).

``timing`` says when the stage began, when its timer started, when its last request ended and
when the generator found it over (simulated seconds; ``sim.workload.stages``).
"""

from __future__ import annotations

from typing import Any, Optional

import pandas as pd

from sim.engine.kernel import STAGES
from sim.engine.result import SimulationResult
from sim.metrics.distribution import describe
from sim.metrics.sections import SUMMARY_SECTIONS, SummarySection, Tables
from sim.metrics.text import fmt

LATENCIES = {"e2e": "e2e_latency", "ttft": "prefill_latency", "itl": "decode_latency_per_token"}


def _per_s(amount: float, seconds: float) -> float:
    return amount / seconds if seconds > 0 else 0.0


def _stage(rows: pd.DataFrame) -> dict[str, Any]:
    """One stage's counts, latencies and throughput from its requests' rows."""
    finished = rows[rows["status"] == "finished"]
    arrivals = rows["arrival"]
    sending = float(arrivals.max() - arrivals.min()) if len(rows) else 0.0
    serving = float(finished["finish"].max() - arrivals.min()) if len(finished) else 0.0
    return {
        "requests": int(len(rows)),
        "finished": int(len(finished)),
        "aborted": int((rows["status"] == "aborted").sum()),
        **{name: describe(finished[column]) for name, column in LATENCIES.items()},
        "throughput": {
            "achieved_rate": _per_s(len(rows), sending),
            "requests_per_s": _per_s(len(finished), serving),
            "output_tokens_per_s": _per_s(float(finished["output_tokens"].sum()), serving),
        },
    }


def stages_summary(result: SimulationResult, requests: pd.DataFrame) -> Optional[dict[str, Any]]:
    """Each stage begun, by number (None: the workload has no stages)."""
    records = STAGES.of(result)
    if records is None:
        return None
    ids = requests["id"].to_numpy(dtype=int)
    section = {}
    for record in records:
        rows = requests[(ids >= record.first) & (ids < record.end)]
        section[str(record.stage)] = {
            "rate": record.rate,
            "duration": record.duration,
            **_stage(rows),
            "timing": {
                "started": record.started,
                "timer": record.timer,
                "last_end": record.last_end,
                "ended": record.ended,
            },
        }
    return section


def _lines(stages: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """One line per stage: what it asked for, E2E, TTFT and ITL (mean, p90, p99), what it served."""

    def stats(name: str, row: dict[str, Any]) -> str:
        return f"{name} {fmt(row['mean'])} p90 {fmt(row['p90'])} p99 {fmt(row['p99'])}"

    lines = []
    for stage, row in stages.items():
        throughput = row["throughput"]
        lines.append(
            f"stage {stage} ({row['rate']:g} req/s x {row['duration']:g} s, {row['requests']} requests, "
            f"{row['finished']} finished): " + ", ".join(stats(n.upper(), row[n]) for n in LATENCIES)
            + f"; {throughput['requests_per_s']:.2f} req/s, {throughput['output_tokens_per_s']:.0f} output tokens/s"
        )
    return lines


SUMMARY_SECTIONS.add(SummarySection(
    "stages", after="throughput", summarize=lambda result, tables: stages_summary(result, tables.requests),
    report_lines=_lines,
))
