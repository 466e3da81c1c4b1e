"""What the auto-scaler did in a run: how often it acted and the instance count it moved
between (the summary's ``scaling`` section and its line)."""

from __future__ import annotations

from typing import Any

from sim.engine.result import SimulationResult
from sim.engine.scaling import SCALING_LOG
from sim.metrics.sections import SUMMARY_SECTIONS, SummarySection
from sim.metrics.text import fmt


def scaling_summary(result: SimulationResult) -> dict[str, Any]:
    """How often the auto-scaler acted, and the instance count it moved between."""
    actions: dict[str, int] = {}
    for event in SCALING_LOG.of(result) or ():
        actions[event.action] = actions.get(event.action, 0) + 1
    counts = [len(sample.reports) + sample.starting for sample in result.load_samples]
    return {
        "enabled": result.config.autoscale.enabled,
        "actions": actions,
        "min_instances": min(counts) if counts else 0,
        "max_instances": max(counts) if counts else 0,
    }


def _lines(scaling: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """Scale-outs and scale-ins, beside the instance count and P99 prefill they bought."""
    if not scaling["enabled"]:
        return []
    actions = scaling["actions"]
    return [
        f"auto-scaling: {actions.get('scale_out', 0)} scale-outs, {actions.get('scale_in', 0)} "
        f"scale-ins; instances between {scaling['min_instances']} and {scaling['max_instances']}, "
        f"average {summary['cost']['average_instances']:.2f}; "
        f"P99 prefill {fmt(summary['latency']['prefill_latency']['p99'])}"
    ]


SUMMARY_SECTIONS.add(SummarySection(
    "scaling", after="slo", summarize=lambda result, tables: scaling_summary(result), report_lines=_lines
))
