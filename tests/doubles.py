"""Test doubles: replica timers with known answers, small workloads and configs."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from sim.cluster import FixedPlacement, GlobalScheduler
from sim.config import SimulationConfig, load_config
from sim.hardware.transfer import TransferModel
from sim.workload import Workload


class LinearTimer:
    """Iteration time linear in tokens: easy to reason about, cheap, and exactly known."""

    def __init__(
        self,
        capacity_blocks: int = 851,
        base: float = 0.020,
        per_prefill_token: float = 0.0002,
        per_decode: float = 0.0003,
        per_kv_token: float = 1e-6,
    ) -> None:
        self.kv_capacity_blocks = capacity_blocks
        self.base = base
        self.per_prefill_token = per_prefill_token
        self.per_decode = per_decode
        self.per_kv_token = per_kv_token
        self.num_layers = 32  # LLaMA-7B's: a layer-wise hand-off's last share is 1/32

    def batch_time(
        self, prefills: Sequence[tuple[int, int]], num_decodes: int, decode_kv_tokens: int
    ) -> float:
        q = sum(tokens for tokens, _ in prefills)
        return (
            self.base
            + self.per_prefill_token * q
            + self.per_decode * num_decodes
            + self.per_kv_token * decode_kv_tokens
        )


class ConstantTimer:
    """Every prefill takes ``prefill`` seconds and every decode step ``decode`` seconds."""

    def __init__(self, prefill: float, decode: float, capacity_blocks: int = 10_000) -> None:
        self.kv_capacity_blocks = capacity_blocks
        self.prefill = prefill
        self.decode = decode

    def batch_time(self, prefills, num_decodes, decode_kv_tokens) -> float:
        return self.prefill if prefills else self.decode


def make_workload(arrival, prompt_tokens, output_tokens, tier=None) -> Workload:
    arrival = np.asarray(arrival, dtype=np.float64)
    tier = np.zeros(len(arrival), dtype=np.int64) if tier is None else np.asarray(tier)
    return Workload(
        arrival=arrival,
        prompt_tokens=np.asarray(prompt_tokens, dtype=np.int64),
        output_tokens=np.asarray(output_tokens, dtype=np.int64),
        tier=tier.astype(np.int64),
        description=f"test workload of {len(arrival)} requests",
    )


def make_config(**sections):
    """A config from nested dicts, e.g. make_config(cluster={'instances': 2})."""
    return load_config(base={"name": "test", **sections})


def placed(config: SimulationConfig, targets) -> GlobalScheduler:
    """The configured global scheduler, except that the i-th request goes to ``targets[i]``."""
    return GlobalScheduler(
        config.scheduler, config.workload.priority.tiers, dispatch_rule=FixedPlacement(targets)
    )


def make_transfer(stage_latency: float = 0.01, bandwidth: float = 2.5e9) -> TransferModel:
    """A LLaMA-7B-sized KV transfer model with explicit constants."""
    return TransferModel(
        block_bytes=16 * 524_288,
        tensor_parallel=1,
        stage_latency=stage_latency,
        gpu_bandwidth=bandwidth,
        network_bandwidth=bandwidth,
    )
