"""Names, Vidur registration of the A10 SKUs and LLaMA-1 configs, unknown-hardware errors, and
hardware as data: generic code reads a SKU entry's data, never the A10's."""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pandas as pd
import pytest
from vidur.config import BaseDeviceSKUConfig, BaseModelConfig, BaseNodeSKUConfig, CacheConfig
from vidur.types import BaseIntEnum, DeviceSKUType, NodeSKUType

import sim.hardware.catalog as catalog
from sim.config import ConfigError, load_config
from sim.hardware import UnknownHardwareError, known_models, load_replica_model
from sim.hardware.catalog import LAYOUTS, Layout, find_layout
from sim.hardware.memory import ProfileRunMemoryPlanner
from sim.hardware.overheads import engine_overheads
from sim.hardware.predictor_settings import predictor_config
from sim.hardware.replica_model import content_hash
from sim.hardware.skus import (
    VIDUR_MEASURED,
    A10DeviceSKUConfig,
    A10Pcie1NodeSKUConfig,
    A10Pcie4NodeSKUConfig,
    DeviceData,
    LlumsimDeviceSKUType,
    LlumsimNodeSKUType,
    NodeData,
    PredictorSetting,
)
from sim.hardware.transfer import load_transfer_model
from sim.metrics.cost import cost_summary, describe_price


def test_known_models():
    assert known_models() == ["llama-7b", "llama-30b", "llama-3.1-8b", "llama-2-70b", "llama-3.1-70b"]
    assert known_models("a10") == ["llama-7b", "llama-30b"]
    assert known_models("h100_80gb") == ["llama-7b", "llama-3.1-8b", "llama-2-70b", "llama-3.1-70b"]


def test_enum_values_do_not_collide_with_vidurs():
    """Equal IntEnum values compare equal across enums; a clash would resolve to Vidur's SKU."""
    assert not {int(t) for t in LlumsimDeviceSKUType} & {int(t) for t in DeviceSKUType}
    assert not {int(t) for t in LlumsimNodeSKUType} & {int(t) for t in NodeSKUType}
    assert isinstance(BaseDeviceSKUConfig.create_from_type(LlumsimDeviceSKUType.A10), A10DeviceSKUConfig)


