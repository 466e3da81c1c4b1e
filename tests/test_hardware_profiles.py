"""The shipped profiles are what the build script makes, on Vidur's lookup grid."""

from __future__ import annotations

import numpy as np
import pytest

from sim.hardware import build_profiles
from sim.hardware import predictor_settings as settings
from sim.hardware.catalog import LAYOUTS, PROFILES_DIR, find_layout
from sim.hardware.replica_model import load_tables
from tests.hardware_support import fitted_cache


def test_build_is_deterministic_and_reproduces_the_shipped_files(tmp_path):
    """Byte for byte, every file of the layouts the builder builds (a device shipping Vidur's
    measured profiles has files the builder leaves alone)."""
    build_profiles.build(tmp_path)
    others = [
        folder
        for layout in LAYOUTS
        if layout not in build_profiles.BUILT
        for folder in (layout.compute_dir, layout.network_dir)
    ]
    shipped = sorted(
        p.relative_to(PROFILES_DIR)
        for p in PROFILES_DIR.rglob("*")
        if p.is_file() and not any(p.is_relative_to(folder) for folder in others)
    )
    built = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert built == shipped
    for path in shipped:
        assert (tmp_path / path).read_bytes() == (PROFILES_DIR / path).read_bytes(), path


@pytest.mark.parametrize("model", ["llama-7b", "llama-30b"])
def test_every_lookup_key_was_profiled(model):
    """No key the predictor can be asked for falls between profiled points (no NaN)."""
    tables = load_tables(find_layout(model, "a10", None), fitted_cache()[0])
    assert not np.isnan(tables["block_token_ms"][settings.TOKEN_GRID.start :: 8]).any()
    assert not np.isnan(tables["attn_decode_ms"][1:, 1:]).any()
    prefill = tables["attn_prefill_ms"]
    for kv_slot in range(1, prefill.shape[0]):
        assert not np.isnan(prefill[kv_slot, 1 : kv_slot * 8 + 1]).any()


def test_profile_data_is_small():
    total = sum(p.stat().st_size for p in PROFILES_DIR.rglob("*") if p.is_file())
    assert total < 3 * 1024 * 1024
