"""Vidur's own simulator on our workload, for side-by-side speed benchmarks.

    python benchmarks/vidur_baseline.py <vidur.main flags> [--no-restart-fix]

A launcher of ours in front of Vidur 0.0.26's simulator (the installed package, not a fork).
It does what ``vidur.main.main`` does — config from the command line, ``set_seeds``,
``Simulator(config).run()`` — with three additions:

* ``import sim.hardware`` registers our A10 SKUs and LLaMA-1 model configs with Vidur;
* ``fix_request_restart()`` works around Vidur's restart bug (below), in this process only;
* the phases are timed separately and one JSON line, prefixed ``LLUMSIM_VIDUR``, reports
  start-up (config, predictor load, trace read), event loop, output writing, batches,
  requests, restarts, P99 prefill and peak RSS. Vidur logs to stdout; parse that line.

**The restart bug.** ``vidur.entities.Request.restart()`` (preemption by recompute) resets
``_num_processed_tokens`` but not the per-stage counters ``_num_stage_processed_tokens`` and
``_is_prefill_stage_complete``. The recompute prefill then adds its tokens on top of the
stale stage count and ``on_batch_stage_end`` fails ``assert self._num_stage_processed_tokens
<= self.total_tokens`` — so the first preemption ends the run (vLLM, Sarathi and Mnemosyne
schedulers alike). ``fix_request_restart`` wraps the method so that it also resets the two
counters, which is what a fresh request has before its first prefill. Nothing else about
Vidur's behaviour changes. ``tests/test_vidur_baseline.py`` shows both the failure and the fix.

The helpers that build Vidur's flags and trace for a ``sim.workload.Workload`` live here too.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

MARKER = "LLUMSIM_VIDUR "
TRACE_DATE = "2000-01-01"  # Vidur's trace replay keeps only the rows of one "Date"


# ---------------------------------------------------------------------------- the workaround
def fix_request_restart() -> bool:
    """Make Vidur's ``Request.restart`` reset the per-stage counters too (idempotent).

    Returns True if the fix was applied now, False if it already was.
    """
    from vidur.entities.request import Request

    original = Request.restart
    if getattr(original, "_llumsim_fixed", False):
        return False

    def restart(self) -> None:
        original(self)
        # what a new request has before its first prefill
        self._num_stage_processed_tokens = 0
        self._is_prefill_stage_complete = False

    restart._llumsim_fixed = True  # type: ignore[attr-defined]
    restart._llumsim_original = original  # type: ignore[attr-defined]
    restart.__doc__ = original.__doc__
    Request.restart = restart
    return True


def unfix_request_restart() -> None:
    """Undo ``fix_request_restart`` (tests)."""
    from vidur.entities.request import Request

    original = getattr(Request.restart, "_llumsim_original", None)
    if original is not None:
        Request.restart = original


# ---------------------------------------------------------------------------- workload -> Vidur
def write_trace(workload, path: str | Path) -> int:
    """Write ``workload`` as a Vidur trace-replay CSV; return the largest prompt + output.

    Arrival times are written with ``repr`` precision, so Vidur replays the same requests
    at the same instants (its ``time_scale_factor`` and token scale factors must be 1).
    """
    arrival = workload.arrival.tolist()
    prompts = workload.prompt_tokens.tolist()
    outputs = workload.output_tokens.tolist()
    with open(path, "w") as out:
        out.write("Date,Time,PromptTokenCount,CompletionTokenCount\n")
        for t, p, o in zip(arrival, prompts, outputs):
            out.write(f"{TRACE_DATE},{t!r},{p},{o}\n")
    return max(p + o for p, o in zip(prompts, outputs)) if prompts else 1


def workload_flags(
    trace_path: str | Path,
    max_tokens: int,
    *,
    replicas: int,
    max_batched_tokens: int,
    max_batch_size: int,
    watermark_fraction: float,
    write_metrics: bool = True,
) -> list[str]:
    """Vidur flags for: replay ``trace_path`` unscaled on ``replicas`` vLLM replicas behind LOR.

    ``max_tokens`` must be at least the trace's largest prompt + output, or Vidur truncates
    prompts (and in this release it only sizes caches with it; the explicit block count of
    ``prepare_vidur_offline`` is what bounds memory).
    """
    prefix = "--trace_request_generator_config_"
    flags = {
        "--cluster_config_num_replicas": replicas,
        "--global_scheduler_config_type": "lor",
        "--replica_scheduler_config_type": "vllm",
        "--vllm_scheduler_config_batch_size_cap": max_batch_size,
        "--vllm_scheduler_config_max_tokens_in_batch": max_batched_tokens,
        "--cache_config_watermark_blocks_fraction": watermark_fraction,
        "--request_generator_config_type": "trace_replay",
        prefix + "trace_file": trace_path,
        prefix + "date": TRACE_DATE,
        prefix + "max_tokens": max_tokens,
        prefix + "prefill_scale_factor": 1,
        prefix + "decode_scale_factor": 1,
        prefix + "time_scale_factor": 1,
    }
    args = [str(item) for pair in flags.items() for item in pair]
    # wandb is off by default, and ``prepare_vidur_offline``'s flags turn plots (kaleido
    # needs Chrome) and the chrome trace off; request metrics stay on unless asked: Vidur
    # needs them to report latencies, as we do
    if not write_metrics:
        args.append("--no-metrics_config_write_metrics")
    return args


# ---------------------------------------------------------------------------- the launcher
def _rss_mib() -> float:
    """Current resident set size (MiB), from /proc (0 where unavailable)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _prefill_latencies(simulator) -> list[float] | None:
    """Arrival to first token of every completed request (None: Vidur's metrics were off)."""
    from vidur.metrics.constants import RequestMetricsTimeDistributions

    store = simulator.metric_store
    if not (store._config.write_metrics and store._config.store_request_metrics):
        return None
    series = store._request_metrics_time_distributions[
        RequestMetricsTimeDistributions.PREFILL_TIME_E2E
    ]
    return [y for _, y in series._data_series]


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    argv = list(sys.argv[1:] if argv is None else argv)
    apply_fix = "--no-restart-fix" not in argv
    argv = [a for a in argv if a != "--no-restart-fix"]
    restarts = [0]
    if apply_fix:
        fix_request_restart()
    import numpy as np

    import sim.hardware  # noqa: F401  (registers our SKUs and model configs with Vidur)
    from vidur.config import SimulationConfig
    from vidur.entities import Batch, Request
    from vidur.events import BaseEvent
    from vidur.simulator import Simulator
    from vidur.utils.random import set_seeds

    # count restarts (the count is reported; the wrapper costs nothing measurable)
    counted = Request.restart

    def restart(self) -> None:
        restarts[0] += 1
        counted(self)

    Request.restart = restart

    sys.argv = [sys.argv[0], *argv]
    config = SimulationConfig.create_from_cli_args()
    set_seeds(config.seed)
    simulator = Simulator(config)  # loads the predictor, reads and queues the trace
    requests = len(simulator._event_queue)
    rss_before_loop = _rss_mib()
    loop_started = time.perf_counter()
    write_output = simulator._write_output
    simulator._write_output = lambda: None  # timed separately below
    simulator.run()
    loop_s = time.perf_counter() - loop_started
    write_started = time.perf_counter()
    write_output()
    write_s = time.perf_counter() - write_started
    prefill = _prefill_latencies(simulator)
    report = {
        "startup_s": loop_started - started,
        "loop_s": loop_s,
        "write_s": write_s,
        "requests": requests,
        "batches": Batch._id + 1,
        "events": BaseEvent._id,  # events created (every one is handled)
        "restarts": restarts[0],
        "simulated_s": simulator._time,
        "completed": None if prefill is None else len(prefill),
        "p99_prefill_s": None if not prefill else float(np.percentile(prefill, 99)),
        "rss_before_loop_mib": rss_before_loop,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "restart_fix": apply_fix,
    }
    print(MARKER + json.dumps(report), flush=True)
    return 0


def parse_report(stdout: str) -> dict:
    """The launcher's JSON report from its stdout."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER) :])
    raise ValueError("no LLUMSIM_VIDUR report in Vidur's output")


if __name__ == "__main__":
    raise SystemExit(main())
