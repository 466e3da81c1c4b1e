"""Event-loop speed of this checkout against an earlier revision, on both engines.

    python benchmarks/against_revision.py REV [--rounds 6] [--repeats 5] [--requests 3000]
                                          [--engines compiled,pure] [--schedulers llumnix,infaas++]
                                          [--config experiments/configs/quickstart.yaml] [--cpu N]
                                          [--instructions [--cache-sim]]

A change that should cost nothing (a refactor) is judged by how much slower the event loop
got, and on a shared two-core machine one run of each is noise: this script checks REV out
in a temporary git worktree, builds its compiled engine there, and then, round after round,
runs each (engine, scheduler) setting on both trees in alternating order (REV first in even
rounds, this checkout first in odd ones), each run a fresh process pinned to one CPU that
times ``--repeats`` event loops. It prints, after every round, the minimum over everything
so far (the least disturbed run: noise only ever adds time) and this checkout's ratio to REV.

``--instructions`` counts instead of timing: each setting runs once per tree under Valgrind's
callgrind, collecting only inside the event loop (the second of two runs, entered through
``operator.call``, which nothing else calls), and prints the instructions executed and their
ratio. With the hash seed fixed (``PYTHONHASHSEED=0``) a count repeats to within a millionth
(2,171,048,681 and 2,171,050,123 for the compiled INFaaS++ loop; 0.05% apart with random
seeds), so a change of a tenth of a percent shows; it is not time (cache misses and branch
mispredictions cost cycles it does not count). ``--cache-sim`` adds callgrind's simulated
cache misses (first-level instruction, data read and data write), which are where time goes
that a count of instructions does not see; it runs several times slower.

The setting is the config (the quickstart by default) with ``scheduler.name`` and
``workload.num_requests`` overridden; plots and progress off. The compiled runs need a
current build here (``llumsim native build``); pure Python runs set ``LLUMSIM_PURE=1``.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# run in each tree's own checkout (cwd and PYTHONPATH): the APIs it calls are older than the
# revisions it is meant for (load_config with overrides, simulate -> wall_seconds)
CHILD = """
import sys
from sim.config import load_config
from sim.engine.simulate import simulate
config_path, scheduler, requests, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
config = load_config(config_path, [f"scheduler.name={scheduler}", f"workload.num_requests={requests}",
                                   "output.plots=false", "output.progress=false"])
print(min(simulate(config).wall_seconds for _ in range(repeats)))
"""

# the event loop alone, the second time (the first warms lazy imports and caches), entered
# through operator.call so that callgrind's --toggle-collect=_operator_call counts only it
COUNTED_CHILD = """
import operator, sys
from sim.config import load_config
from sim.engine import Simulation
config_path, scheduler, requests = sys.argv[1], sys.argv[2], int(sys.argv[3])
config = load_config(config_path, [f"scheduler.name={scheduler}", f"workload.num_requests={requests}",
                                   "output.plots=false", "output.progress=false"])
Simulation(config).run()
operator.call(Simulation(config).run)
"""


def engine_status(tree: Path, pure: bool) -> str:
    env = _environment(tree, pure)
    return subprocess.run(
        [sys.executable, "-c", "from sim.native import status; print(status())"],
        cwd=tree, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()


def _environment(tree: Path, pure: bool) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("LLUMSIM_PURE", None)
    if pure:
        env["LLUMSIM_PURE"] = "1"
    return env


def timed_run(tree: Path, pure: bool, config: str, scheduler: str, requests: int, repeats: int, cpu: int) -> float:
    """The fastest of ``repeats`` event loops in one fresh process on ``tree``."""
    command = [sys.executable, "-c", CHILD, config, scheduler, str(requests), str(repeats)]
    done = subprocess.run(
        command, cwd=tree, env=_environment(tree, pure), capture_output=True, text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    if done.returncode:
        raise SystemExit(f"{tree}: the run failed:\n{done.stderr[-3000:]}")
    return float(done.stdout.strip().splitlines()[-1])


# callgrind's events, in the order it prints them with --cache-sim=yes
CACHE_EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
SHOWN = {"Ir": "instructions", "I1mr": "I1 misses", "D1mr": "D1 read misses", "D1mw": "D1 write misses"}


def counted_run(tree: Path, pure: bool, config: str, scheduler: str, requests: int, cache_sim: bool) -> dict[str, int]:
    """What the event loop executes on ``tree`` (callgrind): its instructions, and with
    ``cache_sim`` the simulated cache misses, by callgrind's event name."""
    with tempfile.TemporaryDirectory(prefix="llumsim-callgrind-") as temp:
        command = ["valgrind", "--tool=callgrind", "--toggle-collect=_operator_call",
                   f"--cache-sim={'yes' if cache_sim else 'no'}", f"--callgrind-out-file={temp}/out",
                   sys.executable, "-c", COUNTED_CHILD, config, scheduler, str(requests)]
        env = dict(_environment(tree, pure), PYTHONHASHSEED="0")  # the same dict probes every run
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    events = collected_events(done.stderr)
    if done.returncode or not events:
        raise SystemExit(f"{tree}: the counted run failed:\n{done.stderr[-3000:]}")
    return events


