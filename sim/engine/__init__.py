"""Discrete-event kernel (simpy): advances time and carries out decisions; no policy."""

from sim.engine.result import SimulationResult
from sim.engine.simulate import simulate
from sim.engine.simulation import Simulation
from sim.engine.watchdog import SimulationStalled

__all__ = ["Simulation", "SimulationResult", "SimulationStalled", "simulate"]
