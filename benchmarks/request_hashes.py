"""SHA-256 of the per-request table of shipped configs: proof that a refactor or a speed-up
changed no result (not a timed test).

    python benchmarks/request_hashes.py                      # print the hashes
    python benchmarks/request_hashes.py --write FILE         # record them (JSON)
    python benchmarks/request_hashes.py --check FILE         # exit 1 if any differs

The table hashed is exactly what ``llumsim run`` writes as ``requests.csv``. Runs are the
quickstart (Llumnix), the same requests under INFaaS++ and round-robin, the fault example,
the paper's Poisson auto-scaling set-up (3,000 requests), a K = 4 priority mix, and 3,000
requests each of the paper's priorities set-up (Fig. 13: two tiers, Gamma arrivals), the
artifact client's S-S stream and the BurstGPT-shaped trace, PD under each hand-off scheme,
the prefix cache, the A100 and H100 profiles and vLLM V1's engine — every mechanism a
refactor could disturb (the list: ``sim.studies.fingerprint.CANONICAL_RUNS``). The recorded
hashes are also the committed studies' fingerprint (``llumsim studies``): re-record them in
the commit that changes the physics, then ``llumsim studies marks`` marks the studies it staled.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sim import native
from sim.studies.fingerprint import CANONICAL_RUNS as RUNS
from sim.studies.fingerprint import request_hash

REPO = Path(__file__).resolve().parents[1]


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
        digest, wall = request_hash(*RUNS[name], root=REPO)
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
