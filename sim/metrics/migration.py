"""What the scheduler's balance migrations did in a run (the summary's ``migration`` section
and its line): outcomes, downtime, stages, churn and the time instances spent migrating.
Hand-offs and adaptive PD's moves are PD's (``sim.metrics.pd``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from sim.engine.result import SimulationResult
from sim.instance.migration import BALANCE
from sim.metrics.distribution import describe
from sim.metrics.sections import SUMMARY_SECTIONS, SummarySection, Tables
from sim.metrics.text import counts, fmt


def churn(migrations: pd.DataFrame) -> dict[str, int]:
    """Migrations that undo each other: requests moved 3 or more times, and reversals, where
    a request's next migration takes it back to the instance it just left (path 0>3>0)."""
    committed = migrations[migrations["outcome"] == "committed"].sort_values(["committed_at", "id"])
    per_request = committed.groupby("request_id")
    moves = per_request.size()
    # a reversal: this migration's destination is the previous migration's source
    previous_source = per_request["source"].shift()
    reversal = committed["destination"] == previous_source
    return {
        "requests_migrated": int(len(moves)),
        "requests_migrated_3_or_more": int((moves >= 3).sum()),
        "reversals": int(reversal.sum()),
        "requests_with_reversal": int(committed.loc[reversal, "request_id"].nunique()),
    }


def migrating_fractions(
    migrations: pd.DataFrame, lifetimes: dict[int, tuple[float, float]]
) -> dict[int, float]:
    """Fraction of each instance's lifetime with a migration in flight to or from it.

    Intervals run from a record's start to its end (to the instance's end while still in
    flight); overlapping intervals are merged, so time is never counted twice."""
    intervals: dict[int, list[tuple[float, float]]] = {i: [] for i in lifetimes}
    for start, end, source, destination in migrations[
        ["start", "end", "source", "destination"]
    ].itertuples(index=False):
        for instance in (source, destination):
            begin, stop = lifetimes[instance]
            first, finish = max(start, begin), stop if math.isnan(end) else min(end, stop)
            if finish > first:
                intervals[instance].append((first, finish))
    fractions = {}
    for instance, spans in intervals.items():
        begin, stop = lifetimes[instance]
        covered, reach = 0.0, -math.inf
        for start, end in sorted(spans):
            if end > reach:
                covered += end - max(start, reach)
                reach = end
        fractions[instance] = covered / (stop - begin) if stop > begin else 0.0
    return fractions


def migration_summary(result: SimulationResult, migrations: pd.DataFrame) -> dict[str, Any]:
    """Outcomes, downtime, stages, churn and migrating time of the migration log."""
    committed = migrations[migrations["outcome"] == "committed"]
    aborted = migrations[migrations["outcome"] == "aborted"]
    downtime = describe(committed["downtime"].astype(float))
    fractions = migrating_fractions(migrations, result.instance_lifetimes)
    return {
        "total": int(len(migrations)),
        "committed": int(len(committed)),
        "aborted": int(len(aborted)),
        "in_flight": int((migrations["outcome"] == "in_flight").sum()),
        "abort_reasons": {str(k): int(v) for k, v in aborted["abort_reason"].value_counts().items()},
        "downtime": {key: downtime[key] for key in ("mean", "p50", "p99", "count")},
        "mean_stages": float(committed["stages"].mean()) if len(committed) else math.nan,
        "mean_blocks": float(committed["blocks"].mean()) if len(committed) else math.nan,
        "churn": churn(migrations),
        "migrating_fraction": {
            "mean": float(np.mean(list(fractions.values()))) if fractions else 0.0,
            "per_instance": {str(i): f for i, f in sorted(fractions.items())},
        },
    }


def _section(result: SimulationResult, tables: Tables) -> dict[str, Any]:
    migrations = tables.migrations
    return migration_summary(result, migrations[migrations["kind"] == BALANCE])


def _lines(migration: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """Outcomes, downtime, churn and migrating time, when anything migrated."""
    if not migration["total"]:
        return []
    aborts = counts(migration["abort_reasons"])
    downtime, undone = migration["downtime"], migration["churn"]
    return [
        f"migrations: {migration['committed']} committed, {migration['aborted']} aborted"
        + (f" ({aborts})" if aborts else "")
        + f"; downtime mean {fmt(downtime['mean'])} p99 {fmt(downtime['p99'])}; "
        f"{undone['requests_migrated_3_or_more']} requests moved 3+ times, "
        f"{undone['reversals']} reversals; instances migrating "
        f"{migration['migrating_fraction']['mean'] * 100:.1f}% of the time"
    ]


SUMMARY_SECTIONS.add(SummarySection("migration", after="requests", summarize=_section, report_lines=_lines))
