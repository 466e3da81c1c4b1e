"""Known answers: a single-server queue with deterministic service is an M/D/1 queue."""

from __future__ import annotations

import numpy as np

from sim.engine import Simulation
from sim.metrics import request_table
from tests.doubles import ConstantTimer, make_config, make_workload


def test_batch_cap_one_with_constant_service_matches_the_md1_waiting_time():
    prefill, decode, output_tokens = 0.05, 0.01, 4
    service = prefill + (output_tokens - 1) * decode  # 80 ms, the same for every request
    rho = 0.7
    rate = rho / service
    n = 200_000
    rng = np.random.default_rng(7)
    arrival = np.cumsum(rng.exponential(1 / rate, n))
    simulation = Simulation(
        make_config(
            cluster={"instances": 1, "max_batch_size": 1},
            scheduler={"name": "round-robin", "load_report_interval": 50.0},
            output={"timeseries_interval": 1000.0},
        ),
        ConstantTimer(prefill, decode),
        make_workload(arrival, np.full(n, 64), np.full(n, output_tokens)),
    )
    table = request_table(simulation.run())
    assert (table["status"] == "finished").all()
    # Pollaczek-Khinchine for deterministic service: Wq = rho * D / (2 (1 - rho))
    expected = rho * service / (2 * (1 - rho))
    measured = table["queueing_delay"].mean()
    assert abs(measured - expected) / expected < 0.05, (measured, expected)
    # and the service itself is exactly the constant: e2e = wait + D for every request
    np.testing.assert_allclose(table["e2e_latency"] - table["queueing_delay"], service, atol=1e-9)
