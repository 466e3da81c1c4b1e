"""Records, summaries, exports and plots of a finished run; never changes simulation state."""

from sim.metrics.report import format_summary, write_run
from sim.metrics.summary import describe, summarize
from sim.metrics.tables import cluster_table, instance_table, migration_table, request_table
from sim.metrics.trace import write_timeline

__all__ = [
    "cluster_table",
    "describe",
    "format_summary",
    "instance_table",
    "migration_table",
    "request_table",
    "summarize",
    "write_run",
    "write_timeline",
]
