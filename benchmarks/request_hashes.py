"""SHA-256 of the per-request table of shipped configs: proof that a refactor or a speed-up
changed no result (not a timed test).

    python benchmarks/request_hashes.py                      # print the hashes
    python benchmarks/request_hashes.py --write FILE         # record them (JSON)
    python benchmarks/request_hashes.py --check FILE         # exit 1 if any differs

The table hashed is exactly what ``llumsim run`` writes as ``requests.csv``. Runs are the
quickstart (Llumnix), the same requests under INFaaS++ and round-robin, the fault example,
the paper's Poisson auto-scaling set-up (3,000 requests), a K = 4 priority mix, and 3,000
requests each of the paper's priorities set-up (Fig. 13: two tiers, Gamma arrivals), the
artifact client's S-S stream and the BurstGPT-shaped trace — every mechanism a refactor
could disturb.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

from sim import native
from sim.config import load_config
from sim.engine import simulate
from sim.metrics import request_table

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "experiments" / "configs"

RUNS: dict[str, tuple[Path, list[str]]] = {
    "quickstart": (CONFIGS / "quickstart.yaml", []),
    "infaas++": (CONFIGS / "quickstart.yaml", ["scheduler.name=infaas++"]),
    "round-robin": (CONFIGS / "quickstart.yaml", ["scheduler.name=round-robin"]),
    "faults": (CONFIGS / "faults.yaml", []),
    "autoscaling": (CONFIGS / "paper" / "fig14_scaling_poisson.yaml", ["workload.num_requests=3000"]),
    "k4-enterprise": (
        CONFIGS / "quickstart.yaml",
        ["workload.priority.tiers=4", "workload.priority.sampler=enterprise"],
    ),
    "priorities": (CONFIGS / "paper" / "fig13_priorities.yaml", ["workload.num_requests=3000"]),
    "artifact-s-s": (CONFIGS / "paper" / "fig11_ss.yaml", ["workload.num_requests=3000"]),
    "burstgpt": (CONFIGS / "paper" / "fig11_burstgpt.yaml", ["workload.num_requests=3000"]),
    # prefill/decode disaggregation: each hand-off scheme, adaptive PD's moves, a live copy
    "pd-llumnix": (CONFIGS / "pd.yaml", ["workload.num_requests=2000"]),
    "pd-immediate": (CONFIGS / "pd.yaml", ["workload.num_requests=2000", "pd.pairing=immediate"]),
    "pd-layerwise": (
        CONFIGS / "pd.yaml",
        ["workload.num_requests=2000", "pd.pairing=immediate", "pd.layerwise=true"],
    ),
    "pd-adaptive": (CONFIGS / "pd.yaml", ["workload.num_requests=2000", "pd.adaptive=true", "workload.arrival.rate=8"]),
    "pd-live": (CONFIGS / "pd.yaml", ["workload.num_requests=2000", "pd.copy=live"]),
    # the prefix cache: conversations with cache-aware dispatch, system prompts with migration
    "sessions": (CONFIGS / "sessions.yaml", ["workload.num_requests=300"]),
    "system-prompt": (CONFIGS / "system_prompt.yaml", ["workload.num_requests=1500"]),
}


def request_hash(config_path: Path, overrides: list[str]) -> tuple[str, float]:
    """(sha256 of requests.csv, wall seconds of the run)."""
    config = load_config(config_path, overrides)
    started = time.perf_counter()
    result = simulate(config)
    wall = time.perf_counter() - started
    csv = request_table(result).to_csv(index=False).encode()
    return hashlib.sha256(csv).hexdigest(), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", type=Path, help="record the hashes in this JSON file")
    group.add_argument("--check", type=Path, help="compare with hashes recorded in this file")
    parser.add_argument("runs", nargs="*", help=f"subset of {', '.join(RUNS)}")
    args = parser.parse_args()
    names = args.runs or list(RUNS)
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        parser.error(f"unknown run(s): {', '.join(unknown)}")
    expected = json.loads(args.check.read_text()) if args.check else {}
    # the sim imported is the installed one unless PYTHONPATH says otherwise (a worktree)
    print(f"llumsim engine: {native.status()} ({native.PACKAGE_DIR})")
    hashes, failed = {}, []
    for name in names:
        digest, wall = request_hash(*RUNS[name])
        hashes[name] = digest
        verdict = ""
        if args.check:
            same = expected.get(name) == digest
            verdict = "  same" if same else f"  DIFFERS (recorded {expected.get(name)})"
            failed += [] if same else [name]
        print(f"{name:<15} {digest}  {wall:6.1f} s{verdict}", flush=True)
    if args.write:
        args.write.write_text(json.dumps(hashes, indent=2) + "\n")
        print(f"wrote {args.write}")
    print(f"$ python benchmarks/request_hashes.py {' '.join(sys.argv[1:])}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
