"""KV-cache transfer between instances: how long one migration stage takes.

Llumnix moves KV blocks with Gloo through CPU staging on a stream separate from compute.
A stage costs a fixed latency (pre-allocate request, ACK, send set-up) plus its bytes over
the instance's effective bandwidth: each GPU of a tensor-parallel instance stages and sends
its own shard, so the GPU-side rate scales with the TP degree until the instance's network
link is the limit (64 Gb/s between VMs in the Llumnix testbed).

The constants are a node's: its SKU entry names the fit (``NodeData.transfer_fit``, a file
under ``data/`` with its provenance); the shipped one is fitted by ``python -m
sim.bench.fit_transfer``: stage latency and per-GPU bandwidth to the LLaMA-7B blocking-copy
and live-migration rows of the Llumnix artifact's table, the network bandwidth to the paper's
LLaMA-30B blocking copy (about 3.2 s at 8k tokens).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from sim.hardware.catalog import Layout


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


def fitted_constants(fit_json: Path) -> dict[str, float]:
    """A fit's constants (stage_latency, gpu_bandwidth, network_bandwidth)."""
    data = json.loads(fit_json.read_text())
    return {name: float(data[name]) for name in ("stage_latency", "gpu_bandwidth", "network_bandwidth")}


def load_transfer_model(
    layout: "Layout",
    kv_bytes_per_token: int,
    block_size: int,
    stage_latency: Optional[float] = None,
    gpu_bandwidth: Optional[float] = None,
    network_bandwidth: Optional[float] = None,
) -> TransferModel:
    """The transfer model of one instance layout (its node's fit), with optional overrides."""
    constants = fitted_constants(layout.transfer_fit_json)
    return TransferModel(
        block_bytes=kv_bytes_per_token * block_size,
        tensor_parallel=layout.tensor_parallel,
        stage_latency=constants["stage_latency"] if stage_latency is None else stage_latency,
        gpu_bandwidth=constants["gpu_bandwidth"] if gpu_bandwidth is None else gpu_bandwidth,
        network_bandwidth=(
            constants["network_bandwidth"] if network_bandwidth is None else network_bandwidth
        ),
    )
