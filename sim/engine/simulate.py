"""``simulate``: build and run one simulation from a config, with an optional progress bar."""

from __future__ import annotations

import sys

from sim.config import SimulationConfig
from sim.engine.result import SimulationResult
from sim.engine.simulation import Simulation


def simulate(config: SimulationConfig, show_progress: bool = False) -> SimulationResult:
    """Build and run a simulation (a progress bar of simulated time on stderr if asked)."""
    simulation = Simulation(config, record_batches=config.output.timeline)
    if not show_progress or len(simulation.workload) == 0:
        return simulation.run()
    from tqdm import tqdm

    horizon = float(simulation.workload.arrival[-1])
    with tqdm(
        total=round(horizon),
        unit="sim-s",
        desc=config.name,
        delay=2.0,
        file=sys.stderr,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} simulated s [{elapsed}<{remaining}]",
    ) as bar:

        def progress(now: float) -> None:
            bar.n = min(round(now), bar.total)
            bar.refresh()

        return simulation.run(progress)
