"""Discrete-event kernel (simpy): advances time and carries out decisions; no policy."""

from sim.lazy import lazy_exports

_EXPORTS = {
    "Simulation": "sim.engine.simulation",
    "SimulationResult": "sim.engine.result",
    "SimulationStalled": "sim.engine.watchdog",
    "simulate": "sim.engine.simulate",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
