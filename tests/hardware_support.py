"""One cold fit of every replica model per test session, into a temporary cache, offline.

Tests that need fitted predictors share it (``fitted_cache``), so the suite pays for the
fit once. The fit runs with sockets and Vidur's hub download disabled and records any
attempt to use them, so a test can assert that there were none.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import socket
import tempfile
from unittest import mock

from sim.hardware import ReplicaModel, known_models, load_replica_model


@functools.lru_cache(maxsize=None)
def fitted_cache() -> tuple[str, tuple[str, ...]]:
    """(cache dir with every model fitted, network attempts made while fitting)."""
    import vidur.execution_time_predictor.sklearn_execution_time_predictor as vidur_sklearn

    directory = tempfile.mkdtemp(prefix="llumsim-hardware-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    attempts: list[str] = []

    def refuse(what: str):
        def blocked(*args, **kwargs):
            attempts.append(what)
            raise OSError(f"{what} is disabled in tests")

        return blocked

    with (
        mock.patch.object(socket.socket, "connect", refuse("socket.connect")),
        mock.patch.object(vidur_sklearn, "snapshot_download", refuse("snapshot_download")),
        mock.patch.dict(os.environ, {"HF_HUB_OFFLINE": "1"}),
    ):
        for model in known_models():
            load_replica_model(model, cache_dir=directory)
    return directory, tuple(attempts)


@functools.lru_cache(maxsize=None)
def replica(model: str) -> ReplicaModel:
    """A warm-loaded replica model with default settings."""
    return load_replica_model(model, cache_dir=fitted_cache()[0])


@functools.lru_cache(maxsize=None)
def figure_10_replica(model: str) -> ReplicaModel:
    """The replica model with the CPU work of the engine the A10 table was measured on."""
    from sim.hardware.calibration import FIGURE_10_PER_REQUEST_MS

    return load_replica_model(
        model, cache_dir=fitted_cache()[0], overhead_per_request=FIGURE_10_PER_REQUEST_MS * 1e-3
    )
