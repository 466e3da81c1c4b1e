"""Tables built from a finished run: one row per request, per instance sample, per cluster sample."""

from __future__ import annotations

import math
from dataclasses import astuple, fields

import numpy as np
import pandas as pd

from sim.engine.simulation import (
    CLUSTER_SAMPLE_COLUMNS,
    INSTANCE_SAMPLE_COLUMNS,
    SimulationResult,
)
from sim.instance.migration import MigrationRecord
from sim.instance.request import Request, RequestState

REQUEST_COLUMNS = (
    "id",
    "tier",
    "arrival",
    "prompt_tokens",
    "output_tokens",
    "status",
    "abort_reason",
    "instance",
    "instances",
    "first_admitted",
    "first_token",
    "finish",
    "queueing_delay",
    "prefill_latency",
    "decode_latency_per_token",
    "e2e_latency",
    "preemptions",
    "preemption_loss",
    "migrations",
    "retries",
)


RECORD_COLUMNS = tuple(f.name for f in fields(MigrationRecord))
MIGRATION_COLUMNS = RECORD_COLUMNS[:2] + ("request_tier",) + RECORD_COLUMNS[2:]


def _nan(value):
    return math.nan if value is None else value


def _request_row(request: Request) -> tuple:
    finished = request.state is RequestState.FINISHED
    status = request.state.value if request.done else "unfinished"
    first_token = _nan(request.first_token_time)
    finish = _nan(request.finish_time) if request.done else math.nan
    decode_per_token = (
        (finish - first_token) / (request.output_tokens - 1)
        if finished and request.output_tokens > 1
        else math.nan
    )
    return (
        request.id,
        request.tier,
        request.arrival,
        request.prompt_tokens,
        request.output_tokens,
        status,
        request.abort_reason or "",
        request.instances[0] if request.instances else -1,
        ">".join(str(i) for i in request.instances),
        _nan(request.first_admitted),
        first_token,
        finish,
        _nan(request.first_admitted) - request.arrival,
        first_token - request.arrival,
        decode_per_token,
        finish - request.arrival if finished else math.nan,
        request.preemptions,
        request.preemption_loss,
        request.migrations,
        request.retries,
    )


def request_table(result: SimulationResult) -> pd.DataFrame:
    """Every request's timeline and latencies (seconds), sorted by id."""
    rows = [_request_row(r) for r in sorted(result.requests, key=lambda r: r.id)]
    return pd.DataFrame(rows, columns=list(REQUEST_COLUMNS))


def instance_table(result: SimulationResult) -> pd.DataFrame:
    """Per-instance samples: blocks, queue, batch and freeness over time."""
    return pd.DataFrame(result.instance_samples, columns=list(INSTANCE_SAMPLE_COLUMNS))


def cluster_table(result: SimulationResult) -> pd.DataFrame:
    """Cluster samples: live instances, free and fragmented blocks over time."""
    frame = pd.DataFrame(result.cluster_samples, columns=list(CLUSTER_SAMPLE_COLUMNS))
    total = frame["instances"] * result.capacity_blocks
    frame["fragmented_fraction"] = np.where(total > 0, frame["fragmented_blocks"] / total, 0.0)
    return frame


def migration_table(result: SimulationResult) -> pd.DataFrame:
    """The migration log, one row per migration in start order, with the request's tier
    (-1 if unknown) so churn and downtime can be read per tier without a join."""
    tiers = {request.id: request.tier for request in result.requests}
    rows = []
    for record in result.migrations:
        row = astuple(record)
        rows.append(row[:2] + (tiers.get(record.request_id, -1),) + row[2:])
    return pd.DataFrame(rows, columns=list(MIGRATION_COLUMNS))
