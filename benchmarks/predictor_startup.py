"""Cold and warm start of the replica model, each in a fresh process (not a timed test).

    python benchmarks/predictor_startup.py [--repeats N]

Cold: empty cache, so Vidur's predictor is fitted on the shipped profiles and its tables are
saved. Warm: cache present. Both are timed from process launch until a ReplicaModel is
ready and has answered one batch_time. Bars (issue #2): cold <= 60 s, warm <= 2 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

SNIPPET = """
import sys
from sim.hardware import load_replica_model
model = load_replica_model(sys.argv[1], cache_dir=sys.argv[2])
model.batch_time([(512, 512)], 8, 8 * 700)
"""


def start_seconds(model: str, cache_dir: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", SNIPPET, model, cache_dir],
        check=True,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="warm starts per model")
    args = parser.parse_args()
    from sim.hardware import known_models
    from sim.hardware.catalog import DEFAULT_DEVICE

    print(f"$ {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"{os.cpu_count()} CPUs; fresh process per start; seconds from launch to first batch_time")
    print(f"{'model':<10} {'cold':>7} {'warm median':>12} {'warm max':>9}")
    with tempfile.TemporaryDirectory(prefix="llumsim-startup-") as cache_dir:
        for model in known_models(DEFAULT_DEVICE):
            cold = start_seconds(model, cache_dir)
            warm = [start_seconds(model, cache_dir) for _ in range(args.repeats)]
            print(f"{model:<10} {cold:>7.1f} {statistics.median(warm):>12.2f} {max(warm):>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
