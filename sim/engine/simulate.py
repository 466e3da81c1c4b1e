"""``simulate``: build and run one simulation from a config, optionally showing its progress."""

from __future__ import annotations

from sim.config import SimulationConfig
from sim.engine import inspection
from sim.engine.result import SimulationResult
from sim.engine.simulation import Simulation

BAR_DELAY = 2.0  # seconds before a terminal bar appears: a run of a second shows none


def simulate(config: SimulationConfig, show_progress: bool = False) -> SimulationResult:
    """Build and run a simulation. ``show_progress``: its requests as they end, on stderr
    (``sim.progress``: a bar on a terminal, else a line every 5% or 30 s). Ended requests,
    not simulated time: the last arrival is not the end, and a run drains long after it."""
    simulation = Simulation(config, record_batches=config.output.timeline)
    if not show_progress or len(simulation.workload) == 0:
        return simulation.run()
    from sim.progress import RequestProgress

    shown = RequestProgress(config.name, len(simulation.workload), delay=BAR_DELAY)
    try:
        result = simulation.run(lambda now: shown.advance(inspection.ended(simulation), now))
        shown.advance(inspection.ended(simulation), result.end_time)
    finally:
        shown.close()
    return result
