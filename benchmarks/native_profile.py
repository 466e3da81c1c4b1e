"""Where the compiled engine's event loop goes: a sampling profile by compiled function.

    python benchmarks/native_profile.py [--scheduler infaas++|llumnix|...] [--requests N]
                                        [--quickstart] [--top N] [--frequency HZ]

cProfile cannot see inside compiled code (a compiled function is one opaque builtin), so
this samples the process with Linux ``perf`` (call graphs by DWARF unwinding) during the
event loop only — perf is switched on and off through a control FIFO around
``Simulation.run`` — and charges each sample to the innermost compiled function on its
stack, with everything it called that is not compiled itself (dict and set operations,
allocation, calls into interpreted code). A sample with no compiled function on its stack
is interpreted: simpy's kernel, the arrival process, the parts of the engine left in
Python. Needs ``perf`` and a current build (``llumsim native build``).

The run is throughput.py's (a): 10,000 shaped ShareGPT requests, Poisson at 7.5 req/s on
16 LLaMA-7B instances (``--quickstart``: the quickstart config instead).
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

INTERPRETED = "interpreted (simpy's kernel, arrivals, the rest of the engine)"


def child(args: argparse.Namespace) -> None:
    """Build the simulation, then run its event loop with perf sampling on."""
    from sim.config import load_config
    from sim.engine import Simulation

    if args.quickstart:
        config = load_config(str(ROOT / "experiments" / "configs" / "quickstart.yaml"), [])
    else:
        from throughput import RATE, base_config

        config = load_config(None, base=base_config(args.requests, 16, RATE, args.scheduler))
    simulation = Simulation(config)
    control = os.environ["LLUMSIM_PERF_CONTROL"]
    with open(control, "w") as fifo:
        fifo.write("enable\n")
    result = simulation.run()
    with open(control, "w") as fifo:
        fifo.write("disable\n")
    print(f"event loop {result.wall_seconds:.2f} s (sampled), {result.batches:,} batches")


def compiled_name(symbol: str) -> str | None:
    """``CPyDef_llumlet___Llumlet___next_batch`` -> ``llumlet.Llumlet.next_batch``; None
    for anything that is not a compiled function of ours."""
    if not symbol.startswith("CPyDef_"):
        return None
    return symbol[len("CPyDef_") :].replace("___", ".")


def attribute(script: str) -> tuple[collections.Counter, int]:
    """Samples per innermost compiled function in ``perf script -F ip,sym`` output."""
    shares: collections.Counter = collections.Counter()
    total = 0
    owner: str | None = None
    in_sample = False
    for line in script.splitlines() + [""]:
        parts = line.split(None, 1)
        if not parts:  # a blank line ends a sample's stack
            if in_sample:
                shares[owner or INTERPRETED] += 1
                total += 1
            owner, in_sample = None, False
            continue
        in_sample = True
        if owner is None and len(parts) == 2:
            owner = compiled_name(parts[1].strip())
    return shares, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scheduler", default="infaas++")
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--quickstart", action="store_true", help="profile the quickstart config")
    parser.add_argument("--top", type=int, default=16, help="rows to print")
    parser.add_argument("--frequency", type=int, default=2000, help="samples per second")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0

    from sim import native

    if native.status() != "compiled":
        print(f"native_profile.py: the engine is {native.status()}: run `llumsim native build` first", file=sys.stderr)
        return 2
    perf = shutil.which("perf")
    if perf is None:
        print("native_profile.py: needs Linux `perf` (linux-tools) on PATH", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="llumsim-perf-") as temp:
        control, data = Path(temp) / "control", Path(temp) / "perf.data"
        os.mkfifo(control)
        record = [
            perf, "record", "-q", "-F", str(args.frequency), "--call-graph", "dwarf,16384",
            "-D", "-1", f"--control=fifo:{control}", "-o", str(data),
            sys.executable, __file__, "--child", "--scheduler", args.scheduler,
            "--requests", str(args.requests),
        ] + (["--quickstart"] if args.quickstart else [])
        run = subprocess.run(record, env={**os.environ, "LLUMSIM_PERF_CONTROL": str(control)}, cwd=ROOT)
        if run.returncode != 0:
            print(f"native_profile.py: perf record failed ({run.returncode})", file=sys.stderr)
            return 1
        script = subprocess.run(
            [perf, "script", "-i", str(data), "-F", "ip,sym"],
            capture_output=True, text=True, check=True,
        ).stdout
    shares, total = attribute(script)
    what = "the quickstart" if args.quickstart else f"{args.requests:,} requests, {args.scheduler}"
    print(f"{total:,} samples of the event loop ({what}; compiled engine), by innermost compiled function:")
    for name, count in shares.most_common(args.top):
        print(f"  {100 * count / total:5.1f}%  {name}")
    rest = total - sum(count for _, count in shares.most_common(args.top))
    if rest:
        print(f"  {100 * rest / total:5.1f}%  (the rest)")
    print("$ python benchmarks/native_profile.py " + " ".join(sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
