"""Discrete-event kernel (simpy): advances time and carries out decisions; no policy."""

from sim.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "simulation": "Simulation",
    "result": "SimulationResult",
    "watchdog": "SimulationStalled",
    "simulate": "simulate",
})
