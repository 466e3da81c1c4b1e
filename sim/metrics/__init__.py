"""Records, summaries, exports and plots of a finished run; never changes simulation state."""

from sim.lazy import lazy_exports

_EXPORTS = {
    "cluster_table": "sim.metrics.tables",
    "describe": "sim.metrics.summary",
    "format_summary": "sim.metrics.report",
    "instance_table": "sim.metrics.tables",
    "migration_table": "sim.metrics.tables",
    "request_table": "sim.metrics.tables",
    "summarize": "sim.metrics.summary",
    "write_run": "sim.metrics.report",
    "write_timeline": "sim.metrics.trace",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
