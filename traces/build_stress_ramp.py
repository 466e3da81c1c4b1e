"""Build traces/stress/stress_ramp.csv — GENERATED: real lengths, designed arrivals.

A stress workload whose load rises and falls, so an auto-scaled cluster must scale out and
back in, with bursts on top. Lengths are rows of the real Azure conversation trace
(``azure/azure_conv_2023.csv``: long-tailed, prompt P95 ~4,100 tokens), drawn without
replacement; arrivals are a renewal process with Gamma gaps of coefficient of variation
``CV`` whose rate is piecewise constant: each cycle is 120 s quiet at 1 req/s, 300 s at the
cycle's peak, 300 s quiet at 1 req/s, with peaks 5, 3, 6, 4 req/s (on LLaMA-7B/A10 the
Azure lengths saturate ~0.75 req/s per instance, so a peak wants 4..8 instances and a
quiet spell 1..2). The first cycle alone (~1,900 requests) already scales out and in.
Written as Vidur's length table with the optional ``arrived_at`` seconds column; replay with
``source: timestamped`` and ``arrival.process: trace`` (``rate`` time-scales it). The seed
is fixed, so the output is deterministic.

Run: ``python traces/build_stress_ramp.py`` (numpy and pandas only).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "azure" / "azure_conv_2023.csv"
OUT = HERE / "stress" / "stress_ramp.csv"
QUIET_RATE = 1.0  # req/s
PEAKS = (5.0, 3.0, 6.0, 4.0)  # req/s, one per cycle
SEGMENTS = ((120.0, None), (300.0, "peak"), (300.0, None))  # (seconds, rate: quiet or the peak)
CV = 3.0
SEED = 0


def arrivals(rng: np.random.Generator) -> np.ndarray:
    """Gamma-gap renewal arrivals whose rate follows the cycles (a gap is drawn at the
    rate of the segment it starts in)."""
    shape = 1.0 / CV**2
    boundaries, rates, clock = [], [], 0.0
    for peak in PEAKS:
        for seconds, kind in SEGMENTS:
            clock += seconds
            boundaries.append(clock)
            rates.append(peak if kind == "peak" else QUIET_RATE)
    times, now, segment = [], 0.0, 0
    while True:
        now += rng.gamma(shape, 1.0 / (rates[segment] * shape))
        while segment < len(boundaries) and now >= boundaries[segment]:
            segment += 1
        if segment == len(boundaries):
            return np.array(times)
        times.append(now)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    from sim.workload import read_azure

    rng = np.random.default_rng(SEED)
    times = arrivals(rng)
    source = read_azure(SOURCE)
    rows = source.iloc[rng.choice(len(source), size=len(times), replace=False)]
    table = pd.DataFrame(
        {
            "num_prefill_tokens": rows["prompt_tokens"].to_numpy(),
            "num_decode_tokens": rows["output_tokens"].to_numpy(),
            "arrived_at": np.round(times, 3),
        }
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(f"{len(table):,} rows over {times[-1]:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
