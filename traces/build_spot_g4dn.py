"""Build traces/spot/aws_g4dn_availability.csv: SpotServe's AWS g4dn spot availability trace.

Input: ``elastic-switch/trace/trace_full/g4dn.csv`` of the SpotServe artifact repository
(Hsword/SpotServe, Apache-2.0: its ``LICENSE``, "Copyright 2024 Xupeng Miao"), pinned by
commit and SHA-256 below. One row per change in a fleet of AWS g4dn spot instances over
~10.8 hours: ``ms,add|remove,node`` — the time in ms from the trace's start, whether a node
was granted (add) or taken back (remove), and the node's name.

Output: the same rows, byte for byte (the simulator reads this format as it stands,
``sim.engine.preemptions.read_availability_trace``); the check below is that it parses as an
availability trace (every remove of a live node, times in order).

Run: ``python traces/build_spot_g4dn.py [g4dn.csv]`` — without a path the file is read with
``git show`` from the local mirror of the SpotServe repository (MIRROR) at the pinned commit;
either way its SHA-256 must match. Deterministic.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

MIRROR = Path("/work/.mirror/Hsword+SpotServe/repo")
COMMIT = "0a6812a1ce3b95607073e8a2e444af377a759765"
SOURCE_PATH = "elastic-switch/trace/trace_full/g4dn.csv"
SOURCE_BLOB = "1b7a7bfa1388293e4a072e9913abaf1e02220101"  # git blob id, for the record
SOURCE_SHA256 = "4b3c295630065e2b13851aab1dd7b056a4c470b3ff4bfbb518a8b41ef2c17434"
OUT = Path(__file__).resolve().parent / "spot" / "aws_g4dn_availability.csv"


def source_bytes(path: str | None) -> bytes:
    if path is not None:
        return Path(path).read_bytes()
    return subprocess.run(
        ["git", "--git-dir", str(MIRROR), "show", f"{COMMIT}:{SOURCE_PATH}"], check=True, capture_output=True
    ).stdout


def main(argv: list[str]) -> int:
    data = source_bytes(argv[0] if argv else None)
    digest = hashlib.sha256(data).hexdigest()
    if digest != SOURCE_SHA256:
        print(f"{SOURCE_PATH}: SHA-256 {digest}, expected {SOURCE_SHA256}", file=sys.stderr)
        return 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(data)
    sys.path.insert(0, str(OUT.parents[2]))
    from sim.engine.preemptions import read_availability_trace

    removals = read_availability_trace(OUT)
    print(f"{OUT}: {sum(r.removed for r in removals)} removals at {len(removals)} times")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
