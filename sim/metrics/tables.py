"""Tables built from a finished run: one named row per request, per instance sample, per
cluster sample and per migration; the CSV columns are the rows' field names."""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np
import pandas as pd

from sim.engine.migrations import MIGRATIONS
from sim.engine.prefix_result import PREFIX_CACHE, SHARING
from sim.engine.result import LoadSample, SimulationResult
from sim.instance.load import freeness_full, freeness_normal
from sim.instance.migration import MigrationRecord
from sim.instance.request import Request, RequestState


class RequestRow(NamedTuple):
    id: int
    tier: int
    arrival: float
    prompt_tokens: int
    output_tokens: int
    status: str  # finished, aborted, unfinished
    abort_reason: str
    instance: int  # the first instance (-1: never dispatched)
    instances: str  # the path, e.g. 0>3>0
    first_admitted: float
    first_token: float
    finish: float
    queueing_delay: float
    prefill_latency: float
    decode_latency_per_token: float
    e2e_latency: float
    preemptions: int
    preemption_loss: float
    migrations: int
    retries: int


class InstanceSampleRow(NamedTuple):
    time: float
    instance: int
    used_blocks: int
    reserved_blocks: int
    free_blocks: int
    queue_length: int
    running: int
    freeness_full: float
    freeness_normal: float
    draining: bool


class ClusterSampleRow(NamedTuple):
    time: float
    instances: int  # billed: starting, serving and draining
    serving: int
    draining: int
    free_blocks: int
    fragmented_blocks: int
    queued: int


class MigrationRow(NamedTuple):
    id: int
    request_id: int
    request_tier: int  # -1 if unknown
    source: int
    destination: int
    mode: str
    start: float
    end: float
    stages: int
    blocks: int
    last_stage_blocks: int
    downtime: float
    rejoin_delay: float
    outcome: str
    abort_reason: str
    suspended_at: float
    committed_at: float
    kind: str  # balance (the scheduler's pairing) or handoff (prefill to decode)


def _nan(value: Optional[float]) -> float:
    return math.nan if value is None else value


def request_row(request: Request) -> RequestRow:
    finished = request.state is RequestState.FINISHED
    status = request.state.value if request.done else "unfinished"
    first_admitted = _nan(request.first_admitted)
    first_token = _nan(request.first_token_time)
    finish = _nan(request.finish_time) if request.done else math.nan
    decode_per_token = (
        (finish - first_token) / (request.output_tokens - 1)
        if finished and request.output_tokens > 1
        else math.nan
    )
    return RequestRow(
        id=request.id,
        tier=request.tier,
        arrival=request.arrival,
        prompt_tokens=request.prompt_tokens,
        output_tokens=request.output_tokens,
        status=status,
        abort_reason=request.abort_reason or "",
        instance=request.instances[0] if request.instances else -1,
        instances=">".join(str(i) for i in request.instances),
        first_admitted=first_admitted,
        first_token=first_token,
        finish=finish,
        queueing_delay=first_admitted - request.arrival,
        prefill_latency=first_token - request.arrival,
        decode_latency_per_token=decode_per_token,
        e2e_latency=finish - request.arrival if finished else math.nan,
        preemptions=request.preemptions,
        preemption_loss=request.preemption_loss,
        migrations=request.migrations,
        retries=request.retries,
    )


def instance_rows(sample: LoadSample) -> list[InstanceSampleRow]:
    return [
        InstanceSampleRow(
            time=sample.time,
            instance=report.instance_id,
            used_blocks=report.used_blocks,
            reserved_blocks=report.reserved_blocks,
            free_blocks=report.free_blocks,
            queue_length=report.num_waiting,
            running=report.num_running,
            freeness_full=freeness_full(report),
            freeness_normal=freeness_normal(report),
            draining=report.draining,
        )
        for report in sample.reports
    ]


def cluster_row(sample: LoadSample) -> ClusterSampleRow:
    """Fragmentation (Llumnix §6.3): free memory that, pooled, would admit a request queued
    for lack of blocks somewhere in the cluster."""
    reports = sample.reports
    free_total = sum(report.free_blocks for report in reports)
    draining = sum(report.draining for report in reports)
    blocked = [report.head_demand_blocks for report in reports if report.head_blocked]
    return ClusterSampleRow(
        time=sample.time,
        instances=len(reports) + sample.starting,
        serving=len(reports) - draining,
        draining=draining,
        free_blocks=free_total,
        fragmented_blocks=free_total if any(d <= free_total for d in blocked) else 0,
        queued=sum(report.num_waiting for report in reports),
    )


def migration_row(record: MigrationRecord, tier: int) -> MigrationRow:
    """The record's fields, with the request's tier and the enums as their names."""
    fields = {name: getattr(record, name) for name in MigrationRow._fields if name != "request_tier"}
    fields.update(request_tier=tier, mode=record.mode.value, outcome=record.outcome.value)
    return MigrationRow(**fields)


def _frame(rows: list, row_type: type) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(row_type._fields))


def request_table(result: SimulationResult) -> pd.DataFrame:
    """Every request's timeline and latencies (seconds), sorted by id."""
    ordered = sorted(result.requests, key=lambda r: r.id)
    frame = _frame([request_row(r) for r in ordered], RequestRow)
    ids = frame["id"].to_numpy(dtype=int)
    if result.urgency is not None:  # an SLO contract: where each request's targets lie on its span
        frame["urgency"] = result.urgency[ids] if len(frame) else []
    sharing = SHARING.of(result)
    if sharing is not None:  # conversations and system prompts
        frame["conversation"] = sharing.conversation[ids]
        frame["turn"] = sharing.turn[ids]
    if PREFIX_CACHE.of(result) is not None:  # prompt tokens its prefills found cached
        frame["cached_tokens"] = [r.cached_tokens for r in ordered]
    return frame


def instance_table(result: SimulationResult) -> pd.DataFrame:
    """Per-instance samples: blocks, queue, batch and freeness over time."""
    rows = [row for sample in result.load_samples for row in instance_rows(sample)]
    return _frame(rows, InstanceSampleRow)


def cluster_table(result: SimulationResult) -> pd.DataFrame:
    """Cluster samples: live instances, free and fragmented blocks over time, and with
    adaptive headroom each tier's headroom as a fraction of an instance's capacity."""
    frame = _frame([cluster_row(sample) for sample in result.load_samples], ClusterSampleRow)
    total = frame["instances"] * result.capacity_blocks
    frame["fragmented_fraction"] = np.where(total > 0, frame["fragmented_blocks"] / total, 0.0)
    samples = result.load_samples
    if samples and samples[0].headroom:  # adaptive-headroom: each tier's H_p / M over time
        for tier in range(len(samples[0].headroom)):
            frame[f"headroom_tier{tier}"] = [sample.headroom[tier] for sample in samples]
    return frame


def migration_table(result: SimulationResult) -> pd.DataFrame:
    """The migration log, one row per migration in start order, with the request's tier
    so churn and downtime can be read per tier without a join."""
    tiers = {request.id: request.tier for request in result.requests}
    rows = [migration_row(record, tiers.get(record.request_id, -1)) for record in MIGRATIONS.of(result) or ()]
    return _frame(rows, MigrationRow)
