"""The Vidur replica model on A10: devices, LLaMA configs, shipped profiles, predictor, KV capacity.

Knows nothing about scheduling: it answers how long one iteration of a given batch takes on
one instance and how many KV blocks the instance holds.
"""

from sim.lazy import lazy_exports

_EXPORTS = {
    "ReplicaModel": "sim.hardware.replica_model",
    "UnknownHardwareError": "sim.hardware.catalog",
    "known_devices": "sim.hardware.catalog",
    "known_models": "sim.hardware.catalog",
    "load_replica_model": "sim.hardware.replica_model",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
