"""``workload.client: artifact`` against the artifact's own client (artifact_spec.md §8.2).

The vectors were computed by running the client's generators (legacy ``np.random.seed(0xCADE)``
and ``random.seed(0xCADE)``, LLaMA vocab 32,000); the reference loops below spell out the
client's per-request calls so that the fast paths here are checked against them draw for draw.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from sim.config import ConfigError, load_config
from sim.workload import build_workload, scale_to_mean
from sim.workload.artifact_client import (
    CLIENT_SEED,
    client_alpha,
    client_arrivals,
    client_lengths,
    client_ranks,
    skip_randints,
)

N = 10_000
MEAN = {"S": 128, "M": 256, "L": 512}


def artifact(
    pair: str,
    n: int = N,
    process: str = "poisson",
    rate: float | None = 2.0,
    cv: float = 1.0,
    priority: dict | None = None,
    seed: int = 0,
):
    """The workload of an artifact-client run, e.g. ``artifact("S-L")``, through the config."""
    prompt, output = pair.split("-")
    workload = {
        "client": "artifact",
        "source": "synthetic",
        "num_requests": n,
        "synthetic": {"input": prompt, "output": output},
        "arrival": {"process": process, "rate": rate, "cv": cv},
    }
    if priority is not None:
        workload["priority"] = priority
    cfg = load_config(base={"seed": seed, "workload": workload})
    return build_workload(cfg.workload, cfg.seed)


# §8.2: (factor, mean, min, median, p99, max, #capped, first five) per length class, for
# inputs drawn first; outputs: (factor, mean, min, max, #capped, first five), drawn second.
INPUTS = {
    "S": (37.5345, 128.01, 38, 38, 1464, 6144, 4, [76, 113, 38, 38, 38]),
    "M": (15.6991, 253.72, 16, 32, 4208, 6144, 36, [95, 173, 32, 16, 16]),
    "L": (6.0563, 512.66, 7, 55, 5166, 6144, 2, [267, 570, 55, 7, 7]),
}
OUTPUTS = {
    "S": (34.2173, 127.78, 35, 6144, 10, [35, 172, 240, 1403, 35]),
    "M": (14.5080, 254.69, 15, 6144, 32, [30, 363, 610, 4019, 15]),
    "L": (5.7429, 512.44, 6, 5864, 0, [41, 1264, 1930, 4951, 6]),
}


@pytest.mark.parametrize("pair", ["S-S", "M-M", "L-L", "S-L", "L-S"])
def test_length_vectors_of_the_spec(pair):
    prompt_class, output_class = pair.split("-")
    workload = artifact(pair)
    # the factors: the client's mean / sample mean of its raw ranks, inputs then outputs
    rs = np.random.RandomState(CLIENT_SEED)
    in_ranks = client_ranks(rs, N, MEAN[prompt_class], 6144)
    out_ranks = client_ranks(rs, N, MEAN[output_class], 6144)

    factor, mean, low, median, p99, high, capped, first = INPUTS[prompt_class]
    prompt = workload.prompt_tokens
    assert MEAN[prompt_class] / in_ranks.mean() == pytest.approx(factor, abs=5e-5)
    assert np.array_equal(prompt, scale_to_mean(in_ranks, MEAN[prompt_class], 6144))
    assert prompt.mean() == pytest.approx(mean, abs=0.005)
    assert (prompt.min(), np.median(prompt), np.percentile(prompt, 99), prompt.max()) == (
        low,
        median,
        p99,
        high,
    )
    assert np.count_nonzero(prompt == 6144) == capped
    assert prompt[:5].tolist() == first

    factor, mean, low, high, capped, first = OUTPUTS[output_class]
    output = workload.output_tokens
    assert MEAN[output_class] / out_ranks.mean() == pytest.approx(factor, abs=5e-5)
    assert output.mean() == pytest.approx(mean, abs=0.005)
    assert (output.min(), output.max()) == (low, high)
    assert np.count_nonzero(output == 6144) == capped
    assert output[:5].tolist() == first


@pytest.mark.parametrize(
    "pair, process, rate, cv, first, last",
    [
        ("S-S", "poisson", 32.0, 1.0, [0, 0.1002, 0.1189, 0.1738], 315.81),
        ("L-L", "poisson", 2.0, 1.0, [0, 1.6032, 1.9022, 2.7800], 5052.95),
        ("L-L", "gamma", 2.0, 2.0, [0, 4.2168, 5.2236, 5.2236], 5040.80),
    ],
)
def test_arrival_vectors_of_the_spec(pair, process, rate, cv, first, last):
    arrival = artifact(pair, process=process, rate=rate, cv=cv).arrival
    assert arrival[0] == 0.0
    assert arrival[:4] == pytest.approx(first, abs=5e-5)
    assert arrival[-1] == pytest.approx(last, abs=0.005)


PAPER_PRIORITIES = {"sampler": "share", "tiers": 2, "high_share": 0.1}


@pytest.mark.parametrize(
    "cv, first, last",
    [(2.0, [0, 0.3244, 0.4018, 0.4018], 387.75), (8.0, [0, 0.1746, 0.1746, 0.1746], 433.66)],
)
def test_priority_vectors_of_the_spec(cv, first, last):
    """Fig. 13's set-up: S-S, Gamma at 26 req/s, priority_ratio 0.1 -> tier 0 of 2."""
    workload = artifact("S-S", process="gamma", rate=26.0, cv=cv, priority=PAPER_PRIORITIES)
    assert workload.arrival[:4] == pytest.approx(first, abs=5e-5)
    assert workload.arrival[-1] == pytest.approx(last, abs=0.005)
    high = np.flatnonzero(workload.tier == 0)
    assert len(high) == 1022 and high[:5].tolist() == [14, 18, 24, 27, 33]
    assert set(workload.tier.tolist()) == {0, 1}


