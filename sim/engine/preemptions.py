"""When a spot pool's instances get their preemption notices: a Poisson rate per instance-hour,
or the replay of a cloud's availability trace.

* ``rate_per_hour``: every instance of the pool lives an exponential time of mean
  1/rate hours from its start (a Poisson process of notices per instance-hour), drawn from a
  generator seeded by the run's seed and the instance's id, so an instance's notice does not
  move when another instance is added (INV-6 same-result).
* ``trace``: an availability trace of ``ms,add|remove,node`` rows (SpotServe's AWS g4dn
  trace, ``traces/spot/``). Each group of removals at one time is replayed as a hazard: of the
  n nodes the trace held just before it, r were taken, so each live instance of the pool gets
  its notice then with probability r/n (its own draw, seeded by the run's seed). The pool
  sees the trace's bursts when they happen and its per-node rate whatever the pool's size;
  the trace's ``add`` rows count only toward n (what comes back is the pool's
  ``replacement``'s to say).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from sim.workload.traces import TraceError

SPOT_STREAM = 0x5B07  # the generator stream of spot notices (beside the faults' 0x11F)
EVENTS = ("add", "remove")
COLUMNS = ("time_ms", "event", "node")


class Removals(NamedTuple):
    """Nodes a trace lost at one time: ``removed`` of the ``live`` it held just before."""

    time: float  # seconds from the trace's start
    removed: int
    live: int


def read_availability_trace(path: Path) -> list[Removals]:
    """The removal groups of an availability trace, in time order; a ``TraceError`` naming the
    file, row (its line number) and column of the first bad cell otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") from None
    live: set[str] = set()
    groups: list[Removals] = []
    last_ms = -1
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(COLUMNS):
            raise TraceError(
                f"{path}: row {line_number}: {len(cells)} cells; a row is {','.join(COLUMNS)}"
            )
        ms, event, node = cells
        if not ms.isdigit():
            raise TraceError(f"{path}: row {line_number}, column 'time_ms': {ms!r} is not a whole number of ms")
        if int(ms) < last_ms:
            raise TraceError(f"{path}: row {line_number}, column 'time_ms': {ms} is before the row above ({last_ms})")
        if event not in EVENTS:
            raise TraceError(f"{path}: row {line_number}, column 'event': {event!r} is not add or remove")
        if not node:
            raise TraceError(f"{path}: row {line_number}, column 'node': empty")
        if (event == "add") == (node in live):
            state = "already live" if event == "add" else "not live"
            raise TraceError(f"{path}: row {line_number}, column 'node': {event} of {node!r}, {state}")
        if event == "add":
            live.add(node)
        else:
            seconds = int(ms) / 1000.0
            if groups and groups[-1].time == seconds:
                before = groups[-1]
                groups[-1] = Removals(seconds, before.removed + 1, before.live)
            else:
                groups.append(Removals(seconds, 1, len(live)))
            live.discard(node)
        last_ms = int(ms)
    if not groups:
        raise TraceError(f"{path}: no remove row: the trace preempts nothing")
    return groups


def lifetime_seconds(rate_per_hour: float, seed: int, instance_id: int) -> float:
    """An instance's time from its start to its notice under a Poisson rate per instance-hour."""
    rng = np.random.default_rng([seed, SPOT_STREAM, instance_id])
    return float(rng.exponential(3600.0 / rate_per_hour))


def trace_draws(seed: int, pool_index: int) -> np.random.Generator:
    """The generator a pool's trace replay draws its notices from."""
    return np.random.default_rng([seed, SPOT_STREAM, 1 << 32, pool_index])
