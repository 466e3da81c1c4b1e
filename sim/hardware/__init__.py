"""The Vidur replica model on A10: devices, LLaMA configs, shipped profiles, predictor, KV capacity.

Knows nothing about scheduling: it answers how long one iteration of a given batch takes on
one instance and how many KV blocks the instance holds.
"""

from sim.hardware.catalog import UnknownHardwareError, known_devices, known_models
from sim.hardware.replica_model import ReplicaModel, load_replica_model

__all__ = [
    "ReplicaModel",
    "UnknownHardwareError",
    "known_devices",
    "known_models",
    "load_replica_model",
]
