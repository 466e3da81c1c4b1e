"""Today's models in the catalog: Llama-3.1-8B (one GPU), Llama-2-70B and Llama-3.1-70B (2, 4 or
8 GPUs) on the A100 80GB and the H100, from Vidur's measured operators and all-reduce."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from vidur.config import BaseModelConfig, CacheConfig
from vidur.utils.memory_planner import MemoryPlanner

from sim.config import load_config
from sim.hardware import UnknownHardwareError
from sim.hardware.catalog import LAYOUTS, PROFILES_DIR, find_layout
from sim.hardware.memory import CUBLAS_WORKSPACE_BYTES, ProfileRunMemoryPlanner
from sim.hardware.skus import VIDUR_OPERATORS
from sim.metrics.cost import gpus_per_instance
from tests.hardware_support import fitted_layouts, replica

NEW_MODELS = ("llama-3.1-8b", "llama-2-70b", "llama-3.1-70b")
NEW = [layout for layout in LAYOUTS if layout.model in NEW_MODELS]
SEVENTY_B = ("llama-2-70b", "llama-3.1-70b")
DEVICES = ("a100_80gb", "h100_80gb")
VIDUR_COMMIT = "7d47513363ec447a741ac5e47241580b47724fbf"


def test_the_catalog_holds_each_model_on_both_gpus_at_its_degrees():
    got = sorted((layout.model, layout.device, layout.tensor_parallel) for layout in NEW)
    want = sorted(
        [("llama-3.1-8b", device, 1) for device in DEVICES]
        + [(model, device, tp) for model in SEVENTY_B for device in DEVICES for tp in (2, 4, 8)]
    )
    assert got == want
    assert {layout.node for layout in NEW if layout.tensor_parallel > 1} == {"a100_80gb_8", "h100_80gb_8"}


@pytest.mark.parametrize(
    "name, vidurs, layers, hidden, heads, kv_heads, mlp, vocab",
    [
        ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3-8B", 32, 4096, 32, 8, 14336, 128256),
        ("meta-llama/Llama-3.1-70B", "meta-llama/Llama-3-70B", 80, 8192, 64, 8, 28672, 128256),
        ("meta-llama/Llama-2-70b", "meta-llama/Llama-2-70b-hf", 80, 8192, 64, 8, 28672, 32000),
    ],
)
def test_model_shapes_are_the_published_configs_and_vidurs(name, vidurs, layers, hidden, heads, kv_heads, mlp, vocab):
    ours, theirs = BaseModelConfig.create_from_name(name), BaseModelConfig.create_from_name(vidurs)
    shape = ("num_layers", "embedding_dim", "num_q_heads", "num_kv_heads", "mlp_hidden_dim")
    assert tuple(getattr(ours, f) for f in shape) == (layers, hidden, heads, kv_heads, mlp)
    assert tuple(getattr(theirs, f) for f in shape) == (layers, hidden, heads, kv_heads, mlp)
    assert ours.vocab_size == vocab and ours.use_gated_mlp
    assert type(BaseModelConfig.create_from_name(vidurs)) is type(theirs)  # Vidur's names stay Vidur's


def test_every_layout_fits_offline():
    assert fitted_layouts() == ()


def test_a_70b_model_needs_its_tensor_parallelism_named():
    with pytest.raises(UnknownHardwareError, match="llama-2-70b on h100_80gb is profiled at tensor_parallel 2, 4, 8"):
        find_layout("llama-2-70b", "h100_80gb", None)
    assert find_layout("llama-3.1-8b", "h100_80gb", None).tensor_parallel == 1
    pool = load_config(base={"pools": [{"name": "big", "model": "llama-3.1-70b", "device": "h100_80gb",
                                        "tensor_parallel": 4}]}).instance_pools()[0]
    assert gpus_per_instance(pool) == 4


@pytest.mark.parametrize("layout", NEW, ids=lambda l: f"{l.model}-{l.device}-tp{l.tensor_parallel}")
def test_kv_bytes_per_token_count_the_kv_heads(layout):
    """Grouped-query attention: 8 KV heads of 128 in every layer, split over the TP ranks, in
    Vidur's MemoryPlanner as in ours (K and V, 2 bytes each)."""
    model = layout.replica_config().model_config
    whole = 2 * model.num_layers * 8 * 128 * 2  # 8B: 128 KiB per token; 70B: 320 KiB
    assert whole == {32: 128 * 1024, 80: 320 * 1024}[model.num_layers]
    planner = ProfileRunMemoryPlanner(layout.replica_config(), CacheConfig(block_size=16), 0.9, 12800)
    vidur = MemoryPlanner(layout.replica_config(), CacheConfig(block_size=16))
    assert planner.kv_bytes_per_token_per_device() == vidur._get_kv_cache_memory_per_device_per_token()
    assert planner.kv_bytes_per_token_per_device() == whole // layout.tensor_parallel
    assert replica(layout.model, layout.device, layout.tensor_parallel).kv_bytes_per_token == whole


