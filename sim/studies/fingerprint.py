"""The fingerprint of the physics a study ran: the request tables of a fixed set of canonical
runs, per serving engine.

Why this and not a hash of the code: a study's numbers change exactly when the simulated
requests do, and a refactor, a faster engine or a new output column changes no request
table — a hash of the sources would call every study stale at every such change. A hash of
chosen files would have to guess which files decide the physics (profiles and fits in data
files, constants in code, scheduler rules) and would miss the next one added. The request
tables of runs that exercise every mechanism (``CANONICAL_RUNS``: scheduling, migration,
faults, auto-scaling, priorities, PD hand-offs, the prefix cache, each GPU of the catalog,
each engine) change with any of them, and only with them.

What keeps it cheap: the project already records these hashes in
``benchmarks/request_hashes.json`` and re-records them in the commit that changes the physics
(``benchmarks/request_hashes.py --check`` must print ``same`` for all otherwise), so reading
the fingerprint costs nothing; ``llumsim studies remake`` recomputes them first and refuses
to stamp a study with a record that does not describe the checkout.

Per engine: each canonical run belongs to the engines its pools run, and a study records only
the hashes of its own engines' runs, so a change to vLLM V1's batching stales no study made on
vLLM 0.1.2. A study is stale when a run it recorded now hashes differently; runs added to the
set later are not held against it (it recorded none for them).
"""

from __future__ import annotations

import hashlib
import json
import time
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONFIGS = Path("experiments") / "configs"  # in the repository: a run's config is read from root / config
RECORDED = REPO / "benchmarks" / "request_hashes.json"

# name -> (config, overrides): every mechanism a change to the physics could move
CANONICAL_RUNS: dict[str, tuple[Path, list[str]]] = {
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
    # the other GPUs of the catalog (the fleet study's): their profiles are data files no
    # A10 run reads; the A100 40GB is the 80GB card's operators carried over, so one covers both
    "a100": (CONFIGS / "quickstart.yaml", ["cluster.device=a100_80gb", "cluster.instances=4",
                                           "workload.num_requests=2000"]),
    "h100": (CONFIGS / "quickstart.yaml", ["cluster.device=h100_80gb", "cluster.instances=4",
                                           "workload.num_requests=2000"]),
    # vLLM V1's engine: its batching (chunked prompts beside decodes) and its host work
    "v1-quickstart": (CONFIGS / "quickstart.yaml", ["cluster.engine=vllm-v1", "workload.num_requests=2000"]),
    "v1-sessions": (CONFIGS / "sessions.yaml", ["cluster.engine=vllm-v1", "workload.num_requests=300"]),
}


@lru_cache(maxsize=None)
def engines_of(run: str) -> frozenset[str]:
    """The serving engines a canonical run's pools run (read from its config; nothing simulated)."""
    from sim.config import load_config

    path, overrides = CANONICAL_RUNS[run]
    config = load_config(REPO / path, overrides)
    return frozenset(pool.engine for pool in (config.pools or [config.cluster]))


def request_hash(config_path: Path, overrides: list[str], root: Path = REPO) -> tuple[str, float]:
    """(sha256 of the run's request table, exactly ``llumsim run``'s requests.csv; wall seconds).
    ``root``: the repository the config path is in (a built copy of sim/ lives elsewhere)."""
    from sim.config import load_config
    from sim.engine import simulate
    from sim.metrics import request_table

    config = load_config(root / config_path, overrides)
    started = time.perf_counter()
    result = simulate(config)
    wall = time.perf_counter() - started
    csv = request_table(result).to_csv(index=False).encode()
    return hashlib.sha256(csv).hexdigest(), wall


def recorded_hashes(path: Path = RECORDED) -> dict[str, str]:
    """The canonical runs' hashes as the checkout records them."""
    return json.loads(path.read_text(encoding="utf-8"))


def fingerprint(engines: list[str], hashes: dict[str, str]) -> dict[str, str]:
    """The hashes of the canonical runs on any of ``engines``: what a study made on those
    engines records."""
    return {run: digest for run, digest in sorted(hashes.items())
            if run in CANONICAL_RUNS and engines_of(run) & set(engines)}


def short(prints: dict[str, str]) -> str:
    """A fingerprint in 8 hex digits, for a listing or a page."""
    return hashlib.sha256(json.dumps(prints, sort_keys=True).encode()).hexdigest()[:8]


def moved(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """The canonical runs whose request table differs between a study's record and now (runs
    only one side has are not compared). A record that shares no run with now cannot be
    checked and counts as moved whole."""
    shared = recorded.keys() & current.keys()
    if not shared:
        return sorted(recorded) or ["(no canonical run recorded)"]
    return sorted(run for run in shared if recorded[run] != current[run])
