"""Request streams: trace readers, synthetic generators and priority samplers.

This package knows nothing about instances; it turns (``WorkloadConfig``, seed) into a
``Workload`` — arrival times, prompt and output lengths, and a tier for every request.
"""

from sim.workload.arrivals import deterministic_arrivals, renewal_arrivals, replay_arrivals
from sim.workload.artifact_client import client_stream
from sim.workload.build import Workload, build_workload, resolve_trace_path
from sim.workload.priority import sample_tiers, tier_weights
from sim.workload.shaping import PRESETS, match_mean_p95, resolve_shape, scale_lengths
from sim.workload.synthetic import LENGTH_CLASSES, power_law_lengths, scale_to_mean
from sim.workload.traces import (
    TraceError,
    detect_format,
    read_azure,
    read_burstgpt,
    read_lengths_table,
    read_trace,
    summarise,
)

__all__ = [
    "LENGTH_CLASSES",
    "PRESETS",
    "TraceError",
    "Workload",
    "build_workload",
    "client_stream",
    "deterministic_arrivals",
    "detect_format",
    "match_mean_p95",
    "power_law_lengths",
    "read_azure",
    "read_burstgpt",
    "read_lengths_table",
    "read_trace",
    "renewal_arrivals",
    "replay_arrivals",
    "resolve_shape",
    "resolve_trace_path",
    "sample_tiers",
    "scale_lengths",
    "scale_to_mean",
    "summarise",
    "tier_weights",
]
