"""vLLM's own all-reduce between the GPUs of an NVLink node, which vLLM V1 runs instead of NCCL.

Vidur's all-reduce profile is eager NCCL (``torch.distributed.all_reduce`` outside CUDA graphs,
the kernel time of ``nccl*`` kernels: microsoft/vidur ``vidur/profiling/collectives``), and its
predictor adds 20 µs of NCCL launch per call. vLLM (from 0.3; in V1 as pinned, 0.10.1.1, and in
0.20.2) all-reduces a tensor under 8 MiB with its custom one-/two-shot kernel when the GPUs are
fully NVLink-connected (``vllm/distributed/device_communicators/custom_all_reduce.py``:
``max_size=8192 * 1024`` L57, ``should_custom_ar`` L214-227; on by default,
``disable_custom_all_reduce: bool = False`` in ``vllm/config/parallel.py`` L100), captured in the
step's CUDA graph; larger tensors (prefill chunks of more than 8 MiB / (hidden size × 2) tokens)
go to NCCL as before. In 0.20.2 an H100 TP8 tensor over 256 KiB goes to torch symmetric memory
instead (``all_reduce_utils.py``); the table below is not continued there: NCCL's figure is kept.

Its time per call (``data/custom_all_reduce.csv``) is measured: vLLM's kernel on H100 and A100
at TP 2/4/8, eager and with the copy into its shared buffer, so at most a few µs over the
in-graph call (vLLM PR #24532's in-graph one-shot at TP4: 10 µs at 0.5 MiB, 23 µs at 2 MiB,
beside 26.9 µs eager here). Between measured sizes it is linear in bytes; below the smallest it
is the smallest's (a latency floor); past the largest, in proportion to bytes where the largest
is at least 1 MiB (the bandwidth-bound regime), else not known: NCCL's figure is kept.
"""

from __future__ import annotations

import csv
from functools import lru_cache

import numpy as np

from sim.hardware.catalog import DATA_DIR, Layout

TABLE = DATA_DIR / "custom_all_reduce.csv"
MAX_BYTES = 8192 * 1024  # custom_all_reduce.py: max_size
BANDWIDTH_REGIME_BYTES = 1 << 20
BYTES_PER_ELEMENT = 2  # bf16/fp16 activations


@lru_cache(maxsize=None)
def _measured() -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    rows: dict[tuple[str, int], list[tuple[int, float]]] = {}
    with open(TABLE, newline="") as handle:
        for row in csv.DictReader(handle):
            rows.setdefault((row["node"], int(row["tensor_parallel"])), []).append((int(row["bytes"]), float(row["us"])))
    return {
        key: (np.array([b for b, _ in sorted(points)], dtype=float), np.array([u for _, u in sorted(points)]))
        for key, points in rows.items()
    }


def per_call_ms(layout: Layout, tokens: np.ndarray) -> np.ndarray:
    """The custom all-reduce's time per call (ms) for each token count of ``tokens`` (the
    rows of one step); NaN where vLLM would not run it or no measurement covers the size."""
    tokens = np.asarray(tokens, dtype=float)
    out = np.full(tokens.shape, np.nan)
    measured = _measured().get((layout.node, layout.tensor_parallel))
    if measured is None:
        return out
    sizes, times_us = measured
    hidden = layout.replica_config().model_config.embedding_dim
    nbytes = tokens * hidden * BYTES_PER_ELEMENT
    runs = (nbytes > 0) & (nbytes < MAX_BYTES)
    within = runs & (nbytes <= sizes[-1])
    out[within] = np.interp(nbytes[within], sizes, times_us) * 1e-3
    if sizes[-1] >= BANDWIDTH_REGIME_BYTES:
        beyond = runs & (nbytes > sizes[-1])
        out[beyond] = times_us[-1] * nbytes[beyond] / sizes[-1] * 1e-3
    return out
