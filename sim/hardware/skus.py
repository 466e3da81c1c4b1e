"""The hardware llumsim knows, as data: one entry per device SKU and per node SKU, and the
LLaMA-1, Llama-2-70B and Llama-3.1 model configs, registered with Vidur from outside.

Vidur finds configs by walking the subclasses of its base config classes, so defining a
subclass is the whole registration; importing this module makes them visible. The type enums
use values far from Vidur's own (1..6): IntEnum members of different enums compare equal by
value, and a clash would make Vidur resolve our type to one of its SKUs.

A device entry is a ``BaseDeviceSKUConfig`` subclass that also derives from ``DeviceData``
(what llumsim's generic code reads of a device: memory total, datasheet figures, CPU-overhead
reference, price, profile source, predictor setting); a node entry derives from ``NodeData``
(the link between instances). The two mixins are plain dataclasses, not Vidur subclasses, so
Vidur's subclass walk never meets a class without ``get_type``. Generic code reads an entry
only through ``device_data`` / ``node_data`` (``Layout.device_sku`` / ``Layout.node_sku``),
never an entry's class or a field only one entry has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, TypeVar

from vidur.config.device_sku_config import BaseDeviceSKUConfig
from vidur.config.model_config import (
    Llama2_70BModelConfig,
    Llama2ModelConfig,
    Llama38BModelConfig,
    Llama370BModelConfig,
)
from vidur.config.node_sku_config import BaseNodeSKUConfig
from vidur.types import BaseIntEnum

# Where a device's profiles come from (``DeviceData.profiles``):
PERF_MODEL = "perf-model"  # written by ``build_profiles`` from the GA102 performance model
VIDUR_MEASURED = "vidur"  # Vidur's own measured profiles, copied under data/profiles as data
# Vidur's measured token operators (mlp.csv) with attention from the performance model, both
# written by ``operator_profiles`` (Vidur's attention profiles are FlashAttention's)
VIDUR_OPERATORS = "vidur-operators"


@dataclass(frozen=True)
class PredictorSetting:
    """One random-forest setting of Vidur's predictor (a one-point grid) and the collection
    name Vidur keys its prediction caches by."""

    collection: str  # Vidur's prediction_hf_collection: where these profiles come from
    num_estimators: int
    max_depth: int
    min_samples_split: int
    k_fold_cv_splits: int

    def recipe(self) -> dict[str, int]:
        """The forest's part of a prediction table's content hash (``replica_model``)."""
        return {
            "NUM_ESTIMATORS": self.num_estimators,
            "MAX_DEPTH": self.max_depth,
            "MIN_SAMPLES_SPLIT": self.min_samples_split,
            "K_FOLD_CV_SPLITS": self.k_fold_cv_splits,
        }


def exact_fit(collection: str) -> PredictorSetting:
    """The setting for noise-free profiles on the lookup grid (what ``build_profiles`` writes):
    one forest setting instead of Vidur's 27-point grid search with 10-fold CV (~24 min here).
    Without bootstrap, fully grown trees return each profiled value exactly and are piecewise
    constant (hence monotone) in between. Two folds is the least GridSearchCV takes. Measured,
    noisy profiles want Vidur's own grid search instead."""
    return PredictorSetting(
        collection, num_estimators=1, max_depth=64, min_samples_split=2, k_fold_cv_splits=2
    )


@dataclass
class DeviceData:
    """What llumsim reads of a device SKU besides Vidur's ``fp16_tflops``/``total_memory_gb``.

    Every field is required (no defaults): an entry that leaves one out cannot be built."""

    memory_bandwidth_gb_per_s: float  # datasheet DRAM bandwidth
    num_sms: int  # streaming multiprocessors
    # The total memory CUDA reports (torch.cuda.get_device_properties().total_memory), which
    # vLLM sizes its KV cache against (``memory``).
    visible_memory_bytes: int
    # The engine's CPU work per iteration (``overheads``): a CSV under sim/hardware/data of
    # vLLM's CPU phases per batch size, profiled on this device or the nearest one profiled.
    cpu_overheads: str
    # On-demand list price in USD per GPU-hour (``cost.sku_prices``); None: no citable price.
    gpu_hour_price: Optional[float]
    profiles: str  # PERF_MODEL or VIDUR_MEASURED
    predictor: PredictorSetting  # Vidur's random-forest setting for these profiles
    # Vidur's measurement of FlashAttention's decode kernel on this device or the nearest one
    # measured (a CSV under sim/hardware/data), from which vLLM V1's decode attention is carried
    # (``flash_attention``)
    decode_attention: str
    # the serving engine this GPU's deployments run in what llumsim models of it: the Llumnix
    # artifact's vllm-0.1.2 on its A10 testbed, vLLM V1 on today's data-centre GPUs. A pool
    # on another engine is told so once (``sim.metrics.summary.engine_note``)
    deployed_engine: str


