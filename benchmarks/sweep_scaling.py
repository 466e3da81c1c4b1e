"""Does a sweep keep both cores busy? The smoke grid with --jobs 1 and --jobs 2, and
optionally the K-tier grid's wall time at 3 seeds, or the K-tier study on both engines.

Each sweep is a fresh ``python -m sim sweep`` process into a fresh results folder (nothing
reused). Reported per jobs setting (median of --repeats): the whole command's wall time,
the running phase (first run handed out to last stored; the sweep prints it), and runs per
minute over each. The running phase is what parallelism can speed up; the rest (interpreter
start-up and imports, ~1-2 s; checks; writing the indexes) is the same for any --jobs.

    python benchmarks/sweep_scaling.py                    # smoke grid, jobs 1 and 2
    python benchmarks/sweep_scaling.py --full             # also: k_study at 3 seeds (2,160 runs), jobs 2
    python benchmarks/sweep_scaling.py --study [--seeds 10] [--engines compiled,pure]
        [--only KEY=V1,V2 ...]

``--study``: every cell of ``k_study`` at ``--seeds`` seeds (10: 7,200 runs), ``--jobs 2``,
once per engine (compiled: the build must be current, ``llumsim native build``; pure:
``LLUMSIM_PURE=1``): distinct simulations, runs, wall time, runs and simulations per
minute. With fewer seeds, or axes cut down by ``--only``, it also prints the 10-seed
full-grid wall time extrapolated from the measured seconds per simulation (labelled so).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "experiments" / "grids" / "k_sweep_smoke.yaml"
FULL = REPO / "experiments" / "grids" / "k_study.yaml"  # --full at its seeds; --study at --seeds
LINE = re.compile(r"(\d+) computed in ([\d.]+) s \(([\d.]+) s running, (\d+) simulations; engine (.+?)\); wrote")
STUDY_SEEDS = 10


def sweep(grid: Path, jobs: int, env: dict | None = None) -> tuple[int, float, float, int, str]:
    """(runs computed, command wall seconds, running seconds, simulations, engine) of one
    fresh sweep."""
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
            env=env,
        )
        wall = time.perf_counter() - started
    match = LINE.search(done.stdout)
    return int(match.group(1)), wall, float(match.group(3)), int(match.group(4)), match.group(5)


def study_grid(folder: Path, seeds: int, only: list[str]) -> Path:
    """k_study at ``seeds`` seeds, each ``--only KEY=V1,V2`` axis cut to those values."""
    import yaml

    spec = yaml.safe_load(FULL.read_text())
    spec["base"] = str((FULL.parent / spec["base"]).resolve())
    spec["seeds"] = seeds
    for item in only:
        key, _, values = item.partition("=")
        if key not in spec["axes"]:
            raise SystemExit(f"--only {item}: {key} is not an axis of {FULL.name}")
        spec["axes"][key] = [yaml.safe_load(v) for v in values.split(",")]
    path = folder / f"k_study_{seeds}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def simulations(grid: Path) -> tuple[int, int]:
    """(runs, distinct simulations) of a grid, counted without running it."""
    sys.path.insert(0, str(REPO))
    from sim.sweep import load_grid
    from sim.sweep.sharing import simulation_key

    runs = load_grid(grid).runs
    return len(runs), len({simulation_key(run.config) for run in runs})


def study(seeds: int, engines: list[str], only: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        grid = study_grid(Path(folder), seeds, only)
        full_runs, full_sims = simulations(study_grid(Path(folder), STUDY_SEEDS, []))
        cut = f", {', '.join(only)}" if only else ""
        print(f"{FULL.name} at {seeds} seeds{cut}, --jobs 2, {os.cpu_count()} CPUs")
        for engine in engines:
            env = {**os.environ, **({"LLUMSIM_PURE": "1"} if engine == "pure" else {})}
            runs, wall, running, sims, ran_on = sweep(grid, 2, env)
            if (engine == "compiled") != (ran_on == "compiled"):
                raise SystemExit(f"--engines {engine}: the sweep ran on {ran_on} (llumsim native build?)")
            print(
                f"{engine:>8}: {sims} simulations for {runs} runs in {wall / 60:.1f} min "
                f"({running / 60:.1f} min running): {60 * runs / wall:.1f} runs/min, "
                f"{60 * sims / wall:.1f} simulations/min"
            )
            if (seeds, only) != (STUDY_SEEDS, []):
                estimate = (wall - running) + running / sims * full_sims
                print(
                    f"{'':>8}  EXTRAPOLATED to the full grid at {STUDY_SEEDS} seeds ({full_sims} "
                    f"simulations for {full_runs} runs) at the measured {running / sims:.2f} s per "
                    f"simulation: {estimate / 60:.1f} min"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=Path, default=SMOKE)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--full", action="store_true", help=f"also time {FULL.name} at 3 seeds with --jobs 2")
    parser.add_argument("--study", action="store_true", help=f"only the K-tier study: {FULL.name} at --seeds seeds")
    parser.add_argument("--seeds", type=int, default=STUDY_SEEDS, help="--study: seeds per cell")
    parser.add_argument("--engines", default="compiled,pure", help="--study: compiled, pure or both")
    parser.add_argument("--only", action="append", default=[], metavar="KEY=V1,V2", help="--study: cut an axis")
    args = parser.parse_args()
    if args.study:
        print(
            f"$ python benchmarks/sweep_scaling.py --study --seeds {args.seeds} --engines {args.engines}"
            + "".join(f" --only {item}" for item in args.only)
        )
        study(args.seeds, args.engines.split(","), args.only)
        return
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
        with tempfile.TemporaryDirectory() as folder:
            runs, wall, running, *_ = sweep(study_grid(Path(folder), 3, []), 2)
        print(
            f"{FULL.name} at 3 seeds --jobs 2: {runs} runs in {wall / 60:.1f} min ({running / 60:.1f} min running)"
        )


if __name__ == "__main__":
    main()