def test_vidur_resolves_our_skus_from_its_type_strings():
    """ReplicaConfig looks devices and nodes up with create_from_type_string."""
    seven_b, thirty_b = (find_layout(model, "a10", None).replica_config() for model in known_models("a10"))
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
    assert [(layout.model, layout.tensor_parallel) for layout in LAYOUTS if layout.device == "a10"] == [
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


# -- hardware as data: a SKU entry that is not the A10 -------------------------------------


class ToySKUType(BaseIntEnum):
    """Far from Vidur's (1..6) and llumsim's (101..114) values: IntEnums compare by value."""

    TOY_GPU = 191
    TOY_NODE = 192


@dataclass
class ToyDeviceSKUConfig(BaseDeviceSKUConfig, DeviceData):
    """A device entry with the required data and nothing of the A10's."""

    fp16_tflops: int = 200
    total_memory_gb: int = 48
    memory_bandwidth_gb_per_s: float = 900.0
    num_sms: int = 100
    visible_memory_bytes: int = 40 * 2**30
    cpu_overheads: str = "cpu_overheads_vidur_a40_llama2_7b_tp1.csv"
    decode_attention: str = "ga102_decode_attention.csv"
    gpu_hour_price: Optional[float] = 2.5
    profiles: str = VIDUR_MEASURED
    predictor: PredictorSetting = PredictorSetting("toy-measured", 3, 8, 5, 3)
    deployed_engine: str = "vllm-v1"

    @staticmethod
    def get_type() -> ToySKUType:
        return ToySKUType.TOY_GPU


@dataclass
class ToyNodeSKUConfig(BaseNodeSKUConfig, NodeData):
    device_sku_type: ToySKUType = ToySKUType.TOY_GPU
    num_devices_per_node: int = 1
    transfer_fit: str = "toy_transfer_fit.json"

    @staticmethod
    def get_type() -> ToySKUType:
        return ToySKUType.TOY_NODE


TOY = Layout("llama-7b", "huggyllama/llama-7b", "toy_gpu", "toy_node", 1)


def test_every_catalog_layout_names_sku_entries_with_llumsim_data():
    for layout in LAYOUTS:
        assert isinstance(layout.device_sku, DeviceData) and isinstance(layout.node_sku, NodeData)
        assert layout.transfer_fit_json.exists()
    # a Vidur SKU without llumsim's entry is refused, naming what to add
    with pytest.raises(TypeError, match="a40 has no llumsim entry: derive it from sim.hardware.skus.DeviceData"):
        Layout("llama-7b", "huggyllama/llama-7b", "a40", "a40_pairwise_nvlink", 1).device_sku


def test_memory_sizing_reads_the_memory_total_from_the_entry():
    def planner(layout: Layout) -> ProfileRunMemoryPlanner:
        return ProfileRunMemoryPlanner(layout.replica_config(), CacheConfig(block_size=16), 0.9, 12800)

    toy, a10 = planner(TOY), planner(find_layout("llama-7b", "a10", None))
    block = toy.kv_bytes_per_token_per_device() * 16
    assert toy.peak_bytes() == a10.peak_bytes()  # the same model and profile run
    assert toy.get_num_blocks() == math.floor((0.9 * 40 * 2**30 - toy.peak_bytes()) / block)
    assert toy.get_num_blocks() > a10.get_num_blocks()


def test_transfer_reads_the_nodes_fit(tmp_path, monkeypatch):
    fit = {"stage_latency": 0.005, "gpu_bandwidth": 8e9, "network_bandwidth": 2e10}
    (tmp_path / "toy_transfer_fit.json").write_text(json.dumps(fit))
    monkeypatch.setattr(catalog, "DATA_DIR", tmp_path)
    transfer = load_transfer_model(TOY, kv_bytes_per_token=1024, block_size=16)
    assert (transfer.stage_latency, transfer.gpu_bandwidth, transfer.network_bandwidth) == tuple(fit.values())
    assert transfer.tensor_parallel == 1 and transfer.block_bytes == 1024 * 16


def test_predictor_overheads_and_cache_key_come_from_the_entry():
    config = predictor_config(TOY, cache_dir="")
    assert config.prediction_hf_collection == "toy-measured"
    assert (config.num_estimators, config.max_depth, config.min_samples_split, config.k_fold_cv_splits) == (
        [3], [8], [5], 3
    )
    assert content_hash(TOY) != content_hash(find_layout("llama-7b", "a10", None))
    assert engine_overheads(TOY.device_sku.cpu_overheads).base_ms == pytest.approx(1.6328)
    with pytest.raises(ValueError, match="unknown CPU-overhead reference 'h100.csv': no file"):
        engine_overheads("h100.csv")


def test_the_profile_builder_builds_only_the_layouts_whose_entry_says_so():
    from sim.hardware.build_profiles import built_layouts

    a10 = tuple(layout for layout in LAYOUTS if layout.device == "a10")
    # the toy ships measured profiles; the A100 and H100 take Vidur's measured operators
    assert built_layouts(LAYOUTS + (TOY,)) == a10


def test_cost_per_pool_uses_its_pools_sku_price_when_asked(monkeypatch):
    monkeypatch.setattr(catalog, "LAYOUTS", LAYOUTS + (TOY,))
    pools = [{"name": "a10s"}, {"name": "toys", "device": "toy_gpu"}]
    flat = load_config(base={"pools": pools})
    priced = load_config(base={"pools": pools, "cost": {"sku_prices": True}})
    seconds = {"a10s": 3600.0, "toys": 7200.0}
    assert cost_summary(flat, seconds, 3600.0, pd.Series([1.0]))["cost"] == 3.0  # = GPU-hours
    cost = cost_summary(priced, seconds, 3600.0, pd.Series([1.0]))
    assert cost["cost"] == pytest.approx(1.29 + 2 * 2.5)
    assert cost["gpu_hour_price"] == {"a10s": 1.29, "toys": 2.5}
    assert describe_price(priced) == "per GPU-hour 1.29 (a10s), 2.5 (toys)"
    assert describe_price(flat) == "1 per GPU-hour"


def test_sku_prices_refuse_a_device_without_a_list_price(monkeypatch):
    free = ToyDeviceSKUConfig(gpu_hour_price=None)
    monkeypatch.setattr(Layout, "device_sku", property(lambda layout: free))
    config = load_config(base={"cost": {"sku_prices": True}})
    with pytest.raises(ConfigError, match="cost.sku_prices: pool cluster's device a10 has no list price"):
        cost_summary(config, {"cluster": 3600.0}, 3600.0, pd.Series([1.0]))


# -- generic code names no catalog device -------------------------------------------------

SIM = Path(__file__).resolve().parents[1] / "sim"
# Modules that are about one device by nature, and so may name it. Everything else is generic.
DEVICE_MODULES = {
    "hardware/skus.py": "the SKU entries",
    "hardware/catalog.py": "the layouts and their data files",
    "hardware/calibration.py": "the A10 measurement table and what its rows ask",
    "hardware/build_profiles.py": "the fit to the A10 table (its A10 transfers)",
    "hardware/provenance_note.py": "the text of the A10 profiles' note",
    "hardware/calibration_report.py": "the A10 calibration report",
    "hardware/calibration_plot.py": "draws the A10 calibration report",
}
# A value a generic module may hold anyway, and why.
ALLOWED_VALUES = {
    "config/schema.py": {"a10": "cluster.device's default (config data, like LAYOUTS)"},
    "studies/fingerprint.py": {  # overrides of canonical runs, config data: the GPU each covers
        "cluster.device=a100_80gb": "the A100's canonical run", "cluster.device=h100_80gb": "the H100's canonical run"},
}


def device_tokens() -> re.Pattern:
    """A catalog device, node or die name as a word inside an identifier or a key: ``a10`` in
    ``A10DeviceSKUConfig``, ``on_a10_ms``, ``"a10_pcie_4"``; not in ``data10`` or ``a100``."""
    names = {layout.device for layout in LAYOUTS} | {layout.node for layout in LAYOUTS} | {"ga102"}
    words = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
    return re.compile(rf"(?<![a-z])({words})(?![0-9])")


def naming_violations(source: str, allowed: dict[str, str] = {}) -> list[str]:
    """Identifiers, and string constants that are names or keys (no whitespace: prose about the
    A10 is fine), naming a catalog device; docstrings and comments are prose."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    pattern, found = device_tokens(), []
    for node in ast.walk(tree):
        names = {
            ast.Name: lambda n: [n.id],
            ast.Attribute: lambda n: [n.attr],
            ast.alias: lambda n: [n.name, n.asname or ""],
            ast.FunctionDef: lambda n: [n.name],
            ast.ClassDef: lambda n: [n.name],
            ast.arg: lambda n: [n.arg],
            ast.keyword: lambda n: [n.arg or ""],
        }.get(type(node), lambda n: [])(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if not re.search(r"\s", node.value) and node.value not in allowed:
                names.append(node.value)
        found += [f"line {node.lineno}: {name}" for name in names if pattern.search(name.lower())]
    return found


def test_generic_modules_name_no_catalog_device():
    """Generic code reads a device through its SKU entry (``Layout.device_sku``, ``node_sku``),
    never an A10 class, constant or attribute, nor a device name as a key."""
    violations = {
        str(path.relative_to(SIM)): found
        for path in sorted(SIM.rglob("*.py"))
        if str(path.relative_to(SIM)) not in DEVICE_MODULES
        and (found := naming_violations(path.read_text(), ALLOWED_VALUES.get(str(path.relative_to(SIM)), {})))
    }
    assert violations == {}


@pytest.mark.parametrize(
    "source",
    [
        "from sim.hardware.skus import A10DeviceSKUConfig\n",
        "total = config.a10_visible_memory_bytes\n",
        "def load(device='a10'): pass\n",
        "fit = FITS['a10_pcie_4']\n",
        "COLLECTION = 'ga102-perf-model'\n",
    ],
)
def test_the_naming_rule_catches_an_a10_name(source):
    assert naming_violations(source)


def test_the_naming_rule_leaves_prose_and_other_names_alone():
    assert naming_violations('"""On an A10."""\nmessage = "the A10 table"\ndata10 = a100 = 1\n') == []
