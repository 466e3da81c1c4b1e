"""What faults cost: requests lost or retried, latency during the fault, time to recover
(the summary's ``faults`` section and its lines).

Recovery is measured the same way for every fault kind, against the pre-fault window: the
baseline is the P99 prefill latency of requests that arrived in the ``RECOVERY_WINDOW_S``
seconds before the fault started; the recovery time is how long after the fault's end the
requests arriving in the next ``RECOVERY_WINDOW_S`` seconds are back within 20% of it. The
window looks forward from the fault's end, so it never mixes in pre-fault requests: an
instance failure without a restart (whose window ends where it starts) is judged on the
requests that arrive after it, not on those that arrived before.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
import pandas as pd

from sim.config import FaultConfig
from sim.engine.result import SimulationResult
from sim.metrics.sections import SUMMARY_SECTIONS, SummarySection, Tables
from sim.metrics.text import fmt

RECOVERY_WINDOW_S = 30.0
RECOVERY_TOLERANCE = 0.20
RECOVERY_STEP_S = 1.0


def fault_window(fault: FaultConfig, end_time: float) -> tuple[float, float]:
    """[start, end] of a fault's direct effect."""
    if fault.kind == "instance_failure":
        return fault.at, fault.at + (fault.restart_after or 0.0)
    start = 0.0 if fault.start is None else fault.start
    return start, end_time if fault.end is None else min(fault.end, end_time)


def _p99(values: np.ndarray) -> float:
    return float(np.percentile(values, 99)) if values.size else math.nan


def _prefill_p99(arrival: np.ndarray, prefill: np.ndarray, start: float, end: float) -> float:
    mask = (arrival >= start) & (arrival < end)
    return _p99(prefill[mask])


def recovery_time(
    requests: pd.DataFrame, fault_start: float, fault_end: float, horizon: float
) -> tuple[float, Optional[float]]:
    """(pre-fault P99 prefill, seconds after ``fault_end`` until the requests arriving in
    the next window see a P99 prefill within 20% of it; None: not by ``horizon``)."""
    finished = requests[requests["status"] == "finished"]
    arrival = finished["arrival"].to_numpy()
    prefill = finished["prefill_latency"].to_numpy()
    baseline = _prefill_p99(arrival, prefill, fault_start - RECOVERY_WINDOW_S, fault_start)
    if math.isnan(baseline):
        return baseline, None
    t = fault_end
    while t <= horizon:
        current = _prefill_p99(arrival, prefill, t, t + RECOVERY_WINDOW_S)
        if not math.isnan(current) and current <= baseline * (1 + RECOVERY_TOLERANCE):
            return baseline, t - fault_end
        t += RECOVERY_STEP_S
    return baseline, None


def fault_summary(
    requests: pd.DataFrame, faults: list[FaultConfig], end_time: float, leaked_blocks: int
) -> dict[str, Any]:
    """Per-fault latency impact and recovery, plus the run's losses and leaked blocks."""
    finished = requests[requests["status"] == "finished"]
    arrival = finished["arrival"].to_numpy()
    prefill = finished["prefill_latency"].to_numpy()
    per_fault = []
    for fault in faults:
        start, end = fault_window(fault, end_time)
        length = max(end - start, RECOVERY_WINDOW_S)
        baseline, recovery = recovery_time(requests, start, end, end_time)
        per_fault.append(
            {
                "kind": fault.kind,
                "window": [start, end],
                "p99_prefill_before": _prefill_p99(arrival, prefill, start - length, start),
                "p99_prefill_during": _prefill_p99(arrival, prefill, start, start + length),
                "p99_prefill_baseline": baseline,
                "recovery_seconds": recovery,
            }
        )
    aborted = requests[requests["status"] == "aborted"]
    return {
        "lost_requests": int((aborted["abort_reason"] == "instance_failed").sum()),
        "aborted_requests": int(len(aborted)),
        "retried_requests": int((requests["retries"] > 0).sum()),
        "leaked_blocks": int(leaked_blocks),
        "faults": per_fault,
    }


def _section(result: SimulationResult, tables: Tables) -> Optional[dict[str, Any]]:
    faults = result.config.faults
    return fault_summary(tables.requests, faults, result.end_time, result.leaked_blocks) if faults else None


def _lines(faults: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """The run's losses, then each fault's window, latency and recovery."""
    lines = [
        f"faults: {faults['lost_requests']} requests lost, {faults['retried_requests']} retried, "
        f"{faults['leaked_blocks']} blocks leaked"
    ]
    for fault in faults["faults"]:
        start, end = fault["window"]
        recovery = fault["recovery_seconds"]
        lines.append(
            f"  {fault['kind']} [{start:.0f}, {end:.0f}] s: P99 prefill "
            f"{fmt(fault['p99_prefill_before'])} before, {fmt(fault['p99_prefill_during'])} during; "
            + ("not recovered by the end of the run" if recovery is None else f"recovered {recovery:.0f} s after")
        )
    return lines


SUMMARY_SECTIONS.add(SummarySection("faults", after="scaling", summarize=_section, report_lines=_lines))
