"""Records, summaries, exports and plots of a finished run; never changes simulation state."""

from sim.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "report": "format_summary write_run",
    "summary": "describe summarize",
    "tables": "cluster_table instance_table migration_table request_table",
    "trace": "write_timeline",
})
