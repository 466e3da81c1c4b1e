"""The serving engine's CPU work per iteration, from published measurements of vLLM.

Vidur 0.0.26's ExecutionTime counts the transformer blocks only. What vLLM does on the CPU
around every forward pass — schedule, build the input tensors and block tables, sample,
process the outputs (stop checks, detokenisation), hand the step to its Ray worker — holds
the GPU idle, because vLLM of that generation runs the step synchronously (no CUDA graphs,
no multi-step scheduling, no asynchronous output processing: vLLM issue #6854 and the
v0.6.0 performance post describe removing exactly these stalls). So an iteration costs

    GPU time of the blocks + BASE + PER_REQUEST × requests in the batch,

PER_REQUEST being Vidur's measured phases plus, for vLLM 0.1.x, its per-sequence sampler loop.

Evidence. Vidur's own profile of these CPU phases in vLLM, on the GA102 die of the A10
(NVIDIA A40), LLaMA-2-7B (LLaMA-7B's architecture), tensor parallelism 1, batch sizes 8–48:
https://github.com/microsoft/vidur/blob/main/data/profiling/a40/cpu_overheads.csv (rows 0–5;
read at commit 0633efaee2826c47b16741e57df0476b58136714). ``VIDUR_A40_LLAMA2_7B_TP1_MS`` below
copies those rows' means (ms); BASE and PER_REQUEST are the least-squares line through the
per-batch totals (residuals ≤ 0.18 ms).

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

# batch size: (schedule, sampler e2e, prepare inputs e2e, process model outputs, Ray comm), ms
VIDUR_A40_LLAMA2_7B_TP1_MS: dict[int, tuple[float, float, float, float, float]] = {
    8: (0.1534, 1.0538, 0.3129, 1.4260, 0.1388),
    16: (0.2607, 1.1507, 0.4559, 2.6462, 0.1854),
    24: (0.3685, 1.1111, 0.5899, 3.8110, 0.2329),
    32: (0.4663, 1.2361, 0.7240, 4.8572, 0.2737),
    40: (0.5439, 1.3266, 0.8423, 5.8510, 0.3347),
    48: (0.6434, 1.4204, 0.9645, 7.2794, 0.3849),
}
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


_BASE_MS, _MEASURED_PER_REQUEST_MS = _line(
    {batch: sum(phases) for batch, phases in VIDUR_A40_LLAMA2_7B_TP1_MS.items()}
)
BASE_MS = _round(_BASE_MS)  # ms per iteration
# ms per request, engines with a vectorised sampler (vLLM >= 0.2.0, Vidur's profiled engine)
VECTORISED_SAMPLER_PER_REQUEST_MS = _round(_MEASURED_PER_REQUEST_MS)

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
# The artifact's serving engine is vLLM 0.1.2 (``vllm/__init__.py`` on ``osdi24ae``), whose
# sampler loops; its Figure 10 bench ran vLLM 0.2.0 (``artifact/62_migration_efficiency/vllm_020``),
# whose sampler is vectorised (PR #1048). Each measurement is modelled on its own engine.
PER_REQUEST_MS = _round(VECTORISED_SAMPLER_PER_REQUEST_MS + SAMPLER_LOOP_PER_REQUEST_MS)