@dataclass
class NodeData:
    """What llumsim reads of a node SKU: the KV-transfer link between its instances."""

    # the fitted transfer constants (``transfer``): a JSON file under sim/hardware/data
    transfer_fit: str


Data = TypeVar("Data", DeviceData, NodeData)


def entry_data(config: object, data: type[Data]) -> Data:
    """A Vidur SKU config as llumsim's data; a Vidur SKU without llumsim's entry is refused."""
    if not isinstance(config, data):
        raise TypeError(
            f"SKU {config.get_type()} has no llumsim entry: derive it from "
            f"sim.hardware.skus.{data.__name__} (see docs/replica-model.md, 'Adding a device')"
        )
    return config


def device_data(config: BaseDeviceSKUConfig) -> DeviceData:
    return entry_data(config, DeviceData)


def node_data(config: BaseNodeSKUConfig) -> NodeData:
    return entry_data(config, NodeData)


class LlumsimDeviceSKUType(BaseIntEnum):
    A10 = 101
    A100_80GB = 102
    H100_80GB = 103
    A100_40GB = 104


class LlumsimNodeSKUType(BaseIntEnum):
    A10_PCIE_1 = 111
    A10_PCIE_4 = 114
    A100_80GB_1 = 121
    A100_80GB_8 = 128
    H100_80GB_1 = 131
    H100_80GB_8 = 138
    A100_40GB_1 = 141


@dataclass
class A10DeviceSKUConfig(BaseDeviceSKUConfig, DeviceData):
    """NVIDIA A10 (GA102): datasheet figures (125 TFLOP/s FP16 tensor dense, 24 GB GDDR6,
    600 GB/s: https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf;
    72 SMs: NVIDIA's GA102 A10 configuration) plus llumsim's data (``DeviceData``)."""

    fp16_tflops: int = 125
    total_memory_gb: int = 24
    memory_bandwidth_gb_per_s: float = 600.0
    num_sms: int = 72
    # The total depends on the driver: ECC takes 6.25% of GDDR6 off the top, and newer
    # drivers keep more for themselves. 22,731 MiB is the A10's total on the R470 drivers
    # of Alibaba Cloud's A10 machines in the artifact's time (nvidia-smi
    # "0MiB / 22731MiB", ECC on, driver 470.82.01, PAI-DSW, Nov 2023; torch's out-of-memory
    # messages print the same total, "22.20 GiB total capacity"). Later drivers: 22,515.75 MiB
    # (R535, deviceQuery 23,609,475,072 B), 22,599 MiB (R570); nvidia-smi then shows 23,028 MiB.
    visible_memory_bytes: int = 22_731 * 2**20
    # No profile of vLLM's CPU phases on an A10 host exists; Vidur's A40 rows are the same
    # GA102 die and LLaMA-2-7B at TP1 (``overheads`` says which rows and why the means).
    cpu_overheads: str = "cpu_overheads_vidur_a40_llama2_7b_tp1.csv"
    decode_attention: str = "ga102_decode_attention.csv"  # Vidur's A40: the same GA102 die
    deployed_engine: str = "vllm-0.1.2"  # the Llumnix artifact's testbed
    # Lambda's On-Demand Cloud, "1x NVIDIA A10": $1.29 per GPU per hour (24 GB, 30 vCPUs,
    # 226 GiB RAM), https://lambda.ai/instances as read on 2026-09-20 — second hand: the
    # transcription in github.com/api-evangelist/lambda-labs plans/lambda-labs-plans-pricing.yml
    # (commit 1929382e7f9b4777d980aec12b6fc9e04e6718cb). List prices move; the artifact's
    # Alibaba Cloud machines were not priced here.
    gpu_hour_price: Optional[float] = 1.29
    profiles: str = PERF_MODEL
    predictor: PredictorSetting = exact_fit("ga102-perf-model")

    @staticmethod
    def get_type() -> LlumsimDeviceSKUType:
        return LlumsimDeviceSKUType.A10


