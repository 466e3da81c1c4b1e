"""The Vidur baseline launcher: its restart-bug workaround, and Vidur replaying our workload.

Vidur 0.0.26's ``Request.restart()`` leaves the per-stage token counters as they were, so the
recompute prefill after a preemption trips an assertion. ``benchmarks/vidur_baseline.py``
fixes that from outside; these tests show the bug, the fix, and a whole Vidur run with
preemptions finishing every request.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import vidur_baseline  # noqa: E402
from vidur.entities.request import Request  # noqa: E402

from sim.workload import Workload  # noqa: E402

PROMPT, OUTPUT = 64, 10


@pytest.fixture
def fixed():
    applied = vidur_baseline.fix_request_restart()
    yield
    if applied:
        vidur_baseline.unfix_request_restart()


def prefill(request: Request, now: float) -> None:
    """One prefill iteration of the whole remaining prompt, as Vidur's vLLM scheduler runs it."""
    tokens = request.num_prefill_tokens
    request.on_batch_schedule(now)
    request.on_batch_stage_schedule(now)
    request.on_batch_stage_end(now + 0.1, 0, 0.1, 0.1, tokens)
    request.on_batch_end(now + 0.1, tokens)


def decode(request: Request, now: float) -> None:
    request.on_batch_schedule(now)
    request.on_batch_stage_schedule(now)
    request.on_batch_stage_end(now + 0.01, 0, 0.01, 0.01, 1)
    request.on_batch_end(now + 0.01, 1)


def preempt_after_decodes(decodes: int) -> Request:
    request = Request(0.0, PROMPT, OUTPUT)
    prefill(request, 0.0)
    for step in range(decodes):
        decode(request, 1.0 + step)
    request.restart()
    return request


def test_unpatched_restart_asserts_on_the_recompute_prefill():
    assert not getattr(Request.restart, "_llumsim_fixed", False)
    request = preempt_after_decodes(3)
    with pytest.raises(AssertionError):
        prefill(request, 10.0)


def test_fixed_restart_recomputes_and_completes(fixed):
    request = preempt_after_decodes(3)
    # the recompute prefill covers the prompt and the 4 tokens generated so far
    assert request.num_prefill_tokens == PROMPT + 4
    assert request.num_decode_tokens == OUTPUT - 4
    prefill(request, 10.0)
    assert request.is_prefill_complete and not request.completed
    step = 0
    while not request.completed:
        decode(request, 20.0 + step)
        step += 1
    assert step == OUTPUT - 4 - 1  # the prefill produced one token
    assert request.num_processed_tokens == request.total_tokens == PROMPT + OUTPUT
    assert request.num_restarts == 1
    assert request.prefill_completed_at == pytest.approx(0.1)  # the first prefill counts


def test_fixed_restart_survives_repeated_restarts(fixed):
    request = preempt_after_decodes(2)
    prefill(request, 10.0)
    decode(request, 11.0)
    request.restart()
    prefill(request, 12.0)
    while not request.completed:
        decode(request, 13.0)
    assert request.num_restarts == 2
    assert request.num_processed_tokens == PROMPT + OUTPUT


def test_fix_is_idempotent_and_reversible():
    original = Request.restart
    try:
        assert vidur_baseline.fix_request_restart() is True
        assert vidur_baseline.fix_request_restart() is False
        assert Request.restart._llumsim_original is original
    finally:
        vidur_baseline.unfix_request_restart()
    assert Request.restart is original


def test_trace_round_trips_exactly(tmp_path):
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 2000
    arrival = np.concatenate([[0.0, 0.1 + 0.2, 1 / 3, 1e-7 + 5], 5 + np.cumsum(rng.exponential(0.05, n))])
    prompts = np.concatenate([[5, 17, 1, 4000], rng.integers(1, 3000, n)])
    outputs = np.concatenate([[1, 9, 300, 2], rng.integers(1, 1000, n)])
    workload = Workload(
        arrival=arrival,
        prompt_tokens=prompts,
        output_tokens=outputs,
        tier=np.zeros(n + 4, dtype=np.int64),
        description="test",
    )
    path = tmp_path / "trace.csv"
    assert vidur_baseline.write_trace(workload, path) == int((prompts + outputs).max())
    frame = pd.read_csv(path)  # as Vidur reads it
    assert frame["Time"].tolist() == workload.arrival.tolist()
    assert frame["PromptTokenCount"].tolist() == workload.prompt_tokens.tolist()
    assert frame["CompletionTokenCount"].tolist() == workload.output_tokens.tolist()
    assert set(frame["Date"]) == {vidur_baseline.TRACE_DATE}


@pytest.fixture(scope="module")
def vidur_setup(tmp_path_factory):
    from sim.hardware.vidur_offline import prepare_vidur_offline
    from tests.hardware_support import fitted_cache

    return prepare_vidur_offline(tmp_path_factory.mktemp("vidur"), cache_dir=fitted_cache()[0])


def run_vidur(setup, tmp_path, extra: list[str]) -> subprocess.CompletedProcess:
    """Four requests that cannot all fit in 20 blocks on one replica: Vidur must preempt."""
    workload = Workload(
        arrival=np.array([0.0, 0.01, 0.02, 0.03]),
        prompt_tokens=np.full(4, 64),
        output_tokens=np.full(4, 200),
        tier=np.zeros(4, dtype=np.int64),
        description="test",
    )
    trace = tmp_path / "trace.csv"
    max_tokens = vidur_baseline.write_trace(workload, trace)
    args = list(setup.args)
    args[args.index("--cache_config_num_blocks") + 1] = "20"
    flags = vidur_baseline.workload_flags(
        trace,
        max_tokens,
        replicas=1,
        max_batched_tokens=12800,
        max_batch_size=256,
        watermark_fraction=0.01,
    )
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "vidur_baseline.py"), *args, *flags, *extra],
        capture_output=True,
        text=True,
        env={**os.environ, **setup.env},
        cwd=ROOT,
    )


def test_vidur_run_with_preemptions_finishes_with_the_fix(vidur_setup, tmp_path):
    result = run_vidur(vidur_setup, tmp_path, [])
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    report = vidur_baseline.parse_report(result.stdout)
    assert report["restart_fix"] is True
    assert report["restarts"] > 0  # the scenario does preempt
    assert report["requests"] == report["completed"] == 4
    assert report["batches"] > 4 * 200 / 4


def test_vidur_run_with_preemptions_fails_without_the_fix(vidur_setup, tmp_path):
    result = run_vidur(vidur_setup, tmp_path, ["--no-restart-fix"])
    assert result.returncode != 0
    assert "AssertionError" in result.stderr
    assert "on_batch_stage_end" in result.stderr
