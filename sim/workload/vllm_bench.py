"""The request sets and clients of vLLM's serving benchmark (``benchmark_serving.py``, later
``vllm bench serve``), so that a published run of it can be played again in the simulator.

Datasets: ``random`` with fixed lengths (``--random-range-ratio 0``, ``--ignore-eos``: every
request decodes exactly its output length), and ``sharegpt`` as the benchmark samples it —
the entries of ``traces/sharegpt/sharegpt_v3_vllm_bench_llama3.csv`` (counted with Llama 3's
tokenizer, BOS included, as ``tokenizer(text).input_ids`` counts them) shuffled by Python's
``random`` with the benchmark's seed, then those with prompt and answer of at least 4 tokens,
prompt at most 1,024 and both at most 2,048 kept in that order (``is_valid_sequence``).
Clients: a Poisson stream at a rate (``np.random.gamma(1, 1/rate)`` gaps, the first request at
once), all requests at once (rate ``inf``, or an offline batch), or ``--max-concurrency c``:
at most c requests in flight, the next sent when one ends (``Sharing.chained``).
"""

from __future__ import annotations

import random
from functools import lru_cache

import numpy as np
import pandas as pd

from sim.workload.build import REPO_ROOT, Workload
from sim.workload.sessions import OPEN, Sharing

SHAREGPT_FILE = REPO_ROOT / "traces" / "sharegpt" / "sharegpt_v3_vllm_bench_llama3.csv"
BENCHMARK_SEED = 0  # benchmark_serving's --seed default
MIN_TOKENS, MAX_PROMPT, MAX_TOTAL = 4, 1024, 2048  # is_valid_sequence's bounds


@lru_cache(maxsize=1)
def _sharegpt_entries() -> tuple[np.ndarray, np.ndarray]:
    table = pd.read_csv(SHAREGPT_FILE)
    return table["prompt_tokens"].to_numpy(np.int64), table["output_tokens"].to_numpy(np.int64)


def sharegpt_lengths(count: int, seed: int = BENCHMARK_SEED) -> tuple[np.ndarray, np.ndarray]:
    """The prompt and output lengths of the benchmark's first ``count`` ShareGPT requests."""
    prompt, output = _sharegpt_entries()
    order = list(range(len(prompt)))
    random.Random(seed).shuffle(order)  # the benchmark's random.seed(seed); random.shuffle(data)
    kept = [
        i for i in order
        if prompt[i] >= MIN_TOKENS and output[i] >= MIN_TOKENS and prompt[i] <= MAX_PROMPT
        and prompt[i] + output[i] <= MAX_TOTAL
    ]
    if len(kept) < count:
        raise ValueError(f"{SHAREGPT_FILE.name} has {len(kept)} requests the benchmark keeps; {count} asked for")
    chosen = np.array(kept[:count])
    return prompt[chosen], output[chosen]


def poisson_arrivals(count: int, rate: float, seed: int = BENCHMARK_SEED) -> np.ndarray:
    """Send times of ``count`` requests at ``rate`` per second: the first at 0, then
    exponential gaps (``get_request``: a gap is drawn after each request is sent)."""
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, size=count - 1)
    return np.concatenate(([0.0], np.cumsum(gaps)))


def benchmark_workload(
    prompt: np.ndarray, output: np.ndarray, client: str, load: float, seed: int = BENCHMARK_SEED
) -> Workload:
    """The requests under the benchmark's client: ``rate`` (Poisson at ``load`` per second),
    ``concurrency`` (at most ``load`` in flight) or ``offline`` (all at t = 0)."""
    count = len(prompt)
    sharing = None
    if client == "rate":
        arrival = poisson_arrivals(count, load, seed)
    elif client in ("concurrency", "offline"):
        arrival = np.zeros(count)
        if client == "concurrency":
            sharing = Sharing.chained(count, int(load))
    else:
        raise ValueError(f"unknown benchmark client {client!r} (known: rate, concurrency, offline)")
    return Workload(
        arrival=arrival,
        prompt_tokens=np.asarray(prompt, dtype=np.int64),
        output_tokens=np.asarray(output, dtype=np.int64),
        tier=np.zeros(count, dtype=np.int64),
        description=f"vLLM benchmark: {count} requests, {client} {load:g}",
        sharing=sharing,
    )
