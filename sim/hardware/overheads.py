"""The serving engine's CPU work per iteration, from published measurements of vLLM.

Vidur 0.0.26's ExecutionTime counts the transformer blocks only. What vLLM does on the CPU
around every forward pass — schedule, build the input tensors and block tables, sample,
process the outputs (stop checks, detokenisation), hand the step to its Ray worker — holds
the GPU idle, because vLLM of that generation runs the step synchronously (no CUDA graphs,
no multi-step scheduling, no asynchronous output processing: vLLM issue #6854 and the
v0.6.0 performance post describe removing exactly these stalls). So an iteration costs

    GPU time of the blocks + BASE + PER_REQUEST × requests in the batch
        (+ DETOKENIZE_PER_OUTPUT_TOKEN × output tokens the batch's requests hold, vLLM 0.1.x),

PER_REQUEST being Vidur's measured phases plus, for vLLM 0.1.x, its per-sequence sampler loop;
the last term is vLLM 0.1.x's detokenizer, which converts every output whole at every step
(added by the batch former, the part that knows the outputs), measured on the artifact's
tokenizer stack (``detokenizer``).
Which measured phases a device uses is its SKU entry's ``cpu_overheads`` (``skus``): a CSV file
of per-batch phase times under ``data/``; ``engine_overheads`` draws the line through them.

Evidence. Vidur's own profile of these CPU phases in vLLM, on the GA102 die of the A10
(NVIDIA A40), LLaMA-2-7B (LLaMA-7B's architecture), tensor parallelism 1, batch sizes 8–48:
https://github.com/microsoft/vidur/blob/main/data/profiling/a40/cpu_overheads.csv (rows 0–5;
read at commit 0633efaee2826c47b16741e57df0476b58136714). ``data/cpu_overheads_vidur_a40_llama2_7b_tp1.csv``
copies those rows' means (ms; ``VIDUR_A40_LLAMA2_7B_TP1_MS`` below); BASE and PER_REQUEST are
the least-squares line through the per-batch totals (residuals ≤ 0.18 ms).

Choices, and why:
* Means, not medians. A run's simulated time is the sum of its iterations, whose expectation
  is the mean; the medians (Vidur's choice) drop the heavy tail of output processing and
  give 1.25 ms + 0.103 ms/request.
* The Ray hand-off is the file's only Ray statistic, its median (``RAY_COMM_TIME_MEDIAN``).
* Other published numbers agree in size but fit a different vLLM or host, so they are
  cross-checks, not inputs: the scheduler alone takes ~2 ms per iteration on an A10 host in
  vLLM 0.4 (https://github.com/vllm-project/vllm/pull/4280); 5–13 ms of GPU idle per decode
  step in vLLM 0.5.3 on H100 (https://github.com/vllm-project/vllm/issues/6854); 10.6 /
  24.6 / 42.2 ms of scheduling per iteration with 128 / 512 / 1,024 requests in vLLM 0.5.4 on
  an A6000 host, growing with the number of sequences, not tokens
  (https://mlsys.wuklab.io/posts/scheduling_overhead, figure data in
  github.com/WukLab/wuklab_sysml static/images/scheduling_overhead/vLLM_A6000_Requests.svg).
* Llumnix's serving engine is an older vLLM (0.1.2) whose sampler loops over requests one at
  a time (https://github.com/vllm-project/vllm/issues/249); Vidur's profiled engine samples
  the batch at once. That loop's cost per sequence is derived below from the measured gain of
  vectorising it (``SAMPLER_LOOP_PER_REQUEST_MS``) and added for the serving engine only.
* The 30B layout (tensor parallelism 4) uses the same numbers; Vidur's TP4 rows add 3–9 ms of
  Ray fan-out per step, which on our 30B rows cannot be told apart from the fitted
  all-reduce latency, so it is left to the fit.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache

import sim.hardware.catalog as catalog
import sim.hardware.detokenizer as detokenizer

# Vidur's A40 profile (the reference the A10 entry names): the config's default overheads and
# the profile fit's fixed part are its line
A40_REFERENCE = "cpu_overheads_vidur_a40_llama2_7b_tp1.csv"
# a reference's columns besides batch_size (and its source), ms
PHASES = (
    "schedule_ms",
    "sampler_e2e_ms",
    "prepare_inputs_e2e_ms",
    "process_model_outputs_ms",
    "ray_comm_time_ms",
)
SIGNIFICANT_DIGITS = 5


def _line(points: dict[int, float]) -> tuple[float, float]:
    """Least-squares (intercept, slope) through (x, y) points."""
    n = len(points)
    mean_x = sum(points) / n
    mean_y = sum(points.values()) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points.items()) / sum(
        (x - mean_x) ** 2 for x in points
    )
    return mean_y - slope * mean_x, slope


def _round(value: float) -> float:
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


# The sampler of vLLM 0.1.x loops over the sequences in Python (vLLM issue #249; the artifact's
# ``vllm/model_executor/layers/sampler.py`` ``_sample``: per sequence a ``torch.multinomial`` and
# ``.tolist()``, a ``logprob[...].item()`` — two GPU-to-host syncs — and a SequenceOutputs). What
# that loop costs per sequence and step is what vectorising it saved (vLLM PR #820, 2023-08-22,
# A100-80GB, benchmark_throughput on ShareGPT, 1,000 prompts: 3.70 -> 4.77 requests/s at
# 1,771.58 tokens/s of prompt and output), per output token: the vLLM paper's ShareGPT has mean
# input 161.31 and output 337.99 tokens (Kwon et al., SOSP'23, Figure 11a), so 67.7% of a
# request's tokens are generated, one per sequence-step. The host is an A100 server's CPU, not
# the artifact's; no measurement of this loop on an A10 host exists.
PR_820_REQUESTS_PER_S = (3.70, 4.77)
PR_820_TOKENS_PER_S = 1771.58
SHAREGPT_MEAN_INPUT_OUTPUT = (161.31, 337.99)


def _sampler_loop_ms() -> float:
    before, after = PR_820_REQUESTS_PER_S
    saved_s_per_request = 1 / before - 1 / after
    tokens_per_request = PR_820_TOKENS_PER_S / before
    mean_in, mean_out = SHAREGPT_MEAN_INPUT_OUTPUT
    output_tokens = tokens_per_request * mean_out / (mean_in + mean_out)
    return saved_s_per_request / output_tokens * 1e3


SAMPLER_LOOP_PER_REQUEST_MS = _round(_sampler_loop_ms())

# vLLM 0.1.x turns every running request's whole output back into text at every step: the
# artifact's ``vllm/transformers_utils/tokenizer.py`` ``detokenize_incrementally`` (osdi24ae at
# 92f6f9d) builds ``prev_output_tokens + [new_token]`` and calls ``convert_tokens_to_string`` on
# all of it, for every sequence ``LLMEngine._decode_sequences`` walks (``vllm/engine/llm_engine.py``
# lines 475-487). So a step costs this much CPU per output token its requests hold. Measured:
# ``benchmarks/detokenizer.py`` runs that code as written with transformers 4.31.0 (the
# artifact's requirements.txt) and LLaMA's tokenizer on its fast path (the artifact's), and
# ``detokenizer`` draws the cost per held token through the rows (the per-sequence part of a
# step is in the measured per-request line already); the CPU and versions are in the rows'
# file, and the rows stand for the artifact's host unscaled (its CPU is not published).
# Replaced: 0.45 µs a token, borrowed from vLLM PR #121 (OPT-13B's byte-level BPE tokenizer,
# batch 8 of 128 tokens, another host).
DETOKENIZE_PER_OUTPUT_TOKEN_MS = _round(detokenizer.PER_HELD_TOKEN_MS)

@lru_cache(maxsize=None)
def reference_rows(reference: str) -> dict[int, tuple[float, ...]]:
    """A reference's rows: batch size -> the phase times (ms, ``PHASES``)."""
    path = catalog.DATA_DIR / reference
    if not path.is_file():
        raise ValueError(f"unknown CPU-overhead reference {reference!r}: no file {path}")
    with open(path, newline="") as handle:
        return {
            int(row["batch_size"]): tuple(float(row[phase]) for phase in PHASES)
            for row in csv.DictReader(handle)
        }


