"""KV capacity per instance: vLLM-style profile-run sizing on Vidur's memory accounting."""

from __future__ import annotations

import pytest
from vidur.config import CacheConfig
from vidur.utils.memory_planner import MemoryPlanner

from sim.hardware.catalog import find_layout
from sim.hardware.calibration import KV_CAPACITY_TOLERANCE, load_capacity_measurements
from sim.hardware.memory import CUBLAS_WORKSPACE_BYTES, ProfileRunMemoryPlanner, sort_temporary_bytes
from tests.hardware_support import fitted_cache, replica


def planner(
    model: str, max_batched_tokens: int = 12800, block_size: int = 16, utilisation=0.9, seqs=256
):
    layout = find_layout(model, "a10", None)
    return ProfileRunMemoryPlanner(
        layout.replica_config(), CacheConfig(block_size=block_size), utilisation, max_batched_tokens, seqs
    )


MEASURED = {m.max_batched_tokens: m.measured_blocks for m in load_capacity_measurements()}
# The one measured point the model misses by more than 1%: the artifact's table adds 1,200
# batched tokens between 7,500 and 8,700 for one block (8 MiB), while the profile run's MLP
# keeps (4 x hidden + 3 x MLP width) x 2 B = 96.5 KiB per token alive (14 blocks for
# 1,200 tokens) and nothing in the pass shrinks with more tokens; 8,700 -> 12,000 falls at
# that rate (39 blocks). No peak that grows with the tokens gives both 832 and 831.
INCONSISTENT_POINT = 7500


@pytest.mark.parametrize("tokens", sorted(MEASURED))
def test_llama_7b_capacity_is_the_artifacts_measured_a10_table(tokens):
    """vllm/simulator/profiling.py (osdi24ae): 862 / 832 / 831 / 792 blocks at 4,400 /
    7,500 / 8,700 / 12,000 batched tokens, measured on the artifact's A10s (utilisation 0.9)."""
    blocks = planner("llama-7b", tokens).get_num_blocks()
    bound = 0.02 if tokens == INCONSISTENT_POINT else KV_CAPACITY_TOLERANCE
    assert abs(blocks / MEASURED[tokens] - 1) <= bound


def test_the_inconsistent_point_is_the_only_one_outside_one_percent():
    errors = {t: planner("llama-7b", t).get_num_blocks() / b - 1 for t, b in MEASURED.items()}
    assert [t for t, e in errors.items() if abs(e) > KV_CAPACITY_TOLERANCE] == [INCONSISTENT_POINT]


def test_the_sampler_sets_the_peak_at_small_budgets_and_the_mlp_at_large():
    """256 dummy prompts each sample over a 32,000-token vocabulary (sorts of 8.2M probs):
    a fixed ~0.5 GB that the MLP's activations only pass beyond ~6,000 batched tokens."""
    assert planner("llama-7b", 4400).widest_phase() == "sampler"
    assert planner("llama-7b", 12000).widest_phase() == "mlp"
    assert planner("llama-7b", 4400, seqs=64).widest_phase() == "mlp"


def test_persistent_memory_is_weights_rotary_caches_and_cublas_workspace():
    p = planner("llama-7b")
    rotary = 32 * 16384 * 128 * 2  # one fp16 [16384, 128] cos/sin table per layer
    assert p.persistent_bytes() == p.weight_bytes_per_device() + rotary + CUBLAS_WORKSPACE_BYTES
    tp4 = planner("llama-30b")
    assert tp4.all_reduce_buffer_bytes() == 12800 * 6656 * 2  # GraphAllReduce.buffer


@pytest.mark.parametrize(
    ("rows", "expected_per_element"),
    [(256, 8 + 16), (64, 16 + 8 + 16), (1, None)],  # segmented / by full sort / one row
)
def test_sort_temporaries_follow_torch_2s_three_paths(rows, expected_per_element):
    length = 32000
    got = sort_temporary_bytes(rows, length, 8)
    if expected_per_element is None:
        assert got == length * 8 + length * 16  # per row, one iota of the row
    else:
        assert got == rows * length * expected_per_element


def test_kv_bytes_per_token_are_the_whole_instance():
    assert replica("llama-7b").kv_bytes_per_token == 2 * 32 * 4096 * 2  # 512 KiB
    assert replica("llama-30b").kv_bytes_per_token == 2 * 60 * 6656 * 2  # ≈1.52 MiB, 4 GPUs


@pytest.mark.parametrize("model", ["llama-7b", "llama-30b"])
def test_capacity_fills_the_memory_left_after_the_profile_run(model):
    p = planner(model)
    usable = 0.9 * p._device_config.visible_memory_bytes
    peak = p.peak_bytes()
    block = p.kv_bytes_per_token_per_device() * 16
    blocks = p.get_num_blocks()
    assert peak + blocks * block <= usable < peak + (blocks + 1) * block


def test_llama_7b_weights_are_its_parameter_count_in_fp16():
    """6,738,415,616 parameters (LLaMA-7B, norms included), 2 bytes each."""
    assert planner("llama-7b").weight_bytes_per_device() == 2 * 6_738_415_616


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
