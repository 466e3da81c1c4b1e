"""Build traces/burstgpt_shaped/burstgpt_shaped_gpt4_conv.csv — FITTED, NOT REAL BurstGPT DATA.

BurstGPT's own CSV cannot be fetched here, so this writes a workload in BurstGPT's CSV format
(``Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type``) whose lengths match
the statistics the Llumnix paper (Table 1) publishes for BurstGPT's GPT-4 conversation log:
request tokens mean 830 / P95 2,345, response tokens mean 271 / P95 669.

Each length is lognormal with (μ, σ) solved exactly from the published mean and P95
(mean = exp(μ + σ²/2), P95 = exp(μ + z·σ), z = Φ⁻¹(0.95); the smaller root σ), rounded to
the nearest whole token (at least 1). Request and response lengths are drawn independently:
nothing about their correlation is published. Timestamps are a Poisson process at 8 req/s,
the middle of the paper's BurstGPT rates (7.5–8.5 req/s, Poisson) — an experiment set-up,
not BurstGPT's recorded burstiness; replay with ``arrival.process: gamma`` for bursts.
10,000 rows, the paper's request count; seed fixed below, so the output is deterministic.

Run: ``python traces/build_burstgpt_shaped.py`` (numpy and pandas only).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd

PUBLISHED = {"Request tokens": (830.0, 2345.0), "Response tokens": (271.0, 669.0)}  # mean, P95
ROWS = 10_000
RATE = 8.0  # req/s
SEED = 0
OUT = Path(__file__).resolve().parent / "burstgpt_shaped" / "burstgpt_shaped_gpt4_conv.csv"


def lognormal_from_mean_p95(mean: float, p95: float) -> tuple[float, float]:
    """(μ, σ) of the lognormal with this mean and 95th percentile."""
    z = NormalDist().inv_cdf(0.95)
    sigma = z - math.sqrt(z * z - 2 * math.log(p95 / mean))
    return math.log(mean) - sigma * sigma / 2, sigma


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    columns = {"Timestamp": np.round(np.cumsum(rng.exponential(1 / RATE, ROWS)), 3)}
    for column, (mean, p95) in PUBLISHED.items():
        mu, sigma = lognormal_from_mean_p95(mean, p95)
        columns[column] = np.maximum(1, np.rint(rng.lognormal(mu, sigma, ROWS))).astype(np.int64)
        print(f"{column}: lognormal mu={mu:.4f} sigma={sigma:.4f}")
    table = pd.DataFrame(columns)
    table.insert(1, "Model", "GPT-4")
    table["Total tokens"] = table["Request tokens"] + table["Response tokens"]
    table["Log Type"] = "Conversation log"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(f"{len(table):,} rows -> {args.out}")


if __name__ == "__main__":
    main()