def phase_line(reference: str, phase: str) -> tuple[float, float]:
    """The line through one phase's per-batch times of a reference, ms: (per iteration, per
    request). The sampler phase (``sampler_e2e_ms``: the LM head, softmax and sampling) is
    the part of the engine's work an engine without vLLM's host overheads still does."""
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}; phases: {', '.join(PHASES)}")
    index = PHASES.index(phase)
    return _line({batch: phases[index] for batch, phases in reference_rows(reference).items()})


@dataclass(frozen=True)
class EngineOverheads:
    """The line through one reference's per-batch totals, in ms."""

    base_ms: float  # per iteration
    # per request, engines with a vectorised sampler (vLLM >= 0.2.0, Vidur's profiled engine)
    vectorised_per_request_ms: float

    @property
    def per_request_ms(self) -> float:
        """Per request in the artifact's serving engine, vLLM 0.1.2 (``vllm/__init__.py`` on
        ``osdi24ae``), whose sampler loops; its Figure 10 bench ran vLLM 0.2.0
        (``artifact/62_migration_efficiency/vllm_020``), whose sampler is vectorised (PR #1048).
        Each measurement is modelled on its own engine."""
        return _round(self.vectorised_per_request_ms + SAMPLER_LOOP_PER_REQUEST_MS)


