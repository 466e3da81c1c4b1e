"""KV-cache transfer between instances: how long one migration stage takes.

Llumnix moves KV blocks with Gloo through CPU staging on a stream separate from compute.
A stage costs a fixed latency (pre-allocate request, ACK, send set-up) plus its bytes over
the instance's effective bandwidth: each GPU of a tensor-parallel instance stages and sends
its own shard, so the GPU-side rate scales with the TP degree until the instance's network
link is the limit (64 Gb/s between VMs in the Llumnix testbed).

The constants are fitted by ``python -m sim.bench.fit_transfer`` (see
``data/transfer_fit.json`` and its provenance): stage latency and per-GPU bandwidth to the
LLaMA-7B blocking-copy and live-migration rows of the A10 table, the network bandwidth to
the paper's LLaMA-30B blocking copy (about 3.2 s at 8k tokens).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

TRANSFER_FIT_JSON = Path(__file__).parent / "data" / "transfer_fit.json"


@dataclass(frozen=True)
class TransferModel:
    block_bytes: int  # bytes of one KV block on the whole instance (all TP shards)
    tensor_parallel: int
    stage_latency: float  # seconds
    gpu_bandwidth: float  # bytes/s per GPU
    network_bandwidth: float  # bytes/s per instance

    @property
    def bandwidth(self) -> float:
        """Bytes/s one instance moves: its GPUs in parallel, capped by its network link."""
        return min(self.tensor_parallel * self.gpu_bandwidth, self.network_bandwidth)

    def stage_time(self, blocks: int) -> float:
        """Seconds to pre-allocate and copy ``blocks`` KV blocks in one stage."""
        return self.stage_latency + blocks * self.block_bytes / self.bandwidth


def fitted_constants() -> dict[str, float]:
    """The calibrated A10 constants (stage_latency, gpu_bandwidth, network_bandwidth)."""
    data = json.loads(TRANSFER_FIT_JSON.read_text())
    return {name: float(data[name]) for name in ("stage_latency", "gpu_bandwidth", "network_bandwidth")}


def load_transfer_model(
    kv_bytes_per_token: int,
    block_size: int,
    tensor_parallel: int,
    stage_latency: Optional[float] = None,
    gpu_bandwidth: Optional[float] = None,
    network_bandwidth: Optional[float] = None,
) -> TransferModel:
    """The A10 transfer model for one instance layout, with optional overrides."""
    constants = fitted_constants()
    return TransferModel(
        block_bytes=kv_bytes_per_token * block_size,
        tensor_parallel=tensor_parallel,
        stage_latency=constants["stage_latency"] if stage_latency is None else stage_latency,
        gpu_bandwidth=constants["gpu_bandwidth"] if gpu_bandwidth is None else gpu_bandwidth,
        network_bandwidth=(
            constants["network_bandwidth"] if network_bandwidth is None else network_bandwidth
        ),
    )
