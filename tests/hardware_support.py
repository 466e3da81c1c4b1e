"""One cold fit of every replica model per test session, into a temporary cache, offline.

Tests that need fitted predictors share it (``fitted_cache``), so the suite pays for the
fit once. The fit runs with sockets and Vidur's hub download disabled and records any
attempt to use them, so a test can assert that there were none.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import socket
import tempfile
from unittest import mock

from sim.hardware import ReplicaModel, known_models, load_replica_model
from sim.hardware.catalog import DEFAULT_DEVICE, LAYOUTS


def _offline(attempts: list[str]):
    """Sockets and Vidur's hub download disabled; each attempt is recorded in ``attempts``."""
    import vidur.execution_time_predictor.sklearn_execution_time_predictor as vidur_sklearn

    def refuse(what: str):
        def blocked(*args, **kwargs):
            attempts.append(what)
            raise OSError(f"{what} is disabled in tests")

        return blocked

    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(socket.socket, "connect", refuse("socket.connect")))
    stack.enter_context(mock.patch.object(vidur_sklearn, "snapshot_download", refuse("snapshot_download")))
    stack.enter_context(mock.patch.dict(os.environ, {"HF_HUB_OFFLINE": "1"}))
    return stack


@functools.lru_cache(maxsize=None)
def fitted_cache() -> tuple[str, tuple[str, ...]]:
    """(cache dir with every model of the default device fitted, network attempts made while
    fitting)."""
    directory = tempfile.mkdtemp(prefix="llumsim-hardware-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    attempts: list[str] = []
    with _offline(attempts):
        for model in known_models(DEFAULT_DEVICE):
            load_replica_model(model, cache_dir=directory)
    return directory, tuple(attempts)


@functools.lru_cache(maxsize=None)
def fitted_layouts() -> tuple[str, ...]:
    """Every catalog layout fitted into ``fitted_cache``'s directory, offline: the network
    attempts made while fitting."""
    attempts: list[str] = []
    with _offline(attempts):
        for layout in LAYOUTS:
            load_replica_model(layout.model, layout.device, layout.tensor_parallel, cache_dir=fitted_cache()[0])
    return tuple(attempts)


@functools.lru_cache(maxsize=None)
def replica(model: str, device: str = DEFAULT_DEVICE, tensor_parallel: int | None = None) -> ReplicaModel:
    """A warm-loaded replica model with default settings (another device's: fitted offline
    with every layout first, as the default device's are)."""
    if device != DEFAULT_DEVICE:
        fitted_layouts()
    return load_replica_model(model, device, tensor_parallel, cache_dir=fitted_cache()[0])


@functools.lru_cache(maxsize=None)
def figure_10_replica(model: str) -> ReplicaModel:
    """The replica model with the CPU work of the engine the A10 table was measured on."""
    from sim.hardware.calibration import FIGURE_10_PER_REQUEST_MS

    return load_replica_model(
        model, cache_dir=fitted_cache()[0], overhead_per_request=FIGURE_10_PER_REQUEST_MS * 1e-3
    )
