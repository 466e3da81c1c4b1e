"""Start-up of the command line, each case in a fresh process (not a timed test).

    python benchmarks/startup.py [--repeats N] [--config experiments/configs/quickstart.yaml]

The minimum over ``--repeats`` fresh processes (the least disturbed by other load) of:
``python -c 'import yaml'`` (the floor: an interpreter and one small package),
``python -m sim --help``, a config error (``python -m sim run`` on a file with an unknown
key: exits 2), and a run's start-up: process launch until the simulation's first event
(config loaded, replica model from a warm cache, workload drawn; what ``llumsim run``
does before its first event). Bars (issue 22): ``--help`` <= 0.3 s, first event <= 1 s.
Run from the checkout to measure it (``python -m sim`` imports the current directory's).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIRST_EVENT = """
import sys, time
from sim.config import load_config
from sim.engine import Simulation
simulation = Simulation(load_config(sys.argv[1]))
simulation.start()
simulation.env.step()
print(time.time())
"""


def wall(argv: list[str], expect: int = 0) -> float:
    """Seconds from launch to exit of one fresh process."""
    started = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert done.returncode == expect, (argv, done.returncode)
    return time.perf_counter() - started


def first_event(config: str) -> float:
    """Seconds from launch to the first simulated event (the child stamps it)."""
    started = time.time()
    out = subprocess.run(
        [sys.executable, "-c", FIRST_EVENT, config], check=True, capture_output=True, text=True
    ).stdout
    return float(out.split()[-1]) - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per case")
    parser.add_argument("--config", default="experiments/configs/quickstart.yaml")
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "bad.yaml"
        bad.write_text("workload: {bogus: 1}\n")
        first_event(args.config)  # warms the replica model's cache
        cases = {
            "python -c 'import yaml'": lambda: wall([python, "-c", "import yaml"]),
            "python -m sim --help": lambda: wall([python, "-m", "sim", "--help"]),
            "python -m sim run bad.yaml (exit 2)": lambda: wall([python, "-m", "sim", "run", str(bad)], 2),
            f"first event of {Path(args.config).name}": lambda: first_event(args.config),
        }
        print(f"$ {' '.join([os.path.basename(python), *sys.argv])}")
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; min of {args.repeats} fresh processes")
        for name, case in cases.items():
            print(f"{name:<40} {min(case() for _ in range(args.repeats)):>6.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
