"""The Llumnix artifact's benchmark client, replayed draw for draw (``workload.client: artifact``).

The artifact's ``benchmarks-repo/benchmark_throughput.py`` generated every synthetic run from
two generators seeded ``random.seed(0xCADE)`` and legacy ``np.random.seed(0xCADE)``. Which
request is long, when it arrives and whether it is high-priority all follow from the order in
which the client read them, so llumsim reads them in the same order:

NumPy (legacy ``RandomState``):
  1. prompt lengths: ``choice`` of Zipf ranks 1..2·mean−1 (α from ``client_alpha``), scaled
     to the exact sample mean, rounded up, truncated at the range (``synthetic.max_tokens``,
     which must be the client's 6,144: it had no valid α for any other range);
  2. output lengths: the same, continuing the stream;
  3. arrivals: request 0 at t = 0, then one gap per request (``client_arrivals``).

Python ``random`` (read only for priorities; nothing else of the client's output depends on
it, so without a high-priority share it is not read at all):
  1. prompt token ids: ``randint(10, vocab_size)`` once per prompt token (LLaMA: 32,000),
     skipped exactly but fast by ``skip_randints``;
  2. session ids: one ``random()`` per request (``new_session_ratio`` 1.0: always new);
  3. priorities: one ``random() < ratio`` per request, drawn before that request's gap.

The run's ``seed`` selects the stream: both generators are seeded ``0xCADE ^ seed``, so seed 0
is exactly the artifact's stream and seeds 0..2³²−1 give distinct ones.

Not reproduced, because nothing here can: the prompt text is decoded and re-tokenized by the
client and the server, so a served prompt was its nominal length give or take a few tokens.
Not needed: ``main()`` trims outputs so that prompt + output <= 32,768 tokens, which never
binds at the 6,144 range.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from sim.config import ConfigError, WorkloadConfig
from sim.workload.synthetic import LENGTH_CLASSES, scale_to_mean

CLIENT_SEED = 0xCADE  # random.seed / np.random.seed in the client's main()
LLAMA_VOCAB_SIZE = 32000  # tokenizer.vocab_size of the LLaMA-7B tokenizer the runs used
FIRST_TOKEN_ID = 10  # prompt ids are randint(10, vocab_size), both ends included
# (mean, range) -> Zipf α, the client's table; any other pair fell through to α = 1.0, for
# which scipy's zipf.pmf is NaN and the client's np.random.choice raised
CLIENT_ALPHAS: dict[tuple[int, int], float] = {
    (1024, 6144): 1.0005,
    (512, 6144): 1.15,
    (256, 6144): 1.5,
    (128, 6144): 2.0,
}


def client_alpha(mean: int, length_range: int) -> float:
    """The client's Zipf exponent for a (mean, range) it knew; anything else is a ConfigError,
    since the client's fall-back α = 1.0 is no Zipf exponent and it failed there."""
    try:
        return CLIENT_ALPHAS[(mean, length_range)]
    except KeyError:
        known = ", ".join(f"{m}/{r}" for m, r in CLIENT_ALPHAS)
        raise ConfigError(
            f"workload.synthetic.max_tokens: the artifact's client had a Zipf exponent only "
            f"for mean/range {known}; a {mean}-token mean with range {length_range} made it "
            f"fail (α = 1.0). Use max_tokens 6144 or client 'llumsim'"
        ) from None


def client_ranks(rs: np.random.RandomState, n: int, mean: int, length_range: int) -> np.ndarray:
    """``n`` Zipf ranks 1..2·mean−1 as ``gen_random_response_lens(zipf)`` draws them: SciPy's
    ``zipf.pmf`` normalised by its sum (not llumsim's truncated ``zipfian``, whose weights
    differ in the last bits and could move a draw across a CDF boundary)."""
    from scipy import stats  # ~1 s to import: only for Zipf lengths

    ranks = np.arange(1, 2 * mean)
    weights = stats.zipf.pmf(ranks, client_alpha(mean, length_range))
    weights /= np.sum(weights)
    return rs.choice(ranks, size=n, p=weights)


def client_lengths(rs: np.random.RandomState, n: int, mean: int, length_range: int) -> np.ndarray:
    """The client's lengths: its ranks, scaled to the exact sample mean, rounded up, truncated
    at the range — the rule llumsim's own generator shares."""
    return scale_to_mean(client_ranks(rs, n, mean, length_range), mean, length_range)


