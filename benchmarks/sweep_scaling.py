"""Does a sweep keep both cores busy? The smoke grid with --jobs 1 and --jobs 2, and
optionally the full k_sweep grid's wall time.

Each sweep is a fresh ``python -m sim sweep`` process into a fresh results folder (nothing
reused). Reported per jobs setting (median of --repeats): the whole command's wall time,
the running phase (first run handed out to last stored; the sweep prints it), and runs per
minute over each. The running phase is what parallelism can speed up; the rest (interpreter
start-up and imports, ~1-2 s; checks; writing the indexes) is the same for any --jobs.

    python benchmarks/sweep_scaling.py                    # smoke grid, jobs 1 and 2
    python benchmarks/sweep_scaling.py --full             # also: k_sweep (2,160 runs), jobs 2
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "experiments" / "grids" / "k_sweep_smoke.yaml"
FULL = REPO / "experiments" / "grids" / "k_sweep.yaml"
LINE = re.compile(r"(\d+) computed in ([\d.]+) s \(([\d.]+) s running\)")


def sweep(grid: Path, jobs: int) -> tuple[int, float, float]:
    """(runs computed, command wall seconds, running seconds) of one fresh sweep."""
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "sim",
                "sweep",
                str(grid),
                "--jobs",
                str(jobs),
                "--quiet",
                "--out",
                out,
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        wall = time.perf_counter() - started
    match = LINE.search(done.stdout)
    return int(match.group(1)), wall, float(match.group(3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=Path, default=SMOKE)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--full", action="store_true", help=f"also time {FULL.name} with --jobs 2")
    args = parser.parse_args()
    args.grid = args.grid.resolve()  # relative to where it is run from, printed from the repo
    print(
        f"$ python benchmarks/sweep_scaling.py --grid {args.grid.relative_to(REPO)} --repeats {args.repeats}"
    )
    rates = {}
    for jobs in (1, 2):
        results = [sweep(args.grid, jobs) for _ in range(args.repeats)]
        runs = results[0][0]
        wall = statistics.median(r[1] for r in results)
        running = statistics.median(r[2] for r in results)
        rates[jobs] = (60 * runs / wall, 60 * runs / running)
        print(
            f"--jobs {jobs}: {runs} runs; command {wall:.1f} s ({rates[jobs][0]:.0f} runs/min), "
            f"running {running:.1f} s ({rates[jobs][1]:.0f} runs/min); walls {[round(r[1], 1) for r in results]}"
        )
    print(
        f"speed-up of --jobs 2 over --jobs 1: running phase {rates[2][1] / rates[1][1]:.2f}x, "
        f"whole command {rates[2][0] / rates[1][0]:.2f}x"
    )
    if args.full:
        runs, wall, running = sweep(FULL, 2)
        print(
            f"{FULL.name} --jobs 2: {runs} runs in {wall / 60:.1f} min ({running / 60:.1f} min running)"
        )


if __name__ == "__main__":
    main()