# Both A10 nodes share one fit (``python -m sim.bench.fit_transfer``): stage latency and
# per-GPU bandwidth to the LLaMA-7B migration rows of the Llumnix artifact's Figure 10 (one
# A10), the instance's network bandwidth to the paper's LLaMA-30B blocking copy (4 x A10).
A10_TRANSFER_FIT = "transfer_fit.json"


@dataclass
class A10Pcie1NodeSKUConfig(BaseNodeSKUConfig, NodeData):
    """One A10 per instance (LLaMA-7B)."""

    device_sku_type: LlumsimDeviceSKUType = LlumsimDeviceSKUType.A10
    num_devices_per_node: int = 1
    transfer_fit: str = A10_TRANSFER_FIT

    @staticmethod
    def get_type() -> LlumsimNodeSKUType:
        return LlumsimNodeSKUType.A10_PCIE_1


@dataclass
class A10Pcie4NodeSKUConfig(BaseNodeSKUConfig, NodeData):
    """Four A10s on PCIe 4.0, no NVLink (LLaMA-30B with tensor parallelism 4)."""

    device_sku_type: LlumsimDeviceSKUType = LlumsimDeviceSKUType.A10
    num_devices_per_node: int = 4
    transfer_fit: str = A10_TRANSFER_FIT

    @staticmethod
    def get_type() -> LlumsimNodeSKUType:
        return LlumsimNodeSKUType.A10_PCIE_4


# The A100 and H100 entries take Vidur's measured token operators of LLaMA-2-7B on that GPU
# (``operator_profiles``) and its CPU phases on an A100 host; their KV transfer between
# instances is the artifact's migration as fitted on the A10s (no migration measurement on
# these GPUs exists): what the artifact's software path achieves, not what NVLink could.
A100_CPU_OVERHEADS = "cpu_overheads_vidur_a100_llama2_7b_tp1.csv"
# Vidur measured FlashAttention's decode on the A100 80GB; the H100 and the A100 40GB carry it
# by their bandwidth (``flash_attention``)
A100_DECODE_ATTENTION = "a100_80gb_decode_attention.csv"
# The totals CUDA reports (cudaDeviceProp.totalGlobalMem, what torch's total_memory reads), as
# deviceQuery prints them: A100-SXM4-80GB 85,100,068,864 B (driver 12.5, github.com/thamada/
# nvidia-smi nvsim/A100SXMx4_deviceQuery.py); H100 80GB HBM3 85,045,477,376 B (driver 12.7,
# the same repository's nvsim/H100SXMx8_deviceQuery.py @03fbe6e68c0bb4c28b72d5da786a9712a33cf408).
VISIBLE_A100_80GB = 85_100_068_864
VISIBLE_H100_80GB = 85_045_477_376
# Lambda's On-Demand Cloud per GPU-hour, the 8-GPU SXM machines a fleet is built from
# ("8x NVIDIA A100 SXM 80 GB" $2.79, "8x NVIDIA H100 SXM" $3.99; one H100 alone is $4.29),
# https://lambda.ai/instances as read on 2026-09-20, second hand like the A10's: the
# transcription in github.com/api-evangelist/lambda-labs plans/lambda-labs-plans-pricing.yml
# (commit 1929382e7f9b4777d980aec12b6fc9e04e6718cb).
PRICE_A100_80GB = 2.79
PRICE_H100_80GB = 3.99
# The A100-SXM4-40GB's total as deviceQuery prints it (driver 12.2): "40339 MBytes
# (42298834944 bytes)", github.com/bottlerocket-os/bottlerocket pull request #3873; Lambda's
# "8x NVIDIA A100 SXM 40 GB" at $1.99 per GPU-hour, the same transcription as the prices above.
VISIBLE_A100_40GB = 42_298_834_944
PRICE_A100_40GB = 1.99


