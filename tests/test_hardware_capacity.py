"""KV capacity per instance: vLLM-style profile-run sizing on Vidur's memory accounting."""

from __future__ import annotations

import pytest
from vidur.config import CacheConfig
from vidur.utils.memory_planner import MemoryPlanner

from sim.hardware.catalog import find_layout
from sim.hardware.memory import ProfileRunMemoryPlanner
from tests.hardware_support import fitted_cache, replica


def planner(model: str, max_batched_tokens: int = 12800, block_size: int = 16, utilisation=0.9):
    layout = find_layout(model, "a10", None)
    return ProfileRunMemoryPlanner(
        layout.replica_config(), CacheConfig(block_size=block_size), utilisation, max_batched_tokens
    )


def test_llama_7b_on_one_a10_matches_the_paper():
    """Paper §6.1: 851 blocks of 16 tokens (13,616 tokens) at utilisation 0.9; ±2%."""
    model = replica("llama-7b")
    assert model.block_size == 16
    assert model.kv_capacity_blocks == pytest.approx(851, rel=0.02)


def test_kv_bytes_per_token_are_the_whole_instance():
    assert replica("llama-7b").kv_bytes_per_token == 2 * 32 * 4096 * 2  # 512 KiB
    assert replica("llama-30b").kv_bytes_per_token == 2 * 60 * 6656 * 2  # ≈1.52 MiB, 4 GPUs


@pytest.mark.parametrize("model", ["llama-7b", "llama-30b"])
def test_capacity_fills_the_memory_left_after_the_profile_run(model):
    p = planner(model)
    usable = 0.9 * p._device_config.visible_memory_bytes
    peak = p._get_parameter_memory_per_device() + p.embedding_bytes_per_device() + p.activation_peak_bytes()
    block = p.kv_bytes_per_token_per_device() * 16
    blocks = p.get_num_blocks()
    assert peak + blocks * block <= usable < peak + (blocks + 1) * block


def test_llama_7b_weights_are_the_model_card_size():
    p = planner("llama-7b")
    weights = p._get_parameter_memory_per_device() + p.embedding_bytes_per_device()
    assert weights == pytest.approx(13.5e9, rel=0.01)


def test_activation_reserve_shrinks_capacity_as_the_token_budget_grows():
    blocks = [planner("llama-7b", tokens).get_num_blocks() for tokens in (2048, 8192, 12800, 16384)]
    assert blocks == sorted(blocks, reverse=True) and blocks[0] > blocks[-1]


def test_vidurs_own_planner_reserves_nothing_for_activations():
    layout = find_layout("llama-7b", "a10", None)
    vidur_blocks = MemoryPlanner(layout.replica_config(), CacheConfig()).get_max_kv_cache_size_in_tokens() // 16
    assert vidur_blocks > planner("llama-7b").get_num_blocks() * 1.2


def test_block_size_and_override():
    from sim.hardware import load_replica_model

    directory = fitted_cache()[0]
    bigger = load_replica_model("llama-7b", block_size=32, cache_dir=directory)
    assert bigger.kv_capacity_blocks == planner("llama-7b", block_size=32).get_num_blocks()
    fixed = load_replica_model("llama-7b", kv_capacity_blocks=100, cache_dir=directory)
    assert fixed.kv_capacity_blocks == 100


def test_a_layout_without_room_for_kv_is_an_error():
    assert planner("llama-30b").get_num_blocks() > 500
    with pytest.raises(ValueError, match="no room"):
        planner("llama-30b", utilisation=0.7).get_num_blocks()
