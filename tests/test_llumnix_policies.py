"""Deterministic scenarios for the paper's mechanisms: de-fragmentation and priorities."""

from __future__ import annotations

from sim.engine import Simulation
from sim.engine.migrations import MIGRATIONS
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload, placed


def test_queued_long_input_is_admitted_sooner_under_llumnix_than_infaas():
    """Both instances have room for the long request only together: INFaaS++ leaves it
    queued until a running request finishes; Llumnix's head-of-line inflation makes its
    instance a migration source and moves a short request away to make room."""
    capacity = 200
    # seven 20-block requests spread 4/3 over two instances, then a 150-block prompt
    arrival = [0.01 * i for i in range(7)] + [0.5]
    prompts = [320] * 7 + [2400]
    outputs = [1000] * 7 + [50]

    def admission_delay(scheduler: str) -> float:
        simulation = Simulation(
            make_config(
                cluster={"instances": 2, "kv_capacity_blocks": capacity},
                scheduler={"name": scheduler},
            ),
            LinearTimer(capacity_blocks=capacity),
            make_workload(arrival, prompts, outputs),
            transfer=make_transfer(),
            check_every_step=True,
        )
        result = simulation.run()
        long_request = result.requests[-1]
        assert long_request.generated == 50
        return long_request.first_admitted - long_request.arrival, len(MIGRATIONS.of(result))

    infaas_delay, infaas_migrations = admission_delay("infaas++")
    llumnix_delay, llumnix_migrations = admission_delay("llumnix")
    assert infaas_migrations == 0 and llumnix_migrations >= 1
    assert infaas_delay > 10.0  # it waits for a 1000-token request to finish
    assert llumnix_delay < 1.0
    assert llumnix_delay < infaas_delay


def test_prose_llumnix_moves_normal_requests_away_from_a_high_priority_request():
    """A tier-0 request shares an instance with eleven tier-1 requests. Its tier's
    headroom makes the instance a migration source under ``llumnix-prose``, which moves
    tier-1 requests away (never the tier-0 one), so its decode steps run in a smaller batch
    than under ``llumnix-prose-base``."""
    capacity = 200
    n = 12
    arrival = [0.001 * i for i in range(n)]
    prompts = [160] * n  # 11 blocks each after the first token: F = 68 / 12 without headroom
    outputs = [400] * n
    tiers = [0] + [1] * (n - 1)

    def run(scheduler: str):
        config = make_config(
            cluster={"instances": 2, "kv_capacity_blocks": capacity},
            workload={"priority": {"tiers": 2}},
            scheduler={"name": scheduler, "headroom": {"blocks": [40, 0]}},
        )
        simulation = Simulation(
            config,
            LinearTimer(capacity_blocks=capacity),
            make_workload(arrival, prompts, outputs, tiers),
            transfer=make_transfer(),
            scheduler=placed(config, [0] * n),  # everything lands on instance 0
            check_every_step=True,
        )
        return simulation.run()

    tiered = run("llumnix-prose")
    base = run("llumnix-prose-base")
    critical, critical_base = tiered.requests[0], base.requests[0]
    assert critical.migrations == 0  # lower priority goes first
    moved = [m for m in MIGRATIONS.of(tiered) if m.outcome == "committed"]
    assert moved and all(tiered.requests[m.request_id].tier == 1 for m in moved)
    # without headroom the instance only becomes a source once its requests have grown
    first_move = min(m.start for m in moved)
    assert MIGRATIONS.of(base) and min(m.start for m in MIGRATIONS.of(base)) > first_move + 0.5

    def decode_latency(request):
        return (request.finish_time - request.first_token_time) / (request.output_tokens - 1)

    assert decode_latency(critical) < decode_latency(critical_base)


def test_artifact_llumnix_sheds_normal_requests_from_an_instance_holding_a_high_priority_one():
    """The artifact's mechanism (``vllm/instance_info.py``, ``priority_reserved_blocks``):
    an instance holding a high-priority request is charged M − 1600 // 16 blocks, so with
    more than ~1,600 tokens it is a migration source and LCFS moves its latest normal
    requests to the other instance; without priorities (``llumnix-base``) it keeps them and
    the high-priority request decodes in a bigger batch."""
    capacity = 200
    n = 12
    arrival = [0.001 * i for i in range(n)]
    prompts = [160] * n
    outputs = [400] * n
    tiers = [0] + [1] * (n - 1)
    placement = [0] * (n - 1) + [1]  # everything but the last normal request on instance 0

    def run(scheduler: str):
        config = make_config(
            cluster={"instances": 2, "kv_capacity_blocks": capacity},
            workload={"priority": {"tiers": 2}},
            scheduler={"name": scheduler},
        )
        return Simulation(
            config,
            LinearTimer(capacity_blocks=capacity),
            make_workload(arrival, prompts, outputs, tiers),
            transfer=make_transfer(),
            scheduler=placed(config, placement),
            check_every_step=True,
        ).run()

    tiered, base = run("llumnix"), run("llumnix-base")
    critical, critical_base = tiered.requests[0], base.requests[0]
    moved = [m for m in MIGRATIONS.of(tiered) if m.outcome == "committed"]
    assert moved and all(tiered.requests[m.request_id].tier == 1 for m in moved)
    assert critical.migrations == 0
    # without the reservation the instance only becomes a source once its requests grew
    # (11 requests of 11 blocks: freeness 7 > 3)
    assert not MIGRATIONS.of(base) or min(m.start for m in MIGRATIONS.of(base)) > min(m.start for m in moved) + 1.0

    def decode_latency(request):
        return (request.finish_time - request.first_token_time) / (request.output_tokens - 1)

    assert decode_latency(critical) < decode_latency(critical_base)