def engine_overheads(reference: str) -> EngineOverheads:
    """The overhead line of a device's ``cpu_overheads`` reference."""
    base, per_request = _line({batch: sum(phases) for batch, phases in reference_rows(reference).items()})
    return EngineOverheads(_round(base), _round(per_request))


# vLLM V1's step on one GPU (vLLM 0.10.1.1: ``vllm/v1/engine/core.py`` 276-295, the worker in
# the engine-core process, ``vllm/executor/uniproc_executor.py`` 51-58) keeps on its critical
# path the scheduler, the input preparation (``gpu_model_runner.py`` 1510-1522) and the sampler
# with its GPU-to-host copy (1716-1733); detokenisation and stop strings run in the frontend
# process (``vllm/v1/engine/output_processor.py`` 406-411) and there is no Ray hand-off. So its
# host line is the line through those three of a reference's measured phases. They were
# measured on an older vLLM (Vidur's profile), the closest measurement of these phases there
# is; V1's ``update_from_output`` loop, which Vidur counts inside output processing together
# with detokenisation, is left out: the line is a lower bound of V1's host work.
V1_PHASES = ("schedule_ms", "prepare_inputs_e2e_ms", "sampler_e2e_ms")
# With async scheduling (``--async-scheduling``, PR #19970, vLLM 0.10.0; on by default from
# 0.14.0, PR #27614) the engine core keeps two steps in flight: it launches step n, then
# schedules step n+1 and builds its inputs while the GPU runs step n (``AsyncScheduler`` counts
# the not yet returned token as a placeholder; ``EngineCore.step_with_batch_queue``). Those two
# phases then cost a step only where they outlast its GPU work; the sampler, which waits on the
# step's logits, stays on the critical path.
V1_OVERLAPPED_PHASES = ("schedule_ms", "prepare_inputs_e2e_ms")


def _phases_line(reference: str, phases: tuple[str, ...]) -> EngineOverheads:
    kept = [PHASES.index(phase) for phase in phases]
    totals = {batch: sum(times[i] for i in kept) for batch, times in reference_rows(reference).items()}
    base, per_request = _line(totals)
    return EngineOverheads(_round(base), _round(per_request))


def v1_overheads(reference: str) -> EngineOverheads:
    """vLLM V1's host line (``V1_PHASES``) through a device's ``cpu_overheads`` reference."""
    return _phases_line(reference, V1_PHASES)


def v1_overlapped(reference: str) -> EngineOverheads:
    """The part of V1's host line that async scheduling runs beside the GPU (``V1_OVERLAPPED_PHASES``)."""
    return _phases_line(reference, V1_OVERLAPPED_PHASES)


@dataclass(frozen=True)
class HostLine:
    """A serving engine's host work per step, ms: per step, per batched request, per output
    token the batched requests hold."""

    base_ms: float
    per_request_ms: float
    per_output_token_ms: float


def artifact_host_line(reference: str) -> HostLine:
    """The Llumnix artifact's vLLM 0.1.2: every measured phase, its sampler loop, its detokenizer."""
    line = engine_overheads(reference)
    return HostLine(line.base_ms, line.per_request_ms, DETOKENIZE_PER_OUTPUT_TOKEN_MS)


def v1_host_line(reference: str) -> HostLine:
    """vLLM V1: the phases on its step's critical path (``V1_PHASES``), no detokenizer."""
    line = v1_overheads(reference)
    return HostLine(line.base_ms, line.vectorised_per_request_ms, 0.0)


# each serving engine's host line, from a device's ``cpu_overheads`` reference (the pool's
# ``engine``; its batch former is ``sim.instance.parts.ENGINES``')
HOST_LINES = {"vllm-0.1.2": artifact_host_line, "vllm-v1": v1_host_line}


VIDUR_A40_LLAMA2_7B_TP1_MS = reference_rows(A40_REFERENCE)
_A40 = engine_overheads(A40_REFERENCE)
BASE_MS = _A40.base_ms  # ms per iteration
VECTORISED_SAMPLER_PER_REQUEST_MS = _A40.vectorised_per_request_ms
PER_REQUEST_MS = _A40.per_request_ms