def reference_priorities(prompt_tokens: np.ndarray, ratio: float, seed: int) -> list[bool]:
    """The client's Python-``random`` calls, one by one: prompt token ids, session ids
    (new_session_ratio 1.0), then the priority draws."""
    py = random.Random(seed)
    for length in prompt_tokens.tolist():
        for _ in range(length):
            py.randint(10, 32000)
    for _ in prompt_tokens:
        py.random()
    return [py.random() < ratio for _ in prompt_tokens]


@pytest.mark.parametrize("seed, tiers", [(0, 2), (7, 3)])
def test_priorities_follow_the_clients_python_random_calls(seed, tiers):
    priority = {"sampler": "share", "tiers": tiers, "high_share": 0.3}
    workload = artifact("S-M", n=300, priority=priority, seed=seed)
    high = reference_priorities(workload.prompt_tokens, 0.3, CLIENT_SEED ^ seed)
    assert workload.tier.tolist() == [0 if h else tiers - 1 for h in high]
    assert 0 < sum(high) < 300


def test_without_a_share_or_with_one_tier_no_priorities_are_drawn():
    assert set(artifact("S-S", n=200).tier.tolist()) == {0}  # K = 1
    no_share = {"sampler": "share", "tiers": 3, "high_share": 0.0}
    assert set(artifact("S-S", n=200, priority=no_share).tier.tolist()) == {2}
    everyone = {"sampler": "share", "tiers": 2, "high_share": 1.0}
    assert set(artifact("S-S", n=200, priority=everyone).tier.tolist()) == {0}


@pytest.mark.parametrize(
    "low, high, counts",
    [
        (10, 32000, [0, 1, 2, 1000, 1_100_000]),  # the client's; > 2**20 words: several blocks
        (0, 32767, [5, 3000]),
        (5, 5, [0, 4]),
        (1, 2**32 - 1, [9]),
    ],
)
def test_skip_randints_leaves_the_generator_where_randint_does(low, high, counts):
    """The fast skip is exact: same state as plain randint calls, whatever the widths
    (31,991 rejects ~2% of words; 32,768 is a power of two and rejects none)."""
    for seed, count in enumerate(counts):
        plain, fast = random.Random(seed), random.Random(seed)
        for _ in range(count):
            plain.randint(low, high)
        skip_randints(fast, count, low, high)
        assert fast.getstate() == plain.getstate(), (count, seed)
        assert fast.random() == plain.random()


def test_skip_randints_refuses_a_range_that_needs_two_words_per_try():
    with pytest.raises(ValueError, match="1..2\\*\\*32-1 values, got 4294967296"):
        skip_randints(random.Random(0), 1, 0, 2**32 - 1)


