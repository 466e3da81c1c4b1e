"""The run's migration log in its result: every migration's record — the scheduler's
balance migrations, prefill-to-decode hand-offs and adaptive PD's moves alike
(``MigrationRecord.kind``) — in start order, in flight or ended."""

from __future__ import annotations

from typing import Protocol

from sim.engine.migrations import MigrationLauncher
from sim.engine.sections import result_section
from sim.instance.migration import MigrationRecord


class _Run(Protocol):
    migrations: MigrationLauncher


def _records(run: _Run) -> list[MigrationRecord]:
    return run.migrations.records


# every run has one, empty when nothing migrated
MIGRATIONS = result_section("migrations", _records)
