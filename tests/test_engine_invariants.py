"""Conservation and determinism of whole simulations on random small clusters and workloads."""

from __future__ import annotations

import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.engine import Simulation
from sim.instance.request import RequestState
from sim.metrics import request_table
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload


@st.composite
def faults(draw):
    kind = draw(st.sampled_from(["scheduler_down", "instance_failure", "transfer_failure"]))
    start = draw(st.floats(0.0, 20.0))
    if kind == "scheduler_down":
        return {"kind": kind, "start": start, "end": start + draw(st.floats(0.1, 10.0))}
    if kind == "instance_failure":
        return {
            "kind": kind,
            "at": start,
            "instance": 0,
            "on_failure": draw(st.sampled_from(["abort", "retry"])),
            "restart_after": draw(st.one_of(st.none(), st.floats(0.0, 5.0))),
        }
    return {"kind": kind, "probability": draw(st.floats(0.05, 1.0))}


@st.composite
def scenarios(draw):
    n = draw(st.integers(1, 25))
    gaps = draw(st.lists(st.floats(0.0, 1.5), min_size=n, max_size=n))
    arrival = []
    t = 0.0
    for gap in gaps:
        t += gap
        arrival.append(t)
    tiers = draw(st.integers(1, 3))
    return {
        "arrival": arrival,
        "prompt": draw(st.lists(st.integers(1, 700), min_size=n, max_size=n)),
        "output": draw(st.lists(st.integers(1, 400), min_size=n, max_size=n)),
        "tier": draw(st.lists(st.integers(0, tiers - 1), min_size=n, max_size=n)),
        "tiers": tiers,
        "instances": draw(st.integers(1, 3)),
        "capacity": draw(st.integers(6, 80)),
        "max_batch_size": draw(st.integers(1, 8)),
        "max_batched_tokens": draw(st.integers(64, 2048)),
        "watermark": draw(st.sampled_from([0.0, 0.05])),
        "scheduler": draw(st.sampled_from(["round-robin", "infaas++", "llumnix", "llumnix-base"])),
        "mode": draw(st.sampled_from(["live", "blocking", "recompute"])),
        "faults": draw(st.lists(faults(), max_size=2)),
        "autoscale": draw(st.booleans()),
    }


def build(s) -> Simulation:
    config = make_config(
        cluster={
            "instances": s["instances"],
            "kv_capacity_blocks": s["capacity"],
            "max_batch_size": s["max_batch_size"],
            "max_batched_tokens": s["max_batched_tokens"],
            "watermark_fraction": s["watermark"],
        },
        workload={"priority": {"tiers": s["tiers"]}},
        scheduler={"name": s["scheduler"], "load_report_interval": 0.2, "pairing_every": 1},
        migration={"mode": s["mode"], "last_stage_blocks": 2, "prealloc_timeout": 1.0},
        faults=s["faults"],
        autoscale={"enabled": s["autoscale"], "sustain": 1.0, "max_instances": 4, "cold_start": 0.5},
    )
    workload = make_workload(s["arrival"], s["prompt"], s["output"], s["tier"])
    return Simulation(
        config,
        LinearTimer(capacity_blocks=s["capacity"]),
        workload,
        transfer=make_transfer(),
        check_every_step=True,  # free + allocated == capacity after every iteration
    )


@given(scenarios())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_blocks_and_requests_are_conserved_under_migration_scaling_and_faults(s):
    simulation = build(s)
    result = simulation.run()
    # every request arrived and ended exactly once (the engine raises on a second ending)
    assert len(s["arrival"]) == len(result.requests)
    for request in result.requests:
        assert request.state in (RequestState.FINISHED, RequestState.ABORTED)
        if request.state is RequestState.FINISHED:
            assert request.generated == request.output_tokens
            assert request.first_token_time <= request.finish_time
        else:
            assert request.abort_reason in (
                "exceeds_instance_limits",
                "instance_failed",
                "no_live_instance",
            )
    assert result.leaked_blocks == 0
    for instance in simulation.live_ids:
        ledger = simulation.llumlet(instance).ledger
        assert ledger.allocated == 0 and ledger.reserved == 0 and ledger.free == ledger.capacity
    # every migration ended committed or aborted with a reason
    for record in result.migrations:
        assert record.outcome in ("committed", "aborted")
        assert (record.outcome == "aborted") == bool(record.abort_reason)
    committed = sum(r.outcome == "committed" for r in result.migrations)
    assert committed == sum(r.migrations for r in result.requests)


def _table_bytes(simulation: Simulation) -> bytes:
    buffer = io.StringIO()
    request_table(simulation.run()).to_csv(buffer, index=False)
    return buffer.getvalue().encode()


def test_same_config_and_seed_give_a_byte_identical_request_table():
    def run(seed: int) -> bytes:
        config = make_config(
            seed=seed,
            cluster={"instances": 4, "kv_capacity_blocks": 300},
            workload={
                "source": "synthetic",
                "num_requests": 400,
                "arrival": {"process": "gamma", "rate": 6.0, "cv": 3.0},
                "synthetic": {"input": "L", "output": "M"},
                "priority": {"sampler": "uniform", "tiers": 3},
            },
        )
        return _table_bytes(Simulation(config, LinearTimer(capacity_blocks=300)))

    first, second, other = run(1), run(1), run(2)
    assert first == second
    assert first != other


def test_running_out_of_memory_preempts_and_preempted_requests_still_finish():
    n = 40
    simulation = Simulation(
        make_config(cluster={"instances": 2, "kv_capacity_blocks": 60}, scheduler={"name": "round-robin"}),
        LinearTimer(capacity_blocks=60),
        make_workload([0.05 * i for i in range(n)], [100] * n, [300] * n),
        check_every_step=True,
    )
    result = simulation.run()
    preempted = [r for r in result.requests if r.preemptions > 0]
    assert preempted, "60 blocks cannot hold these requests' growth: preemption must happen"
    assert all(r.state is RequestState.FINISHED and r.generated == 300 for r in result.requests)
    assert all(r.preemption_loss > 0 for r in preempted)