@dataclass
class A100_80GBDeviceSKUConfig(BaseDeviceSKUConfig, DeviceData):
    """NVIDIA A100 80GB SXM4 (GA100): 312 TFLOP/s FP16 tensor dense, 80 GB HBM2e at
    2,039 GB/s (NVIDIA A100 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/
    Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), 108 SMs (the
    NVIDIA Ampere architecture whitepaper)."""

    fp16_tflops: int = 312
    total_memory_gb: int = 80
    memory_bandwidth_gb_per_s: float = 2039.0
    num_sms: int = 108
    visible_memory_bytes: int = VISIBLE_A100_80GB
    cpu_overheads: str = A100_CPU_OVERHEADS
    decode_attention: str = A100_DECODE_ATTENTION
    deployed_engine: str = "vllm-v1"
    gpu_hour_price: Optional[float] = PRICE_A100_80GB
    profiles: str = VIDUR_OPERATORS
    predictor: PredictorSetting = exact_fit("a100-80gb-vidur-operators")

    @staticmethod
    def get_type() -> LlumsimDeviceSKUType:
        return LlumsimDeviceSKUType.A100_80GB


@dataclass
class H100_80GBDeviceSKUConfig(BaseDeviceSKUConfig, DeviceData):
    """NVIDIA H100 80GB SXM5 (GH100): 989 TFLOP/s FP16 tensor dense (the datasheet's 1,979 is
    with sparsity), 80 GB HBM3 at 3,350 GB/s (NVIDIA H100 Tensor Core GPU datasheet,
    https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet), 132 SMs
    (the NVIDIA Hopper architecture whitepaper). Its CPU phases: the A100 host's (Vidur
    profiled none on an H100 host)."""

    fp16_tflops: int = 989
    total_memory_gb: int = 80
    memory_bandwidth_gb_per_s: float = 3350.0
    num_sms: int = 132
    visible_memory_bytes: int = VISIBLE_H100_80GB
    cpu_overheads: str = A100_CPU_OVERHEADS
    decode_attention: str = A100_DECODE_ATTENTION
    deployed_engine: str = "vllm-v1"
    gpu_hour_price: Optional[float] = PRICE_H100_80GB
    profiles: str = VIDUR_OPERATORS
    predictor: PredictorSetting = exact_fit("h100-80gb-vidur-operators")

    @staticmethod
    def get_type() -> LlumsimDeviceSKUType:
        return LlumsimDeviceSKUType.H100_80GB


@dataclass
class A100_40GBDeviceSKUConfig(BaseDeviceSKUConfig, DeviceData):
    """NVIDIA A100 40GB SXM4 (GA100): the 80GB card's die, clocks and 312 TFLOP/s FP16 tensor
    dense, with 40 GB of HBM2 at 1,555 GB/s (the NVIDIA A100 datasheet above), 108 SMs. Vidur
    measured no operator on it: its profiles are the 80GB card's measured operators carried
    over by the performance model's ratio between the two datasheets (``operator_profiles
    --measured-on a100_80gb``: the memory-bound ones by the bandwidth ratio)."""

    fp16_tflops: int = 312
    total_memory_gb: int = 40
    memory_bandwidth_gb_per_s: float = 1555.0
    num_sms: int = 108
    visible_memory_bytes: int = VISIBLE_A100_40GB
    cpu_overheads: str = A100_CPU_OVERHEADS
    decode_attention: str = A100_DECODE_ATTENTION
    deployed_engine: str = "vllm-v1"
    gpu_hour_price: Optional[float] = PRICE_A100_40GB
    profiles: str = VIDUR_OPERATORS
    predictor: PredictorSetting = exact_fit("a100-40gb-vidur-operators")

    @staticmethod
    def get_type() -> LlumsimDeviceSKUType:
        return LlumsimDeviceSKUType.A100_40GB


@dataclass
class A100_40GB1NodeSKUConfig(BaseNodeSKUConfig, NodeData):
    """One A100 40GB per instance (LLaMA-7B)."""

    device_sku_type: LlumsimDeviceSKUType = LlumsimDeviceSKUType.A100_40GB
    num_devices_per_node: int = 1
    transfer_fit: str = A10_TRANSFER_FIT

    @staticmethod
    def get_type() -> LlumsimNodeSKUType:
        return LlumsimNodeSKUType.A100_40GB_1


@dataclass
class A100_80GB1NodeSKUConfig(BaseNodeSKUConfig, NodeData):
    """One A100 80GB per instance (LLaMA-7B)."""

    device_sku_type: LlumsimDeviceSKUType = LlumsimDeviceSKUType.A100_80GB
    num_devices_per_node: int = 1
    transfer_fit: str = A10_TRANSFER_FIT

    @staticmethod
    def get_type() -> LlumsimNodeSKUType:
        return LlumsimNodeSKUType.A100_80GB_1