def reference_gaps(rs: np.random.RandomState, n: int, process: str, qps: float, cv: float):
    """``async_request_gen``: a scalar ``get_wait_time`` after each yielded request."""
    mean = 1.0 / qps
    gaps = []
    for _ in range(n - 1):
        if process == "uniform":
            gaps.append(mean)
        elif process == "gamma":
            variance = (cv * mean) ** 2
            gaps.append(rs.gamma(mean**2 / variance, variance / mean))
        else:
            gaps.append(rs.exponential(mean))
    return gaps


@pytest.mark.parametrize(
    "process, rate, cv", [("poisson", 3.3, 1.0), ("gamma", 26.0, 6.0), ("uniform", 4.0, 1.0)]
)
def test_arrivals_are_the_clients_scalar_gaps_summed(process, rate, cv):
    n = 400
    workload = artifact("M-S", n=n, process=process, rate=rate, cv=cv)
    rs = np.random.RandomState(CLIENT_SEED)
    client_lengths(rs, n, 256, 6144)
    client_lengths(rs, n, 128, 6144)
    clock, expected = 0.0, [0.0]
    for gap in reference_gaps(rs, n, process, rate, cv):
        clock += gap
        expected.append(clock)
    assert workload.arrival.tolist() == expected


def test_burst_submits_everything_at_zero():
    workload = artifact("S-S", n=50, process="burst", rate=None)
    assert not workload.arrival.any()
    assert "all requests at t = 0" in workload.description


def test_seed_selects_the_stream_and_zero_is_the_clients():
    zero, one = artifact("L-L", n=500), artifact("L-L", n=500, seed=1)
    assert np.array_equal(
        zero.prompt_tokens, client_lengths(np.random.RandomState(0xCADE), 500, 512, 6144)
    )
    assert np.array_equal(
        one.prompt_tokens, client_lengths(np.random.RandomState(0xCADF), 500, 512, 6144)
    )
    assert not np.array_equal(zero.arrival, one.arrival)
    assert "0xCADE" in zero.description and "seed 1" in one.description


def test_alpha_is_the_clients_table_keyed_by_mean_and_range():
    assert [client_alpha(m, 6144) for m in (128, 256, 512, 1024)] == [2.0, 1.5, 1.15, 1.0005]
    assert "alpha 1.15/2, range 6144" in artifact("L-S", n=10).description


def test_a_range_the_client_had_no_alpha_for_is_a_config_error():
    """The client fell through to α = 1.0 there, where zipf.pmf is NaN and choice raised."""
    cfg = load_config(
        base={
            "workload": {
                "client": "artifact",
                "source": "synthetic",
                "num_requests": 100,
                "synthetic": {"input": "L", "output": "S", "max_tokens": 4096},
            }
        }
    )
    with pytest.raises(
        ConfigError, match=r"^workload\.synthetic\.max_tokens: .* 512-token mean with range 4096"
    ):
        build_workload(cfg.workload, 0)


def test_client_arrivals_rejects_an_unknown_process():
    with pytest.raises(ValueError, match="no arrival process 'trace'"):
        client_arrivals(np.random.RandomState(0), 3, "trace", 1.0, 1.0)


@pytest.mark.parametrize(
    "workload, message",
    [
        (
            {"source": "lengths"},
            r"^workload\.client: 'artifact' replays .* needs source 'synthetic'",
        ),
        (
            {"source": "synthetic", "shape": {"input": {"cap": 100}}},
            r"^workload\.shape: client 'artifact' .* cannot be shaped",
        ),
        (
            {"source": "synthetic", "priority": {"sampler": "enterprise", "tiers": 2}},
            r"^workload\.priority\.sampler: client 'artifact' .* got 'enterprise'",
        ),
    ],
)
def test_what_the_client_could_not_generate_is_a_config_error(workload, message):
    with pytest.raises(ConfigError, match=message):
        load_config(base={"workload": {"client": "artifact", "num_requests": 10, **workload}})


def test_a_seed_beyond_32_bits_is_a_config_error():
    artifact("S-S", n=5, seed=2**32 - 1)
    with pytest.raises(ConfigError, match=r"^seed: client 'artifact' seeds 0xCADE \^ seed"):
        artifact("S-S", n=5, seed=2**32)