def collected_events(stderr: str) -> dict[str, int]:
    """callgrind's ``Collected :`` line (one count per event it collected), by event name."""
    collected = re.search(r"Collected :((?: \d+)+)", stderr)
    return dict(zip(CACHE_EVENTS, map(int, collected.group(1).split()))) if collected else {}


def build_revision(revision: str, into: Path) -> Path:
    """``revision`` checked out in a worktree under ``into`` (``into/revision``), its compiled
    engine built."""
    tree = into / "revision"
    added = subprocess.run(["git", "worktree", "add", "--detach", str(tree), revision], cwd=ROOT,
                           capture_output=True, text=True)
    if added.returncode:
        raise SystemExit(f"{revision}: not a revision this checkout can check out ({added.stderr.strip()})")
    print(f"building {revision}'s compiled engine in {tree} ...", flush=True)
    built = subprocess.run([sys.executable, "-m", "sim", "native", "build"], cwd=tree,
                           env=_environment(tree, False), capture_output=True, text=True)
    if built.returncode:
        raise SystemExit(f"{revision}: its compiled engine did not build:\n{built.stderr[-3000:]}")
    return tree


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision", help="the git revision to compare with (e.g. a6e6716)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=5, help="event loops per process (its minimum)")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--engines", default="compiled,pure")
    parser.add_argument("--schedulers", default="llumnix,infaas++")
    parser.add_argument("--config", default="experiments/configs/quickstart.yaml")
    parser.add_argument("--instructions", action="store_true",
                        help="count the event loop's instructions under callgrind instead of timing it")
    parser.add_argument("--cache-sim", action="store_true",
                        help="with --instructions: also callgrind's simulated cache misses")
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)), help="the CPU every run is pinned to")
    args = parser.parse_args()
    engines = args.engines.split(",")
    schedulers = args.schedulers.split(",")
    if unknown := set(engines) - {"compiled", "pure"}:
        parser.error(f"--engines: {sorted(unknown)} (known: compiled, pure)")
    if args.cache_sim and not args.instructions:
        parser.error("--cache-sim goes with --instructions")
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind (apt install valgrind)")
    print("command:", shlex.join(["python", "benchmarks/against_revision.py", *sys.argv[1:]]))
    with tempfile.TemporaryDirectory(prefix="llumsim-against-") as temp:
        try:  # the worktree goes away however the run ends (a failed build, an interrupt)
            trees = {args.revision: build_revision(args.revision, Path(temp)), "this checkout": ROOT}
            for engine in engines:
                for name, tree in trees.items():
                    status = engine_status(tree, engine == "pure")
                    if (engine == "compiled") != status.startswith("compiled"):
                        raise SystemExit(f"{name}: engine '{status}' where {engine} was asked for")
            if args.instructions:
                count(trees, engines, schedulers, args)
            else:
                compare(trees, engines, schedulers, args)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(Path(temp) / "revision")], cwd=ROOT,
                           capture_output=True)
            subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True)
    return 0


def compare(trees: dict[str, Path], engines: list[str], schedulers: list[str], args: argparse.Namespace) -> None:
    fastest: dict[tuple[str, str, str], float] = {}
    names = list(trees)
    for round_number in range(args.rounds):
        order = names if round_number % 2 == 0 else names[::-1]
        for engine in engines:
            for scheduler in schedulers:
                for name in order:
                    seconds = timed_run(trees[name], engine == "pure", args.config, scheduler,
                                        args.requests, args.repeats, args.cpu)
                    key = (engine, scheduler, name)
                    fastest[key] = min(fastest.get(key, float("inf")), seconds)
        print(f"after round {round_number + 1} of {args.rounds} (minimum event loop, s):", flush=True)
        for engine in engines:
            for scheduler in schedulers:
                base, here = (fastest[(engine, scheduler, name)] for name in names)
                print(f"  {engine:8s} {scheduler:10s} {names[0]} {base:.4f}  this checkout {here:.4f}"
                      f"  ratio {here / base:.3f}", flush=True)


def count(trees: dict[str, Path], engines: list[str], schedulers: list[str], args: argparse.Namespace) -> None:
    names = list(trees)
    print("event loop, counted by callgrind:", flush=True)
    for engine in engines:
        for scheduler in schedulers:
            base, here = (counted_run(trees[name], engine == "pure", args.config, scheduler, args.requests,
                                      args.cache_sim) for name in names)
            for event, label in SHOWN.items():
                if event in here:
                    print(f"  {engine:8s} {scheduler:10s} {label:16s} {names[0]} {base[event]:,}  "
                          f"this checkout {here[event]:,}  ratio {here[event] / base[event]:.4f}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