def test_llama_3_1_8b_on_one_h100_holds_the_blocks_the_profile_run_leaves():
    """vLLM's rule, by hand, at the defaults (utilisation 0.9, 12,800 batched tokens, 256
    sequences, blocks of 16):

    usable = 0.9 × 85,045,477,376 B (the H100's CUDA total)            = 76,540,929,638.4
    weights: per layer q,k,v 4096·128·(32+8+8) + o 4096·4096 + MLP 3·4096·14336
             = 218,103,808 parameters, × 32 layers × 2 B              = 13,958,643,712
             embedding and LM head 2 · 128,256 · 4096 · 2 B            =  2,101,346,304
             RMSNorms (2 · 32 + 1) · 4096 · 2 B                        =        532,480
    rotary caches 32 · 16,384 · 128 · 2 B                              =    134,217,728
    cuBLAS workspace                                                   =      8,519,680
    profile-run inputs 2 · 12,800 · 8 B + 12,800 · 4 B                 =        256,000
    sampler (widest: 256 × 128,256 = 32,833,536 vocabulary cells)
      model output 12,800 · 4096 · 2 B + pruned 256 · 4096 · 2 B       =    106,954,752
      cells × (2 + 4 + 4) B logits, probs, logprobs                    =    328,335,360
      cells × (4 + 4 + 8 + 1 + 1) B top-p/top-k                        =    591,003,648
      argsort cells × 16 B + its sort's temporaries cells × 24 B       =  1,313,341,440
    peak                                                               = 18,543,151,104
    blocks = ⌊(76,540,929,638.4 − 18,543,151,104) / (131,072 B × 16)⌋  = ⌊27,655.7⌋ = 27,655
    """
    layout = find_layout("llama-3.1-8b", "h100_80gb", 1)
    planner = ProfileRunMemoryPlanner(layout.replica_config(), CacheConfig(block_size=16), 0.9, 12800)
    assert planner.widest_phase() == "sampler"
    assert planner.weight_bytes_per_device() == 13_958_643_712 + 2_101_346_304 + 532_480
    assert planner.persistent_bytes() == 16_060_522_496 + 134_217_728 + CUBLAS_WORKSPACE_BYTES
    assert planner.peak_bytes() == 18_543_151_104
    assert planner.get_num_blocks() == 27_655
    assert replica("llama-3.1-8b", "h100_80gb").kv_capacity_blocks == 27_655


@pytest.mark.parametrize("layout", NEW, ids=lambda l: f"{l.model}-{l.device}-tp{l.tensor_parallel}")
def test_iteration_time_grows_with_tokens(layout):
    """Across the measured noise (single counts can dip a few percent: Vidur's medians), a
    step of more work takes longer."""
    m = replica(layout.model, layout.device, layout.tensor_parallel)
    prefill = [m.prefill_time(tokens) for tokens in (128, 512, 2048, 8192, 16384)]
    assert prefill == sorted(prefill) and prefill[-1] > 20 * prefill[0]
    decode = [m.decode_time(batch, 1024) for batch in (1, 16, 64, 256)]
    assert decode == sorted(decode)
    context = [m.decode_time(32, kv) for kv in (256, 2048, 8192, 16384)]
    assert context == sorted(context)


@pytest.mark.parametrize("model", SEVENTY_B)
@pytest.mark.parametrize("device", DEVICES)
def test_a_70b_prefill_falls_with_tensor_parallelism_and_its_kv_room_grows(model, device):
    by_tp = [replica(model, device, tp) for tp in (2, 4, 8)]
    for tokens in (512, 2048, 8192):
        times = [m.prefill_time(tokens) for m in by_tp]
        assert times == sorted(times, reverse=True)
    assert by_tp[0].prefill_time(8192) > 2 * by_tp[2].prefill_time(8192)
    blocks = [m.kv_capacity_blocks for m in by_tp]
    assert blocks == sorted(blocks) and blocks[0] > 1000  # TP2: 140 GB of weights on 160 GB


@pytest.mark.parametrize("model, tp", [("llama-3.1-8b", 1), ("llama-2-70b", 4), ("llama-3.1-70b", 8)])
def test_the_h100_is_faster_than_the_a100(model, tp):
    a100, h100 = (replica(model, device, tp) for device in DEVICES)
    assert h100.prefill_time(2048) < a100.prefill_time(2048) / 2
    assert h100.decode_time(16, 1024) < a100.decode_time(16, 1024)


def test_llama_3_1_70b_on_the_h100_is_llama_2_70bs_measured_block():
    """Vidur profiled no Llama-3 on the H100: the same block shape's rows, Llama-2-70B's."""
    for tp in (2, 4, 8):
        two, three = (replica(model, "h100_80gb", tp) for model in SEVENTY_B)
        assert three.prefill_time(4096) == two.prefill_time(4096)
        assert three.decode_time(64, 2048) == two.decode_time(64, 2048)


def test_the_profiles_provenance_is_listed():
    """Each folder says where its rows come from: repository, commit, path and checksum."""
    source = re.compile(rf"microsoft/vidur @{VIDUR_COMMIT} `data/profiling/(compute|network)/[^`]+\.csv` \(sha256 `[0-9a-f]{{64}}`\)")
    folders = {layout.compute_dir for layout in NEW} | {
        PROFILES_DIR / "network" / layout.node for layout in NEW if layout.tensor_parallel > 1
    }
    assert len(folders) == 6 + 2
    for folder in folders:
        note = (folder / "PROVENANCE.md").read_text()
        assert source.search(note), folder
    h100_8b = (find_layout("llama-3.1-8b", "h100_80gb", 1).compute_dir / "PROVENANCE.md").read_text()
    assert "Measured on a100_80gb" in h100_8b and "Llama-2-7b-hf/mlp.csv" in h100_8b  # the ratio's reference
    for layout in NEW:
        assert layout.device_sku.profiles == VIDUR_OPERATORS
        mlp = pd.read_csv(layout.compute_dir / "mlp.csv.xz")
        assert set(mlp["num_tensor_parallel_workers"]) == {
            other.tensor_parallel for other in NEW if other.compute_dir == layout.compute_dir
        }
        assert mlp["num_tokens"].max() == 16384
