"""Runs that are one simulation: settings that only label requests are applied afterwards.

A request's tier (``workload.priority``: the sampler, K, the share) changes what a run
computes only if the scheduler reads it. INFaaS++ and round-robin never do (each rule
declares it: ``reads_tiers``, ``sim.cluster.global_scheduler.reads_tiers``), and with K = 1
every sampler puts every request in tier 0. Tiers are drawn from their own generator
(``sim.workload.build``: every client but the artifact's), so such runs serve the same
requests with the same schedule: they differ only in the labels their latencies are grouped
by. ``simulation_key`` gives them one key; the sweep simulates one of them and, for each,
relabels the requests with the tiers that run's own workload draws (its own generator, so
exactly what a separate run would have drawn) before its tables and summary are built.
Each run keeps its own store folder and index row; ``tests/test_sweep_sharing.py``
compares the index with brute-force runs byte for byte.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sim.config import PriorityConfig, SimulationConfig, config_hash


def label_only(config: SimulationConfig) -> bool:
    """Whether ``workload.priority`` only labels this run's requests (the schedule, the
    arrivals and the lengths do not depend on it)."""
    from sim.cluster.global_scheduler import reads_tiers
    from sim.workload.build import tiers_drawn_apart

    if not tiers_drawn_apart(config.workload):
        return False
    # conversations and stages (a later turn's or stage's arrival is the run's, not the
    # workload's) and a prefix cache (its per-tier counters are the simulation's) are not
    # relabelled afterwards
    if config.workload.source in ("sessions", "inference-perf") or any(pool.ledger != "paged" for pool in config.instance_pools()):
        return False
    return config.workload.priority.tiers == 1 or not reads_tiers(config.scheduler)


def simulation_key(config: SimulationConfig) -> str:
    """The key of the simulation a run needs: its config with the label-only settings left
    out (``workload.priority`` as the default), so runs differing only in labels share it."""
    if label_only(config):
        workload = dataclasses.replace(config.workload, priority=PriorityConfig())
        config = dataclasses.replace(config, workload=workload)
    return config_hash(config)


def relabel(result: Any, config: SimulationConfig) -> Any:
    """``result`` (a finished simulation sharing ``config``'s simulation key) as ``config``'s
    own run: each request gets the tier ``config``'s workload draws, and the config and the
    workload's description are ``config``'s. Mutates the requests' tiers in place."""
    from sim.engine.setup import load_workload

    workload = load_workload(config, None)
    requests = result.requests
    drawn = list(zip(workload.arrival.tolist(), workload.prompt_tokens.tolist(), workload.output_tokens.tolist()))
    same = all((r.arrival, r.prompt_tokens, r.output_tokens) == drawn[r.id] for r in requests)
    if not same:  # a rule or workload part that declared wrongly: never store a wrong result
        raise AssertionError(f"{config.name}: runs sharing a simulation drew different requests")
    tiers = workload.tier.tolist()
    for request in requests:
        request.retiered(tiers[request.id])
    return dataclasses.replace(result, config=config, workload_description=workload.description)
