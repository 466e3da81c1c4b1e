"""The features whose metrics a run's summary shows: importing this module registers each
one's summary section and report lines (``sim.metrics.sections``). A feature's module joins
here, one name."""

from sim.metrics import decode_stall, faults, migration, pd, prefix, scaling, spot, stages  # noqa: F401
