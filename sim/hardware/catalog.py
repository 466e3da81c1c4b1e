"""What hardware the simulator knows: model and device names, their Vidur configs, profile paths.

The one list of profiled layouts (``LAYOUTS``) drives both the profile build and loading, so a
layout is either fully supported (profiles shipped, calibrated) or rejected with a message
that lists what is. A layout names its device and node SKU entries (``skus``), whose data
generic code reads through ``Layout.device_sku`` and ``Layout.node_sku``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vidur.config import BaseDeviceSKUConfig, BaseNodeSKUConfig

# (importing skus registers its SKU and model subclasses with Vidur)
from sim.hardware.skus import DeviceData, NodeData, device_data, node_data

DATA_DIR = Path(__file__).parent / "data"
PROFILES_DIR = DATA_DIR / "profiles"
MEASUREMENTS_CSV = DATA_DIR / "a10_measurements.csv"
KV_CAPACITY_CSV = DATA_DIR / "a10_kv_capacity.csv"
LINEAR_LAYERS_CSV = DATA_DIR / "ga102_linear_layers.csv"
LIGHT_DECODE_CSV = DATA_DIR / "light_decode_references.csv"
DEVICE_REFERENCES_CSV = DATA_DIR / "device_references.csv"
DECODE_ATTENTION_CSV = DATA_DIR / "ga102_decode_attention.csv"
PREFILL_ATTENTION_CSV = DATA_DIR / "ga102_prefill_attention.csv"
FIT_JSON = PROFILES_DIR / "a10_fit.json"


class UnknownHardwareError(ValueError):
    """A model, device or tensor-parallel layout we have no profiles for."""


@dataclass(frozen=True)
class Layout:
    """One profiled instance layout: a model on ``tensor_parallel`` GPUs of one device type."""

    model: str  # our short name, e.g. "llama-7b"
    vidur_model: str  # the model config's Vidur name
    device: str  # Vidur device SKU type string
    node: str  # Vidur node SKU type string
    tensor_parallel: int

    @property
    def device_sku(self) -> DeviceData:
        """The device SKU entry's data (memory total, overhead reference, price, profiles…)."""
        return device_data(BaseDeviceSKUConfig.create_from_type_string(self.device))

    @property
    def node_sku(self) -> NodeData:
        """The node SKU entry's data (the link between instances)."""
        return node_data(BaseNodeSKUConfig.create_from_type_string(self.node))

    @property
    def transfer_fit_json(self) -> Path:
        """The KV-transfer fit of this layout's node (``transfer``)."""
        return DATA_DIR / self.node_sku.transfer_fit

    @property
    def compute_dir(self) -> Path:
        """Vidur's compute-profile dataset layout: one folder per device and model."""
        return PROFILES_DIR / "compute" / self.device / self.vidur_model

    @property
    def network_dir(self) -> Path:
        return PROFILES_DIR / "network" / self.node

    def profile_files(self) -> tuple[Path, Path, Path, Path]:
        """(mlp, attention, all_reduce, send_recv), as Vidur's ``_get_input_files`` returns them.

        ``send_recv.csv.xz`` is never shipped: it is read only with pipeline parallelism,
        which no layout here uses. ``all_reduce.csv.xz`` exists for multi-GPU nodes only.
        """
        return (
            self.compute_dir / "mlp.csv.xz",
            self.compute_dir / "attention.csv.xz",
            self.network_dir / "all_reduce.csv.xz",
            self.network_dir / "send_recv.csv.xz",
        )

    def replica_config(self):
        """Vidur's ReplicaConfig for this layout (one pipeline stage)."""
        from vidur.config import ReplicaConfig

        return ReplicaConfig(
            model_name=self.vidur_model,
            device=self.device,
            network_device=self.node,
            tensor_parallel_size=self.tensor_parallel,
            num_pipeline_stages=1,
        )


