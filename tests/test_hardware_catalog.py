"""Names, Vidur registration of the A10 SKUs and LLaMA-1 configs, and unknown-hardware errors."""

from __future__ import annotations

import pytest
from vidur.config import BaseDeviceSKUConfig, BaseModelConfig
from vidur.types import DeviceSKUType, NodeSKUType

from sim.hardware import UnknownHardwareError, known_models, load_replica_model
from sim.hardware.catalog import LAYOUTS, find_layout
from sim.hardware.skus import (
    A10DeviceSKUConfig,
    A10Pcie1NodeSKUConfig,
    A10Pcie4NodeSKUConfig,
    LlumsimDeviceSKUType,
    LlumsimNodeSKUType,
)


def test_known_models():
    assert known_models() == ["llama-7b", "llama-30b"]


def test_enum_values_do_not_collide_with_vidurs():
    """Equal IntEnum values compare equal across enums; a clash would resolve to Vidur's SKU."""
    assert not {int(t) for t in LlumsimDeviceSKUType} & {int(t) for t in DeviceSKUType}
    assert not {int(t) for t in LlumsimNodeSKUType} & {int(t) for t in NodeSKUType}
    assert isinstance(BaseDeviceSKUConfig.create_from_type(LlumsimDeviceSKUType.A10), A10DeviceSKUConfig)


def test_vidur_resolves_our_skus_from_its_type_strings():
    """ReplicaConfig looks devices and nodes up with create_from_type_string."""
    seven_b, thirty_b = (find_layout(model, "a10", None).replica_config() for model in known_models())
    assert isinstance(seven_b.device_config, A10DeviceSKUConfig)
    assert seven_b.device_config.total_memory_gb == 24 and seven_b.device_config.fp16_tflops == 125
    assert isinstance(seven_b.node_config, A10Pcie1NodeSKUConfig)
    assert isinstance(thirty_b.node_config, A10Pcie4NodeSKUConfig)
    assert thirty_b.node_config.num_devices_per_node == thirty_b.tensor_parallel_size == 4


@pytest.mark.parametrize(
    "name, layers, hidden, heads, mlp",
    [("huggyllama/llama-7b", 32, 4096, 32, 11008), ("huggyllama/llama-30b", 60, 6656, 52, 17920)],
)
def test_llama_1_shapes(name, layers, hidden, heads, mlp):
    config = BaseModelConfig.create_from_name(name)
    assert (config.num_layers, config.embedding_dim, config.num_q_heads, config.mlp_hidden_dim) == (
        layers,
        hidden,
        heads,
        mlp,
    )
    assert config.num_kv_heads == heads and config.vocab_size == 32000 and config.use_gated_mlp


def test_default_tensor_parallelism_per_model():
    assert [(layout.model, layout.tensor_parallel) for layout in LAYOUTS] == [
        ("llama-7b", 1),
        ("llama-30b", 4),
    ]
    assert find_layout("llama-30b", "a10", 4) is find_layout("llama-30b", "a10", None)


@pytest.mark.parametrize(
    "model, device, tp, listed",
    [
        ("llama-13b", "a10", None, "llama-7b, llama-30b"),
        ("llama-7b", "h100", None, "known devices: a10"),
        ("llama-7b", "a10", 2, "llama-30b on a10 with tensor_parallel=4"),
    ],
)
def test_unknown_hardware_lists_what_is_known(model, device, tp, listed):
    with pytest.raises(UnknownHardwareError, match=listed) as caught:
        load_replica_model(model, device, tp)
    assert isinstance(caught.value, ValueError)