@dataclass
class H100_80GB1NodeSKUConfig(BaseNodeSKUConfig, NodeData):
    """One H100 80GB per instance (LLaMA-7B)."""

    device_sku_type: LlumsimDeviceSKUType = LlumsimDeviceSKUType.H100_80GB
    num_devices_per_node: int = 1
    transfer_fit: str = A10_TRANSFER_FIT

    @staticmethod
    def get_type() -> LlumsimNodeSKUType:
        return LlumsimNodeSKUType.H100_80GB_1


# The 8-GPU SXM machines (NVSwitch between every pair of GPUs: a DGX or HGX board) that an
# instance of 2, 4 or 8 GPUs runs on with tensor parallelism — the machines the list prices
# above are for. Their all-reduce is Vidur's measured one on its DGX nodes (``a100_dgx``,
# ``h100_dgx``; ``network_profiles``), of 2, 4 and 8 GPUs within one node; their KV transfer,
# like the one-GPU nodes', the artifact's migration as fitted on the A10s.


@dataclass
class A100_80GB8NodeSKUConfig(BaseNodeSKUConfig, NodeData):
    """Eight A100 80GB SXM4 on NVSwitch; an instance takes 2, 4 or 8 (Llama-2-70B, Llama-3.1-70B)."""

    device_sku_type: LlumsimDeviceSKUType = LlumsimDeviceSKUType.A100_80GB
    num_devices_per_node: int = 8
    transfer_fit: str = A10_TRANSFER_FIT

    @staticmethod
    def get_type() -> LlumsimNodeSKUType:
        return LlumsimNodeSKUType.A100_80GB_8


@dataclass
class H100_80GB8NodeSKUConfig(BaseNodeSKUConfig, NodeData):
    """Eight H100 80GB SXM5 on NVSwitch; an instance takes 2, 4 or 8 (Llama-2-70B, Llama-3.1-70B)."""

    device_sku_type: LlumsimDeviceSKUType = LlumsimDeviceSKUType.H100_80GB
    num_devices_per_node: int = 8
    transfer_fit: str = A10_TRANSFER_FIT

    @staticmethod
    def get_type() -> LlumsimNodeSKUType:
        return LlumsimNodeSKUType.H100_80GB_8


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


# Today's models. Vidur 0.0.26 has configs of their shapes (``Llama38BModelConfig``,
# ``Llama370BModelConfig``, ``Llama2_70BModelConfig``); each is subclassed under the model's own
# name, which Vidur finds configs by (its own names stay its own), with what differs from it.
# Shapes, from the models' ``config.json``: Llama-3.1-8B 32 layers, hidden 4,096, 32 query and
# 8 KV heads (grouped-query attention), intermediate 14,336, vocabulary 128,256; Llama-3.1-70B
# and Llama-2-70B 80 layers, hidden 8,192, 64 query and 8 KV heads, intermediate 28,672,
# vocabularies 128,256 and 32,000. ``max_model_len`` is the model's context
# (``max_position_embeddings``); the simulator's sequences stop at the profiles' 16,384 tokens
# whatever it is (``ReplicaModel.max_tokens``).


@dataclass
class Llama3_1_8BModelConfig(Llama38BModelConfig):
    """Llama-3.1-8B: Llama-3-8B's shape with a 131,072-token context (RoPE scaled)."""

    max_model_len: int = 131072

    @staticmethod
    def get_name() -> str:
        return "meta-llama/Llama-3.1-8B"


@dataclass
class Llama3_1_70BModelConfig(Llama370BModelConfig):
    """Llama-3.1-70B: Llama-3-70B's shape with a 131,072-token context (RoPE scaled)."""

    max_model_len: int = 131072

    @staticmethod
    def get_name() -> str:
        return "meta-llama/Llama-3.1-70B"


@dataclass
class Llama2_70BVocab32000ModelConfig(Llama2_70BModelConfig):
    """Llama-2-70B with its own vocabulary, 32,000 tokens. Vidur's ``meta-llama/Llama-2-70b-hf``
    config carries the 32,768 its profiles were taken with (padded), which would size the
    embedding, the LM head and the sampler's memory by 768 tokens too many; it keeps its name,
    so this one takes the model's original-format repository's, ``meta-llama/Llama-2-70b``."""

    vocab_size: int = 32000

    @staticmethod
    def get_name() -> str:
        return "meta-llama/Llama-2-70b"
