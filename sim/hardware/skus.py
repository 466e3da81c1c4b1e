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
    """NVIDIA A10 (GA102): datasheet figures (125 TFLOP/s FP16 tensor dense, 24 GB GDDR6,
    600 GB/s: https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf;
    72 SMs: NVIDIA's GA102 A10 configuration) plus the memory total vLLM sizes against."""

    fp16_tflops: int = 125
    total_memory_gb: int = 24
    memory_bandwidth_gb_per_s: float = 600.0
    num_sms: int = 72
    # The total memory CUDA reports (torch.cuda.get_device_properties().total_memory), which
    # vLLM sizes its KV cache against. It depends on the driver: ECC takes 6.25% of GDDR6 off
    # the top, and newer drivers keep more for themselves. 22,731 MiB is the A10's total on the
    # R470 drivers of Alibaba Cloud's A10 machines in the artifact's time (nvidia-smi
    # "0MiB / 22731MiB", ECC on, driver 470.82.01, PAI-DSW, Nov 2023; torch's out-of-memory
    # messages print the same total, "22.20 GiB total capacity"). Later drivers: 22,515.75 MiB
    # (R535, deviceQuery 23,609,475,072 B), 22,599 MiB (R570); nvidia-smi then shows 23,028 MiB.
    visible_memory_bytes: int = 22_731 * 2**20

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

    Shapes are the models' published configs (huggyllama/llama-7b and -30b ``config.json``:
    layers, heads, hidden size, intermediate size, vocabulary). ``max_model_len`` is what the
    artifact's vLLM serves: its ``vllm/config.py`` (``osdi24ae``) hard-codes 16,384 in
    SchedulerConfig instead of LLaMA-1's 2,048-token training context.
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
