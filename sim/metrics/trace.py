"""The run as a Chrome trace-event timeline, to open in ui.perfetto.dev or chrome://tracing.

One process per instance; its first thread holds the batches as slices (and a spot
instance's notice and stop as instants), the next one(s) its migrations. A migration is a slice on the source ("migrate out") and on the
destination ("migrate in"; a committed prefill-to-decode hand-off: "hand-off out"/"in"),
joined by a flow arrow: a flow start (``ph: s``) binds to the
slice enclosing it on its thread, and a flow end with ``bp: e`` binds to the slice
enclosing it too (without ``bp`` it would bind to the *next* slice to begin). Both points
therefore lie strictly inside their slices; flow ids are the migration ids, so unique.

Times are integer microseconds so that back-to-back batches abut exactly (a float
rounding overlap would make the viewers nest one batch inside the other). Process ids
start at 1 because Perfetto treats pid 0 (the Linux idle task) specially.

Events are written one at a time, so a run of a million batches needs no event list.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterator

from sim.engine.migrations import MIGRATIONS
from sim.engine.result import SimulationResult
from sim.engine.spot import NOTICE, SPOT_LOG, STOP
from sim.instance.migration import HANDOFF, MigrationRecord

BATCH_THREAD = 1
MIGRATION_THREAD = 2  # and up, when migrations on one instance overlap (tests can do that)
FLOW_CATEGORY = "migration"


def _us(seconds: float) -> int:
    return round(seconds * 1e6)


def pid_of(instance: int) -> int:
    """The trace process id of an instance (``instance + 1``; pid 0 is special in Perfetto)."""
    return instance + 1


def write_timeline(result: SimulationResult, path: Path) -> Path:
    """Write ``result``'s batches and migrations as a trace-event JSON file."""
    with open(path, "w", encoding="utf-8") as out:
        out.write('{"displayTimeUnit":"ms","traceEvents":[\n')
        first = True
        for line in _events(result):
            if not first:
                out.write(",\n")
            out.write(line)
            first = False
        out.write("\n]}\n")
    return path


def _events(result: SimulationResult) -> Iterator[str]:
    migrations = MIGRATIONS.of(result) or []
    threads = _migration_threads(migrations, result.end_time)
    last_thread: dict[int, int] = {}
    for record in migrations:
        for instance, tid in zip((record.source, record.destination), threads[record.id]):
            last_thread[instance] = max(last_thread.get(instance, MIGRATION_THREAD), tid)
    for instance in sorted(result.instance_lifetimes):
        yield from _instance_metadata(instance, last_thread.get(instance, MIGRATION_THREAD))
    stops = {instance: stop for instance, (_, stop) in result.instance_lifetimes.items()}
    for instance, start, duration, is_prefill, size in result.batch_log:
        ts = _us(start)
        end = _us(min(start + duration, stops[instance]))  # a failure cuts its batch short
        yield (
            f'{{"ph":"X","pid":{pid_of(instance)},"tid":{BATCH_THREAD},"ts":{ts},'
            f'"dur":{end - ts},"name":"{"prefill" if is_prefill else "decode"}",'
            f'"args":{{"size":{size}}}}}'
        )
    for record in migrations:
        yield from _migration_events(record, threads[record.id], result.end_time)
    for event in SPOT_LOG.of(result) or ():  # a spot instance's notice and stop: instants
        if event.event in (NOTICE, STOP):
            yield json.dumps({"ph": "i", "s": "p", "pid": pid_of(event.instance), "tid": BATCH_THREAD,
                              "ts": _us(event.time), "name": f"spot {event.event}", "args": {"detail": event.detail}})


def _instance_metadata(instance: int, last_thread: int) -> Iterator[str]:
    pid = pid_of(instance)

    def meta(name: str, tid: int, args: dict) -> str:
        return json.dumps({"ph": "M", "pid": pid, "tid": tid, "name": name, "args": args})

    yield meta("process_name", BATCH_THREAD, {"name": f"instance {instance}"})
    yield meta("process_sort_index", BATCH_THREAD, {"sort_index": instance})
    yield meta("thread_name", BATCH_THREAD, {"name": "batches"})
    yield meta("thread_name", MIGRATION_THREAD, {"name": "migrations"})
    for tid in range(MIGRATION_THREAD + 1, last_thread + 1):
        yield meta("thread_name", tid, {"name": f"migrations {tid - MIGRATION_THREAD + 1}"})


def _span(record: MigrationRecord, end_time: float) -> tuple[int, int]:
    """(ts, dur) in microseconds; a migration still in flight runs to the end of the run."""
    ts = _us(record.start)
    return ts, _us(end_time if math.isnan(record.end) else record.end) - ts


def _migration_threads(
    migrations: list[MigrationRecord], end_time: float
) -> dict[int, tuple[int, int]]:
    """Migration id -> (source thread, destination thread): on each instance, the first
    migration thread free at the migration's start, so slices on a thread never overlap."""
    busy_until: dict[int, list[int]] = {}  # instance -> end (us) of the last slice per thread
    threads = {}
    for record in sorted(migrations, key=lambda r: (r.start, r.id)):
        ts, dur = _span(record, end_time)
        picked = []
        for instance in (record.source, record.destination):
            ends = busy_until.setdefault(instance, [])
            lane = next((i for i, end in enumerate(ends) if end <= ts), len(ends))
            if lane == len(ends):
                ends.append(0)
            ends[lane] = ts + dur
            picked.append(MIGRATION_THREAD + lane)
        threads[record.id] = (picked[0], picked[1])
    return threads


OUTCOME_STYLE = {  # outcome -> (slice name prefix, chrome://tracing colour)
    "committed": ("migrate", "good"),
    "aborted": ("aborted", "terrible"),
    "in_flight": ("in flight", "grey"),
}


def _migration_events(
    record: MigrationRecord, threads: tuple[int, int], end_time: float
) -> Iterator[str]:
    ts, dur = _span(record, end_time)
    prefix, colour = OUTCOME_STYLE[record.outcome]
    if record.kind == HANDOFF and record.outcome == "committed":
        prefix = "hand-off"  # prefill to decode instance
    args = {
        "kind": record.kind,
        "migration": record.id,
        "request": record.request_id,
        "source": record.source,
        "destination": record.destination,
        "mode": record.mode,
        "stages": record.stages,
        "blocks": record.blocks,
        "downtime_ms": None if math.isnan(record.downtime) else record.downtime * 1e3,
        "outcome": record.outcome,
        "abort_reason": record.abort_reason,
    }
    src, dst = pid_of(record.source), pid_of(record.destination)
    sides = (
        (src, threads[0], f"{prefix} out r{record.request_id} \u2192 {record.destination}", "s"),
        (dst, threads[1], f"{prefix} in r{record.request_id} \u2190 {record.source}", "f"),
    )
    # the arrow shows that something moved: a committed request, or KV blocks copied
    arrow = record.outcome == "committed" or record.blocks > 0
    inside = ts + dur // 2 if dur >= 2 else ts  # strictly inside the slice when it can be
    for pid, tid, name, phase in sides:
        yield json.dumps(
            {"ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur, "name": name,
             "cat": FLOW_CATEGORY, "cname": colour, "args": args},
            ensure_ascii=False,
        )
        if arrow:
            flow = {"ph": phase, "pid": pid, "tid": tid, "ts": inside, "id": record.id,
                    "cat": FLOW_CATEGORY, "name": "migration"}
            if phase == "f":
                flow["bp"] = "e"
            yield json.dumps(flow)