def skip_randints(py: random.Random, count: int, low: int, high: int) -> None:
    """Advance ``py`` exactly as ``count`` calls of ``py.randint(low, high)`` would, in
    milliseconds instead of seconds (L-L prompts need ~5 million calls).

    CPython's ``randint`` is ``low + _randbelow(width)``, width = high − low + 1 < 2³²: it
    reads one 32-bit Mersenne Twister word w per try and accepts w >> (32 − width.bit_length())
    if that is < width. So ``count`` calls read the word stream up to and including its
    ``count``-th accepted word, and nothing else. ``getrandbits(32·m)`` reads the next m words
    (least significant first); a block is never longer than the calls still to come (each
    reads at least one word), so no word beyond them is read. Checked against plain
    ``randint`` in tests/test_workload_artifact_client.py.
    """
    width = high - low + 1
    if not 1 <= width < 2**32:  # 2**32 values need getrandbits(33): two words per try
        raise ValueError(f"randint range must hold 1..2**32-1 values, got {width}")
    shift = 32 - width.bit_length()
    remaining = count
    while remaining > 0:
        block = min(remaining, 1 << 20)  # bounded memory; still never past the last call
        words = np.frombuffer(py.getrandbits(32 * block).to_bytes(4 * block, "little"), "<u4")
        remaining -= int(np.count_nonzero((words >> np.uint32(shift)) < width))


def client_arrivals(
    rs: np.random.RandomState, n: int, process: str, rate: float | None, cv: float
) -> np.ndarray:
    """Arrival times as ``async_request_gen`` yields them: request 0 at t = 0, then a gap
    from ``get_wait_time`` after each request (n − 1 matter; the client's n-th gap follows
    the last request and changes nothing). Gamma uses the client's float arithmetic for
    shape and scale, so the draws match to the bit."""
    if process == "burst" or n == 0:
        return np.zeros(n)
    mean_gap = 1.0 / rate
    if process == "uniform":
        gaps = np.full(n - 1, mean_gap)
    elif process == "gamma":
        variance = (cv * mean_gap) ** 2
        gaps = rs.gamma(mean_gap**2 / variance, variance / mean_gap, size=n - 1)
    elif process == "poisson":
        gaps = rs.exponential(mean_gap, size=n - 1)
    else:
        raise ValueError(f"the artifact's client has no arrival process {process!r}")
    return np.concatenate(([0.0], np.cumsum(gaps)))


def client_priorities(py: random.Random, prompt_tokens: np.ndarray, ratio: float) -> np.ndarray:
    """Which requests the client sent as high-priority (``priority_type`` 1), reading Python
    ``random`` as it did: prompt token ids, session ids, then one draw per request."""
    skip_randints(py, int(prompt_tokens.sum()), FIRST_TOKEN_ID, LLAMA_VOCAB_SIZE)
    n = len(prompt_tokens)
    for _ in range(n):  # gen_random_session_id, new_session_ratio 1.0: one random() each
        py.random()
    return np.array([py.random() < ratio for _ in range(n)], dtype=bool)


@dataclass(frozen=True)
class ClientStream:
    """The client's requests: lengths, arrival times, and a tier for each."""

    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    arrival: np.ndarray
    tier: np.ndarray
    description: str


def client_stream(cfg: WorkloadConfig, seed: int) -> ClientStream:
    """The synthetic stream the artifact's client sent for ``cfg``; seed 0 is its own.

    priority_type 1 (high) maps to tier 0 and 0 to tier K−1 (K = ``priority.tiers``);
    priorities are drawn when K > 1 and ``priority.high_share`` > 0, as the client drew them
    when ``priority_ratio`` > 0 (the schema requires the ``share`` sampler for K > 1).
    """
    if not 0 <= seed < 2**32:
        raise ConfigError(
            f"seed: client 'artifact' seeds 0xCADE ^ seed, needs 0..2**32-1, got {seed}"
        )
    length_range = cfg.synthetic.max_tokens
    n, client_seed = int(cfg.num_requests), CLIENT_SEED ^ seed
    rs = np.random.RandomState(client_seed)
    prompt, output = (
        client_lengths(rs, n, LENGTH_CLASSES[size][0], length_range)
        for size in (cfg.synthetic.input, cfg.synthetic.output)
    )
    arrival = client_arrivals(rs, n, cfg.arrival.process, cfg.arrival.rate, cfg.arrival.cv)
    priority = cfg.priority
    lowest = priority.tiers - 1
    if lowest > 0 and priority.high_share > 0:
        high = client_priorities(random.Random(client_seed), prompt, priority.high_share)
        tier = np.where(high, 0, lowest)
    else:
        tier = np.full(n, lowest)
    alphas = "/".join(
        f"{client_alpha(LENGTH_CLASSES[size][0], length_range):g}"
        for size in (cfg.synthetic.input, cfg.synthetic.output)
    )
    description = (
        f"artifact client: synthetic {cfg.synthetic.input}-{cfg.synthetic.output} Zipf lengths "
        f"(alpha {alphas}, range {length_range}), seeds 0x{client_seed:X}"
    )
    return ClientStream(prompt, output, arrival, tier, description)
