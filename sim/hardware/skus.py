"""A10 device and node SKUs and the LLaMA-1 model configs, registered with Vidur from outside.

Vidur finds configs by walking the subclasses of its base config classes, so defining a
subclass is the whole registration; importing this module makes them visible. The type enums
use values far from Vidur's own (1..6): IntEnum members of different enums compare equal by
value, and a clash would make Vidur resolve our type to one of its SKUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from vidur.config.device_sku_config import BaseDeviceSKUConfig
from vidur.config.model_config import Llama2ModelConfig
from vidur.config.node_sku_config import BaseNodeSKUConfig
from vidur.types import BaseIntEnum


class LlumsimDeviceSKUType(BaseIntEnum):
    A10 = 101


class LlumsimNodeSKUType(BaseIntEnum):
    A10_PCIE_1 = 111
    A10_PCIE_4 = 114


@dataclass
class A10DeviceSKUConfig(BaseDeviceSKUConfig):
    """NVIDIA A10 (GA102): datasheet figures plus the two the performance model needs."""

    fp16_tflops: int = 125
    total_memory_gb: int = 24
    memory_bandwidth_gb_per_s: float = 600.0
    num_sms: int = 72
    # What the driver reports as total memory (cudaMemGetInfo / nvidia-smi: 23,028 MiB);
    # vLLM sizes its KV cache against this, not against the marketing 24 GB.
    visible_memory_bytes: int = 24_146_608_128

    @staticmethod
    def get_type() -> LlumsimDeviceSKUType:
        return LlumsimDeviceSKUType.A10


@dataclass
class A10Pcie1NodeSKUConfig(BaseNodeSKUConfig):
    """One A10 per instance (LLaMA-7B)."""

    device_sku_type: LlumsimDeviceSKUType = LlumsimDeviceSKUType.A10
    num_devices_per_node: int = 1

    @staticmethod
    def get_type() -> LlumsimNodeSKUType:
        return LlumsimNodeSKUType.A10_PCIE_1


@dataclass
class A10Pcie4NodeSKUConfig(BaseNodeSKUConfig):
    """Four A10s on PCIe 4.0, no NVLink (LLaMA-30B with tensor parallelism 4)."""

    device_sku_type: LlumsimDeviceSKUType = LlumsimDeviceSKUType.A10
    num_devices_per_node: int = 4

    @staticmethod
    def get_type() -> LlumsimNodeSKUType:
        return LlumsimNodeSKUType.A10_PCIE_4


@dataclass
class Llama1ModelConfig(Llama2ModelConfig):
    """LLaMA-1 shares LLaMA-2's block (RMSNorm, SwiGLU, RoPE) but has a 32,000-token vocabulary.

    ``max_model_len`` covers the 8k-token rows of the calibration table and Vidur's prediction
    range; it is not LLaMA-1's 2,048-token training context.
    """

    vocab_size: int = 32000
    max_model_len: int = 16384


@dataclass
class Llama1_7BModelConfig(Llama1ModelConfig):
    num_layers: int = 32
    num_q_heads: int = 32
    num_kv_heads: int = 32
    embedding_dim: int = 4096
    mlp_hidden_dim: int = 11008

    @staticmethod
    def get_name() -> str:
        return "huggyllama/llama-7b"


@dataclass
class Llama1_30BModelConfig(Llama1ModelConfig):
    num_layers: int = 60
    num_q_heads: int = 52
    num_kv_heads: int = 52
    embedding_dim: int = 6656
    mlp_hidden_dim: int = 17920

    @staticmethod
    def get_name() -> str:
        return "huggyllama/llama-30b"
