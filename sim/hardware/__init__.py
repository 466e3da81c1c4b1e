"""The Vidur replica model on A10: devices, LLaMA configs, shipped profiles, predictor, KV capacity.

Knows nothing about scheduling: it answers how long one iteration of a given batch takes on
one instance and how many KV blocks the instance holds.
"""

from sim.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "catalog": "UnknownHardwareError known_devices known_models",
    "replica_model": "ReplicaModel load_replica_model",
})
