"""Decode stretches (``sim.engine.instances.StepLoop``): a quiet batch's decode steps formed in
one go instead of one event each — where they run, that they run, and that what touches an
instance mid-stretch sees it as a step-by-step run leaves it. Random scenarios compare the
two paths request by request in ``tests/test_engine_invariants.py``."""

from __future__ import annotations

import io

import pytest

from sim.engine import Simulation
from sim.metrics import request_table
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload


def _config(scheduler: str = "infaas++", instances: int = 1):
    return make_config(
        cluster={"instances": instances, "kv_capacity_blocks": 400, "max_batch_size": 8},
        scheduler={"name": scheduler},
    )


def _run(config, workload, stretches: bool):
    simulation = Simulation(
        config, LinearTimer(capacity_blocks=400), workload, transfer=make_transfer(), decode_stretches=stretches
    )
    result = simulation.run()
    buffer = io.StringIO()
    request_table(result).to_csv(buffer, index=False)
    events = next(simulation.env._eid)  # simpy events scheduled (ids are a counter)
    return buffer.getvalue(), result, events


def test_a_lone_requests_decode_steps_take_a_handful_of_events_and_the_same_times():
    # 300 output tokens: 300 decode steps stepped, one stretch per 16 (the plan doubles from
    # 16 to 256 steps) formed in one go; block growth every 16 tokens happens inside them
    workload = make_workload([0.0], [200], [300])
    stepped, slow, slow_events = _run(_config(), workload, stretches=False)
    stretched, fast, fast_events = _run(_config(), workload, stretches=True)
    assert stretched == stepped
    assert fast.batches == slow.batches == 300  # the prefill (its first token) and 299 decode steps
    assert slow_events > 300
    assert fast_events < 40


def test_an_arrival_mid_stretch_is_admitted_at_the_step_boundary_it_would_have_been():
    # one instance: the second request arrives while the first one's steps run unscheduled;
    # dispatch cuts the stretch at the step running then, and the prefill starts at its end
    workload = make_workload([0.0, 2.0031, 2.5], [200, 120, 64], [400, 50, 30])
    stepped, slow, _ = _run(_config(), workload, stretches=False)
    stretched, fast, _ = _run(_config(), workload, stretches=True)
    assert stretched == stepped
    second = fast.requests[1]
    assert second.arrival < second.first_admitted  # it waited for the step running then to end


@pytest.mark.parametrize("scheduler, stretches", [
    ("infaas++", True),
    ("round-robin", True),
    ("llumnix", False),  # its pairing cadence reads every instance every few steps
    ("llumnix-base", False),
])
def test_stretches_run_only_where_no_pairing_cadence_reads_every_instance(scheduler, stretches):
    simulation = Simulation(_config(scheduler, instances=2), LinearTimer(capacity_blocks=400),
                            make_workload([0.0], [10], [10]), transfer=make_transfer(), decode_stretches=True)
    assert simulation.steps.stretches is stretches


def test_the_environment_turns_stretches_off_for_the_slow_path(monkeypatch):
    workload = make_workload([0.0], [10], [10])
    monkeypatch.setenv("LLUMSIM_STEP_BY_STEP", "1")
    assert not Simulation(_config(), LinearTimer(capacity_blocks=400), workload).steps.stretches
    monkeypatch.delenv("LLUMSIM_STEP_BY_STEP")
    assert Simulation(_config(), LinearTimer(capacity_blocks=400), workload).steps.stretches


def test_two_stretches_ending_at_one_instant_make_the_run_again_step_by_step():
    # two instances step identical requests in lockstep, and each finished turn's follower
    # arrives at once (no think time): the stretches' last steps end at one instant, whose
    # order stepping takes from when each step began — a stretch cannot tell it, so the run is
    # made again step by step (found by the property test in tests/test_engine_invariants.py)
    from tests.test_engine_invariants import build

    turns = 32
    scenario = {
        "arrival": [0.0] * (turns - 1) + [1.0], "prompt": [1] * turns, "output": [1, 1, 50, 50] + [1] * (turns - 4),
        "tier": [0] * turns, "tiers": 1, "instances": 1, "capacity": 6, "max_batch_size": 1,
        "max_batched_tokens": 64, "watermark": 0.0, "scheduler": "round-robin", "dispatch": None,
        "slo_migration": False, "priority": {}, "slo": {"ladder": {"ttft": 1.0, "tpot": 0.5, "growth": 1.0}},
        "report_interval": 0.05, "pairing_every": 1, "mode": "live", "last_stage_blocks": 0, "max_stages": 1,
        "faults": [], "autoscale": {"enabled": False}, "second_pool": (1, 6), "pd": None, "first_role": "prefill",
        "caching": False, "engines": ("vllm-0.1.2", "vllm-0.1.2"),
        "conversation": [0, 1, 0, 1] + [0] * (turns - 6) + [1, -1], "think": [0.0] * turns, "system": (0, 1),
    }
    stepped, stretched = build(scenario, False, decode_stretches=False), build(scenario, False, decode_stretches=True)
    slow, fast = stepped.run(), stretched.run()
    assert request_table(fast).to_csv() == request_table(slow).to_csv()
    assert not stretched.steps.stretches  # it was made again, stepping