LAYOUTS = (
    Layout("llama-7b", "huggyllama/llama-7b", "a10", "a10_pcie_1", 1),
    Layout("llama-30b", "huggyllama/llama-30b", "a10", "a10_pcie_4", 4),
    Layout("llama-7b", "huggyllama/llama-7b", "a100_80gb", "a100_80gb_1", 1),
    Layout("llama-7b", "huggyllama/llama-7b", "h100_80gb", "h100_80gb_1", 1),
    Layout("llama-7b", "huggyllama/llama-7b", "a100_40gb", "a100_40gb_1", 1),
    Layout("llama-3.1-8b", "meta-llama/Llama-3.1-8B", "a100_80gb", "a100_80gb_1", 1),
    Layout("llama-3.1-8b", "meta-llama/Llama-3.1-8B", "h100_80gb", "h100_80gb_1", 1),
    # the 70B models on 2, 4 or 8 GPUs of one 8-GPU machine: a pool names its tensor_parallel
    Layout("llama-2-70b", "meta-llama/Llama-2-70b", "a100_80gb", "a100_80gb_8", 2),
    Layout("llama-2-70b", "meta-llama/Llama-2-70b", "a100_80gb", "a100_80gb_8", 4),
    Layout("llama-2-70b", "meta-llama/Llama-2-70b", "a100_80gb", "a100_80gb_8", 8),
    Layout("llama-2-70b", "meta-llama/Llama-2-70b", "h100_80gb", "h100_80gb_8", 2),
    Layout("llama-2-70b", "meta-llama/Llama-2-70b", "h100_80gb", "h100_80gb_8", 4),
    Layout("llama-2-70b", "meta-llama/Llama-2-70b", "h100_80gb", "h100_80gb_8", 8),
    Layout("llama-3.1-70b", "meta-llama/Llama-3.1-70B", "a100_80gb", "a100_80gb_8", 2),
    Layout("llama-3.1-70b", "meta-llama/Llama-3.1-70B", "a100_80gb", "a100_80gb_8", 4),
    Layout("llama-3.1-70b", "meta-llama/Llama-3.1-70B", "a100_80gb", "a100_80gb_8", 8),
    Layout("llama-3.1-70b", "meta-llama/Llama-3.1-70B", "h100_80gb", "h100_80gb_8", 2),
    Layout("llama-3.1-70b", "meta-llama/Llama-3.1-70B", "h100_80gb", "h100_80gb_8", 4),
    Layout("llama-3.1-70b", "meta-llama/Llama-3.1-70B", "h100_80gb", "h100_80gb_8", 8),
)
DEFAULT_DEVICE = "a10"  # what load_replica_model uses when no device is named


def known_models(device: str | None = None) -> list[str]:
    """The catalog's models (on ``device``, when one is named)."""
    return list(dict.fromkeys(layout.model for layout in LAYOUTS if device in (None, layout.device)))


def known_devices() -> list[str]:
    return list(dict.fromkeys(layout.device for layout in LAYOUTS))


def find_layout(model: str, device: str, tensor_parallel: int | None) -> Layout:
    """The profiled layout for these names; ``tensor_parallel=None`` picks the model's only one
    on the device (a model profiled at several degrees there needs one named)."""
    if model not in known_models():
        raise UnknownHardwareError(f"unknown model {model!r}; known models: {', '.join(known_models())}")
    if device not in known_devices():
        raise UnknownHardwareError(
            f"unknown device {device!r}; known devices: {', '.join(known_devices())}"
        )
    candidates = [
        layout
        for layout in LAYOUTS
        if layout.model == model
        and layout.device == device
        and tensor_parallel in (None, layout.tensor_parallel)
    ]
    if len(candidates) > 1:
        degrees = ", ".join(str(layout.tensor_parallel) for layout in candidates)
        raise UnknownHardwareError(
            f"{model} on {device} is profiled at tensor_parallel {degrees}: set tensor_parallel "
            f"to one of them"
        )
    if not candidates:
        available = ", ".join(
            f"{layout.model} on {layout.device} with tensor_parallel={layout.tensor_parallel}"
            for layout in LAYOUTS
        )
        raise UnknownHardwareError(
            f"no profiles for {model} on {device} with tensor_parallel={tensor_parallel}; "
            f"profiled layouts: {available}"
        )
    return candidates[0]
