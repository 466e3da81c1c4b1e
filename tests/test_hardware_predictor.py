"""The run-time tables are Vidur's predictor, offline, monotone, and cheap to start."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys

import pytest

from sim.hardware import known_models, load_replica_model
from sim.hardware import replica_model as replica_module
from sim.hardware.catalog import find_layout
from sim.hardware.iteration_memo import DECODE_COUNT_SPAN
from sim.hardware.replica_model import VIDUR_SUBDIR, cache_entry, content_hash
from tests.hardware_support import fitted_cache, replica


def test_cold_fit_never_touches_the_network():
    directory, attempts = fitted_cache()
    assert attempts == ()


def random_batch(rng: random.Random):
    """Prefill chunks (some of one token, which Vidur counts as decodes) and decodes."""
    while True:
        prefills = []
        for _ in range(rng.choice([0, 0, 1, 2, 4])):
            q = rng.choice([1, rng.randint(2, 64), rng.randint(2, 4096)])
            prefills.append((q, rng.randint(q, min(16384, q + rng.choice([0, 600, 9000])))))
        decodes = [rng.randint(1, 16384) for _ in range(rng.choice([0, 1, 3, rng.randint(1, 256)]))]
        if (prefills or decodes) and sum(q for q, _ in prefills) + len(decodes) <= 16384:
            return prefills, decodes


@pytest.mark.parametrize("model", known_models("a10"))
def test_tables_equal_vidurs_own_predictor(model):
    """ReplicaModel.batch_time == Vidur's get_execution_time(batch).total_time + our
    per-iteration overhead, on random batches."""
    from vidur.entities import Batch

    from sim.hardware.vidur_predictor import LocalProfilePredictor

    layout = find_layout(model, "a10", None)
    directory = fitted_cache()[0]
    vidur = LocalProfilePredictor(layout, str(cache_entry(layout, directory) / VIDUR_SUBDIR))
    ours = replica(model)
    rng = random.Random(7)
    for _ in range(300):
        prefills, decodes = random_batch(rng)
        batch = Batch(
            0,
            [None] * (len(prefills) + len(decodes)),
            [q for q, _ in prefills] + [1] * len(decodes),
            [kv for _, kv in prefills] + decodes,
        )
        expected = vidur.get_execution_time(batch, 0).total_time + ours.overhead_time(
            len(prefills) + len(decodes)
        )
        assert ours.batch_time(prefills, len(decodes), sum(decodes)) == pytest.approx(
            expected, rel=1e-12
        )


@pytest.mark.parametrize("model", known_models("a10"))
def test_decode_step_is_monotone_in_tokens_and_batch_size(model):
    m = replica(model)
    for kv in (1, 256, 1000, 4096, 13000, 16384):
        times = [m.decode_time(b, kv) for b in range(1, 257)]
        assert times == sorted(times), f"not monotone in batch size at kv={kv}"
    for batch_size in (1, 2, 7, 32, 64, 256):
        times = [m.decode_time(batch_size, kv) for kv in range(1, 16385, 61)]
        assert times == sorted(times), f"not monotone in KV tokens at batch={batch_size}"


@pytest.mark.parametrize("model", known_models("a10"))
def test_prefill_is_monotone_in_tokens(model):
    m = replica(model)
    times = [m.prefill_time(tokens) for tokens in range(1, 16385, 29)]
    assert times == sorted(times)


@pytest.mark.parametrize("model", ["llama-7b", "llama-30b"])
def test_the_decode_fast_path_equals_batch_time(model):
    m = replica(model)
    rng = random.Random(7)
    for _ in range(500):
        n = rng.randint(1, 256)
        kv = n * rng.randint(1, 16384 // n)
        fast = m.decode_batch_time(n, kv)
        assert fast == m.batch_time((), n, kv)
    fresh = replica(model)  # a cold memo: the fast path fills it with Vidur's key
    assert fresh.decode_batch_time(17, 17 * 700) == m.batch_time((), 17, 17 * 700)
    # a count past the packing span would share a key with a smaller batch: it raises,
    # even when that key is memoised already
    fresh.decode_batch_time(5, 5 * 512)
    with pytest.raises(ValueError, match="decodes in one batch"):
        fresh.decode_batch_time(DECODE_COUNT_SPAN + 5, (DECODE_COUNT_SPAN + 5) * 256)


def test_batch_time_is_memoised_on_the_lookup_key():
    m = replica("llama-7b")
    first = m.batch_time([(300, 300)], 10, 10 * 1000)
    # same rounded keys: 300 → chunk 320 / KV 512; mean KV 1000 → 1024
    assert m.batch_time([(299, 301)], 10, 10 * 990) == first
    assert m.batch_time([(300, 300)], 10, 10 * 1030) > first


@pytest.mark.parametrize(
    "args, message",
    [
        (([], 0, 0), "empty batch"),
        (([(20000, 20000)], 0, 0), "tokens in one iteration"),
        (([(512, 100)], 0, 0), "need 0 < q <= kv"),
        (([], 20000, 20000 * 100), "tokens in one iteration"),
        (([], 4, 0), "mean decode KV"),
    ],
)
def test_out_of_range_batches_are_rejected(args, message):
    with pytest.raises(ValueError, match=message):
        replica("llama-7b").batch_time(*args)


def test_decode_attention_past_the_profiled_batch_grows_with_each_sequence():
    """Requests migrated in past vLLM's max_num_seqs (the artifact's migrate_in checks blocks
    only): each further sequence adds its KV stream at the profiled batch's bandwidth, so the
    step keeps growing about linearly instead of failing."""
    m = replica("llama-7b")
    steps = [m.decode_time(n, 256) for n in (256, 384, 512)]
    assert steps[0] < steps[1] < steps[2]
    assert (steps[2] - steps[1]) == pytest.approx(steps[1] - steps[0], rel=0.05)


def test_max_batched_tokens_beyond_the_profiles_is_rejected():
    with pytest.raises(ValueError, match="max_batched_tokens"):
        load_replica_model("llama-7b", max_batched_tokens=20000, cache_dir=fitted_cache()[0])


def test_warm_start_loads_tables_without_sklearn(tmp_path):
    """A fresh process with the cache present answers without importing the predictor."""
    code = (
        "import sys; from sim.hardware import load_replica_model; "
        f"m = load_replica_model('llama-7b', cache_dir={fitted_cache()[0]!r}); "
        "print(m.batch_time([(512, 512)], 8, 8 * 700)); "
        "print(sorted(x for x in sys.modules if x.startswith(('sklearn', 'vidur.execution'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"HF_HUB_OFFLINE": "1"}
    )
    assert result.returncode == 0, result.stderr
    seconds, imported = result.stdout.splitlines()
    assert float(seconds) == replica("llama-7b").batch_time([(512, 512)], 8, 8 * 700)
    assert imported == "[]"
    assert "fitting" not in result.stderr


def test_cache_key_follows_the_profiles(tmp_path, monkeypatch):
    layout = find_layout("llama-7b", "a10", None)
    before = content_hash(layout)
    assert before == content_hash(layout)
    changed = tmp_path / "a10_fit.json"
    shutil.copyfile(replica_module.FIT_JSON, changed)
    fit = json.loads(changed.read_text())
    fit["constants"]["overhead_base_ms"] += 1
    changed.write_text(json.dumps(fit))
    monkeypatch.setattr(replica_module, "FIT_JSON", changed)
    assert content_hash(layout) != before
    assert content_hash(find_layout("llama-30b", "a10", None)) != before
