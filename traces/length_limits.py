"""How many requests each length limit of the Llumnix artifact removes from each preset's workload.

    python traces/length_limits.py [--seed N]

The artifact's benchmark client and engine (branch ``osdi24ae``) limit request lengths in four
ways; llumsim applies each the same way (``traces/PROVENANCE.md``, "Request lengths as the
artifact served them"):

* client, ShareGPT: keep a pair only if prompt + answer < 12,800 (``sample_dataset_requests``)
  — the ``sharegpt-gpt4`` shape preset's ``total_below``; these requests are not sent;
* client, BurstGPT and synthetic: truncate prompt and output at 6,144 (``irange``/``oranges``,
  ``sample_burstgpt_request``) — ``shape.*.cap`` / ``synthetic.max_tokens``; counted as the
  requests at the cap;
* engine: a prompt longer than min(max_model_len 16,384, max_num_batched_tokens) is ignored
  (``scheduler.py``), a sequence past 16,384 tokens is cut (``llm_engine.py``) — an instance
  aborts these (``exceeds_instance_limits``);
* engine, KV cache: a request whose prompt + output outgrows the instance's KV capacity can
  never finish (vLLM 0.1.x preempts it forever) — an instance aborts it too.

Counts are for the workload exactly as each preset builds it (its seed unless ``--seed``).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np

from sim.config import load_config
from sim.hardware import load_replica_model
from sim.workload import build_workload

ROOT = Path(__file__).resolve().parents[1]
PRESETS = sorted((ROOT / "experiments/configs/paper").glob("fig1[1345]*.yaml")) + [
    ROOT / "experiments/configs/quickstart.yaml"
]
MAX_MODEL_LEN = 16384  # the artifact's vllm/config.py hard-codes it (LLaMA-1's 2,048 is unused)
CLIENT_CAP = 6144


def count(path: Path, seed: int | None) -> dict:
    config = load_config(path)
    workload_config = config.workload
    unfiltered = workload_config
    shape = workload_config.shape
    if shape.preset == "sharegpt-gpt4" or shape.total_below is not None:
        unfiltered = replace(workload_config, shape=replace(shape, total_below=10_000_000))
    run_seed = config.seed if seed is None else seed
    served = build_workload(workload_config, run_seed, ROOT)
    drawn = build_workload(unfiltered, run_seed, ROOT)
    prompt, output = served.prompt_tokens, served.output_tokens
    total = prompt + output
    cluster = config.cluster
    capacity = load_replica_model(
        cluster.model, max_batched_tokens=cluster.max_batched_tokens
    ).kv_capacity_blocks * cluster.block_size
    return {
        "preset": path.stem,
        "requests": len(prompt),
        "client_total_dropped": len(drawn.prompt_tokens) - len(prompt),
        "at_6144_cap": int(np.sum((prompt == CLIENT_CAP) | (output == CLIENT_CAP))),
        "prompt_over_engine_limit": int(np.sum(prompt > min(MAX_MODEL_LEN, cluster.max_batched_tokens))),
        "total_over_max_model_len": int(np.sum(total > MAX_MODEL_LEN)),
        "total_over_kv_capacity": int(np.sum(total > capacity)),
        "kv_capacity_tokens": capacity,
    }


COLUMNS = (
    "requests",
    "client_total_dropped",
    "at_6144_cap",
    "prompt_over_engine_limit",
    "total_over_max_model_len",
    "total_over_kv_capacity",
    "kv_capacity_tokens",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None, help="override every preset's seed")
    args = parser.parse_args(argv)
    print("| preset | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    for path in PRESETS:
        row = count(path, args.seed)
        print(f"| {row['preset']} | " + " | ".join(f"{row[c]:,}" for c in COLUMNS) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
