"""Conservation and determinism of whole simulations on random small clusters and workloads
(one pool, or two of different speed and memory: a mixed fleet): INV-1 blocks, INV-3
ends-once, INV-4 idle-view, INV-5 commit-or-abort, INV-6 same-result."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from sim.engine import Simulation
from sim.engine.faults import FAULT_LOG
from sim.engine.migrations import MIGRATIONS
from sim.engine.handoffs import PD
from sim.engine.prefix_result import PREFIX_CACHE
from sim.engine.scaling import SCALING_LOG
from sim.engine.spot import NOTICE, STOP, SPOT_LOG
from sim.instance.request import RequestState
from sim.metrics import request_table
from sim.metrics.summary import summarize
from sim.metrics.tables import cluster_table
from sim.workload.sessions import OPEN, Sharing
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload


SCHEDULERS = ["round-robin", "infaas++", "llumnix", "llumnix-base", "llumnix-prose", "llumnix-prose-base"]
ALLOWED_ABORTS = {"exceeds_instance_limits", "instance_failed", "no_live_instance"}


@st.composite
def faults(draw, instances: int):
    """One fault of any kind; several drawn together overlap often (windows within 30 s)."""
    kind = draw(st.sampled_from(["scheduler_down", "instance_failure", "transfer_failure"]))
    start = draw(st.floats(0.0, 30.0))
    length = draw(st.floats(0.1, 15.0))
    if kind == "scheduler_down":
        fallback = draw(st.sampled_from(["round-robin", "random"]))
        return {"kind": kind, "start": start, "end": start + length, "fallback": fallback}
    if kind == "instance_failure":
        return {
            "kind": kind,
            "at": start,
            "instance": draw(st.integers(0, instances - 1)),
            "on_failure": draw(st.sampled_from(["abort", "retry"])),
            "restart_after": draw(st.one_of(st.none(), st.floats(0.0, 5.0))),
        }
    window = draw(st.booleans())
    return {
        "kind": kind,
        "probability": draw(st.floats(0.05, 1.0)),
        **({"start": start, "end": start + length} if window else {}),
    }


@st.composite
def autoscaling(draw) -> dict:
    """Off, the artifact's interval loop, or the sustained band; low bands and short waits so
    that scaling acts (and races with migration) within a short run."""
    rule = draw(st.sampled_from([None, "artifact", "sustained-band"]))
    if rule is None:
        return {"enabled": False}
    low = draw(st.floats(-5.0, 20.0))
    return {
        "enabled": True,
        "rule": rule,
        "low": low,
        "high": low + draw(st.floats(0.5, 50.0)),
        "interval": draw(st.floats(0.2, 3.0)),
        "first_check": draw(st.floats(0.0, 5.0)),
        "sustain": draw(st.floats(0.0, 2.0)),
        "cold_start": draw(st.floats(0.0, 2.0)),
        "max_instances": draw(st.integers(1, 6)),
        "queue_aware": draw(st.booleans()),
    }


@st.composite
def scenarios(draw):
    n = draw(st.integers(1, 60))
    # bursty: a gap is often exactly zero (requests arriving together), else up to 1.5 s
    gaps = draw(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 1.5)), min_size=n, max_size=n))
    arrival = list(itertools.accumulate(gaps))
    tiers = draw(st.integers(1, 4))
    instances = draw(st.integers(1, 6))
    return {
        "arrival": arrival,
        "prompt": draw(st.lists(st.integers(1, 900), min_size=n, max_size=n)),
        "output": draw(st.lists(st.integers(1, 400), min_size=n, max_size=n)),
        "tier": draw(st.lists(st.integers(0, tiers - 1), min_size=n, max_size=n)),
        "tiers": tiers,
        "instances": instances,
        "capacity": draw(st.integers(6, 120)),
        "max_batch_size": draw(st.integers(1, 16)),
        "max_batched_tokens": draw(st.integers(64, 2048)),
        "watermark": draw(st.sampled_from([0.0, 0.05])),
        "scheduler": draw(st.sampled_from(SCHEDULERS)),
        # the preset's own dispatch rule, or SLO-aware dispatch against a drawn SLO ladder
        "dispatch": draw(st.sampled_from([None, "slo-aware", "cache-aware"])),
        "slo_migration": draw(st.booleans()),  # SLO-driven pairing and candidates
        # the preset's priority mode, or headroom moved online by the SLO controller
        "priority": draw(
            st.sampled_from([{}, {"mode": "adaptive-headroom", "adaptive": {"interval": draw(st.floats(0.2, 3.0))}}])
        ),
        "slo": {
            "ladder": {
                "ttft": draw(st.floats(0.05, 5.0)),
                # often just above LinearTimer's 20 ms decode step, where some instances
                # miss and others have room: SLO-driven migration's working range
                "tpot": draw(st.one_of(st.floats(0.01, 0.5), st.floats(0.0205, 0.025))),
                "growth": draw(st.floats(1.0, 4.0)),
            }
        },
        "report_interval": draw(st.sampled_from([0.05, 0.2, 0.5])),
        "pairing_every": draw(st.integers(1, 4)),
        "mode": draw(st.sampled_from(["live", "blocking", "recompute"])),
        "last_stage_blocks": draw(st.integers(0, 4)),
        "max_stages": draw(st.integers(1, 3)),
        "faults": draw(st.lists(faults(instances), max_size=4)),
        "autoscale": draw(autoscaling()),
        # a second pool of a faster GPU with more memory (a mixed fleet): its instances, blocks
        "second_pool": draw(st.one_of(st.none(), st.tuples(st.integers(1, 3), st.integers(6, 400)))),
        # prefill/decode disaggregation: the two pools' roles (the first prefills or decodes),
        # and how requests are handed over
        "pd": draw(st.one_of(st.none(), st.fixed_dictionaries({
            "pairing": st.sampled_from(["immediate", "llumnix"]),
            "copy": st.sampled_from(["blocking", "live"]),
            "adaptive": st.booleans(),
            "layerwise": st.booleans(),  # taken only with immediate pairing and a blocking copy
        }))),
        "first_role": draw(st.sampled_from(["prefill", "decode"])),
        # prefix caching: the caching ledger, and requests that share tokens — turns of
        # conversations (a later turn arrives a think time after the one before it ends)
        # and system prompts
        "caching": draw(st.booleans()),
        # the serving engine of each pool: the artifact's vLLM 0.1.2, or vLLM V1's chunked prefills
        "engines": draw(st.tuples(*[st.sampled_from(["vllm-0.1.2", "vllm-v1"])] * 2)),
        "conversation": draw(st.lists(st.integers(-1, 3), min_size=n, max_size=n)),
        "think": draw(st.lists(st.floats(0.0, 2.0), min_size=n, max_size=n)),
        "system": (draw(st.sampled_from([0, 16, 40])), draw(st.integers(1, 3))),
        # the first pool on spot: notices at a high rate (one per instance every 1-6 s), a
        # grace period that is sometimes too short to move everything
        "spot": draw(st.one_of(st.none(), st.fixed_dictionaries({
            "price": st.just(0.5),
            "preemption": st.fixed_dictionaries({"rate_per_hour": st.floats(600.0, 3600.0)}),
            "grace": st.floats(0.0, 5.0),
            "evacuation": st.sampled_from(["live", "recompute", "none"]),
            "order": st.sampled_from(["largest", "tier"]),
            "replacement": st.sampled_from(["spot", "on-demand", "none"]),
            "cold_start": st.floats(0.0, 3.0),
            "on_failure": st.sampled_from(["abort", "retry"]),
        }))),
    }


# the second pool's GPU: ~2.5x faster everywhere (an A100 beside an A10, in LinearTimer's terms)
FAST = {"base": 0.008, "per_prefill_token": 0.00008, "per_decode": 0.00012, "per_kv_token": 4e-7}


def sharing(s) -> Sharing:
    """Conversations (each request's drawn number, -1: none) whose later turns follow the
    turn before them, and a system prompt drawn per request."""
    last: dict[int, int] = {}
    follows = []
    for index, conversation in enumerate(s["conversation"]):
        follows.append(last.get(conversation, OPEN) if conversation >= 0 else OPEN)
        if conversation >= 0:
            last[conversation] = index
    tokens, prompts = s["system"]
    system = [index % prompts if tokens else -1 for index in range(len(follows))]
    turn = [0] * len(follows)
    for index, before in enumerate(follows):
        turn[index] = turn[before] + 1 if before != OPEN else int(s["conversation"][index] >= 0)
    return Sharing(s["conversation"], turn, follows, s["think"], system, tokens)


def build(s, check_every_step: bool = True, decode_stretches: bool | None = None) -> Simulation:
    """The scenario's run; by default checking block conservation after every iteration
    (every step its own event: decode stretches off)."""
    autoscale = dict(s["autoscale"])
    starting = s["instances"] + (s["second_pool"][0] if s["second_pool"] else 0)
    if autoscale.get("enabled"):  # the ceiling may not be below the start (a ConfigError)
        autoscale["max_instances"] = max(autoscale["max_instances"], starting)
    cluster = {
        **({"ledger": "prefix-caching"} if s["caching"] else {}),
        "instances": s["instances"],
        "kv_capacity_blocks": s["capacity"],
        "max_batch_size": s["max_batch_size"],
        "max_batched_tokens": s["max_batched_tokens"],
        "watermark_fraction": s["watermark"],
        "engine": s["engines"][0],
    }
    timers = {"slow": LinearTimer(capacity_blocks=s["capacity"])}
    second_pool = s["second_pool"] or ((1, s["capacity"]) if s["pd"] else None)  # PD needs two
    if second_pool is None:
        instances = {"cluster": cluster}
    else:
        count, blocks = second_pool
        fast = {**cluster, "instances": count, "kv_capacity_blocks": blocks, "engine": s["engines"][1]}
        instances = {"pools": [{"name": "slow", **cluster}, {"name": "fast", **fast}]}
        timers["fast"] = LinearTimer(capacity_blocks=blocks, **FAST)
    if s["pd"]:  # roles for the two pools; auto-scaling does not run with roles
        other = {"prefill": "decode", "decode": "prefill"}[s["first_role"]]
        instances["pools"][0]["role"], instances["pools"][1]["role"] = s["first_role"], other
        instances["pd"] = dict(s["pd"])
        instances["pd"]["layerwise"] &= s["pd"]["pairing"] == "immediate" and s["pd"]["copy"] == "blocking"
        autoscale = {}
    if s.get("spot") is not None and not s["pd"]:  # the first pool on spot (not with roles)
        spot = dict(s["spot"])
        if spot["replacement"] == "spot" and (spot["evacuation"] == "recompute" or spot["on_failure"] == "retry"):
            # spot replacing spot forever at a notice a second or two: a request longer than an
            # instance's life, recomputed or retried from scratch at each stop, would never end
            # (as it would not on such a cloud); notices ten times rarer let it finish
            spot["preemption"] = {"rate_per_hour": spot["preemption"]["rate_per_hour"] / 10}
        if "pools" not in instances:
            instances = {"pools": [{"name": "slow", **cluster}]}
            spot["replacement"] = "spot" if spot["replacement"] == "on-demand" else spot["replacement"]
        instances["pools"][0]["spot"] = spot
    config = make_config(
        **instances,
        workload={"priority": {"tiers": s["tiers"]}},
        scheduler={
            "name": s["scheduler"],
            "dispatch": s["dispatch"],
            "priority": s["priority"],
            **({"pairing": "slo"} if s["slo_migration"] else {}),
            "load_report_interval": s["report_interval"],
            "pairing_every": s["pairing_every"],
        },
        slo=s["slo"],
        migration={
            "mode": s["mode"],
            "last_stage_blocks": s["last_stage_blocks"],
            "max_stages": s["max_stages"],
            "prealloc_timeout": 1.0,
            **({"candidate": "least-critical-longest"} if s["slo_migration"] else {}),
        },
        faults=s["faults"],
        autoscale=autoscale,
    )
    workload = dataclasses.replace(
        make_workload(s["arrival"], s["prompt"], s["output"], s["tier"]), sharing=sharing(s)
    )
    return Simulation(
        config,
        timers["slow"],
        workload,
        transfer=make_transfer(),
        check_every_step=check_every_step,  # free + allocated == capacity after every iteration
        load_pool_model=lambda pool, key: timers["fast" if pool.name == "fast" else "slow"],
        decode_stretches=decode_stretches,
    )


def workload_follows(simulation: Simulation) -> list[int]:
    sharing = simulation.workload.sharing
    return sharing.follows.tolist() if sharing is not None else []


def check_summary_balances(result) -> None:
    """Hand-offs counted once each, the refused among the aborted; the bill the instances'
    lifetimes at the price."""
    summary = summarize(result, request_table(result), cluster_table(result))
    handoffs = (summary.get("pd") or {}).get("handoffs")
    if handoffs is not None:
        records = [m for m in MIGRATIONS.of(result) if m.kind == "handoff"]
        assert handoffs["committed"] + handoffs["aborted"] == len(records)
        assert handoffs["refused"] <= handoffs["aborted"] == sum(handoffs["abort_reasons"].values())
    cost = summary["cost"]
    lifetimes = sum(end - begin for begin, end in result.instance_lifetimes.values())
    assert cost["instance_seconds"] == pytest.approx(lifetimes, rel=1e-9, abs=1e-9)
    if not isinstance(cost["gpu_hour_price"], dict):  # one price (spot pools have their own)
        assert cost["cost"] == pytest.approx(cost["gpu_hours"] * cost["gpu_hour_price"], rel=1e-9)


def check_conserved(s) -> None:
    """Run a scenario to its end (the watchdog fails a run that hangs) and check that every
    request, block and migration is accounted for, that no idle instance stayed busy in the
    scheduler's view, and that no instance was removed while a migration touched it."""
    simulation = build(s)
    result = simulation.run()
    # every request arrived and ended exactly once (the engine raises on a second ending)
    assert len(s["arrival"]) == len(result.requests) and result.not_arrived == 0
    for request in result.requests:
        assert request.state in (RequestState.FINISHED, RequestState.ABORTED)
        if request.state is RequestState.FINISHED:
            assert request.generated == request.output_tokens
            assert request.first_token_time <= request.finish_time
        else:
            assert request.abort_reason in ALLOWED_ABORTS
    assert result.leaked_blocks == 0  # on every instance, removed ones included
    # INV-4 idle-view: checked at the end of every idle stretch (strict with check_every_step:
    # a stale view raises there); none of them counted a second
    assert result.stale_idle_seconds == 0.0
    for instance in simulation.live_ids:
        ledger = simulation.llumlet(instance).ledger
        assert ledger.allocated == 0 and ledger.reserved == 0 and ledger.free == ledger.capacity
    # the summary's counters balance where a reader would check them
    check_summary_balances(result)
    # every migration ended committed or aborted with a reason
    migrations = MIGRATIONS.of(result)
    for record in migrations:
        assert record.outcome in ("committed", "aborted")
        assert (record.outcome == "aborted") == bool(record.abort_reason)
    committed = sum(r.outcome == "committed" for r in migrations)
    assert committed == sum(r.migrations for r in result.requests)
    scaling_log, disaggregated = SCALING_LOG.of(result) or [], PD.of(result)
    outages = sorted((f["start"], f["end"]) for f in s["faults"] if f["kind"] == "scheduler_down")
    for what, happened in (
        ("scale-in", any(e.action == "scale_in" for e in scaling_log)),
        ("instance removed", any(e.action == "removed" for e in scaling_log)),
        ("migration committed", committed > 0),
        ("migration to a draining instance aborted",
         any(m.abort_reason == "destination_draining" for m in migrations)),
        ("instance failed", any(e.event == "instance_failed" for e in FAULT_LOG.of(result) or ())),
        ("SLO-aware dispatch", s["dispatch"] == "slo-aware"),
        ("idle stretches checked against the view", result.idle_stretches > 0),
        ("SLO-driven migration committed", s["slo_migration"] and committed > 0),
        ("adaptive headroom moved", len({sample.headroom for sample in result.load_samples}) > 1),
        ("overlapping outages", any(b[0] < a[1] for a, b in zip(outages, outages[1:]))),
        ("several transfer-failure windows", sum(f["kind"] == "transfer_failure" for f in s["faults"]) > 1),
        ("hand-off committed", any(m.kind == "handoff" and m.outcome == "committed" for m in migrations)),
        ("hand-off refused by a full decode instance",
         any(m.kind == "handoff" and m.abort_reason == "destination_out_of_memory" for m in migrations)),
        ("adaptive PD served a request in the other role", disaggregated is not None and any(disaggregated.role_swaps.values())),
        ("balance migration among decode instances committed", s["pd"] is not None and any(
            m.kind == "balance" and m.outcome == "committed" for m in migrations)),
        ("prefix cache hit", any(r.cached_tokens for r in result.requests)),
        ("a transfer found blocks cached at its destination",
         any(c["transfer_hits"] for c in (PREFIX_CACHE.of(result) or {}).values())),
        ("a conversation's later turn arrived", any(f != OPEN for f in workload_follows(simulation))),
        ("vLLM V1 pool chunked a prompt over steps", "vllm-v1" in s["engines"][: 1 if s["second_pool"] is None and not s["pd"] else 2]
         and any(r.prompt_tokens > s["max_batched_tokens"] and r.first_token_time is not None for r in result.requests)),
        ("migration between pools committed", s["second_pool"] is not None and any(
            m.outcome == "committed" and simulation.pool_of(m.source) != simulation.pool_of(m.destination)
            for m in migrations)),
    ):
        if happened:
            event(what)
    # no migration touching a spot instance commits after its stop
    spot_log = SPOT_LOG.of(result) or []
    for stop in (e for e in spot_log if e.event == STOP):
        late = [m for m in migrations if stop.instance in (m.source, m.destination)
                and m.outcome == "committed" and m.end > stop.time]
        assert not late, (stop, late)
    for what, happened in (
        ("spot notice", any(e.event == NOTICE for e in spot_log)),
        ("spot evacuation committed", any(m.kind == "evacuation" and m.outcome == "committed" for m in migrations)),
        ("spot evacuation cut by the stop", any(m.kind == "evacuation" and m.abort_reason == "source_failed"
                                                for m in migrations)),
    ):
        if happened:
            event(what)
    # an instance is never removed while it is a migration's source or destination
    for scaling in scaling_log:
        if scaling.action == "removed":
            touching = [
                m for m in migrations
                if scaling.instance in (m.source, m.destination) and m.start <= scaling.time < m.end
            ]
            assert not touching, (scaling, touching)


# Found by this test (seed 1): a V1 prefill instance preempts its part-way prompt each step
# for want of the blocks a held request keeps, and Llumnix pairing offered that prompt as the
# instance's one hand-off, which could never start, so the held request never left (and the
# watchdog, counting batches, saw progress)
LIVELOCK = json.loads((Path(__file__).parent / "data" / "v1_prefill_handoff_livelock.json").read_text())
# Found by this test once it drew spot pools (thousands of instance stops a run): a V1 request
# whose last prompt chunk ran in the step under way, while another took the part-way slot, was
# in no list a failure collects, so it stayed "running" on the stopped instance for ever
LAST_CHUNK = json.loads((Path(__file__).parent / "data" / "v1_last_chunk_lost_at_failure.json").read_text())
LAST_CHUNK["engines"], LAST_CHUNK["system"] = tuple(LAST_CHUNK["engines"]), tuple(LAST_CHUNK["system"])


@given(scenarios())
@example(LIVELOCK)
@example(LAST_CHUNK)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_blocks_and_requests_are_conserved_under_migration_scaling_and_faults(s):
    check_conserved(s)


@pytest.mark.slow
@given(scenarios())
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_thousands_of_random_fault_scaling_and_migration_schedules_conserve_everything(s):
    check_conserved(s)


@st.composite
def stretchable(draw):
    """Scenarios where decode stretches run (a scheduler without migration, no scaling, no
    roles, the artifact's engine, no shared cache), or any scenario."""
    s = draw(scenarios())
    if draw(st.booleans()):
        s.update(
            scheduler=draw(st.sampled_from(["round-robin", "infaas++"])),
            autoscale={"enabled": False},
            pd=None,
            caching=False,
            engines=("vllm-0.1.2", "vllm-0.1.2"),
        )
    return s


@given(stretchable())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_decode_stretches_give_the_request_table_of_step_by_step_runs(s):
    """INV-6 same-result across the engine's two paths: forming a quiet batch's steps in one
    go leaves every request, batch count, instance busy time and load sample as stepping
    through them one event at a time does (touched by arrivals, failures and outages)."""
    stepped, stretched = build(s, False, decode_stretches=False), build(s, False, decode_stretches=True)
    slow, fast = stepped.run(), stretched.run()
    assert _csv(request_table(fast)) == _csv(request_table(slow))
    assert (fast.batches, fast.end_time) == (slow.batches, slow.end_time)
    assert [r.busy_seconds for r in stretched.instances.values()] == [r.busy_seconds for r in stepped.instances.values()]
    assert fast.load_samples == slow.load_samples
    assert fast.leaked_blocks == 0
    if next(stretched.env._eid) < next(stepped.env._eid):
        event("steps formed in stretches")


def _csv(table) -> bytes:
    buffer = io.StringIO()
    table.to_csv(buffer, index=False)
    return buffer.getvalue().encode()


def _table_bytes(simulation: Simulation) -> bytes:
    buffer = io.StringIO()
    request_table(simulation.run()).to_csv(buffer, index=False)
    return buffer.getvalue().encode()


@pytest.mark.parametrize(
    "scheduler", [{}, {"dispatch": "slo-aware"}, {"priority": {"mode": "adaptive-headroom", "adaptive": {"interval": 2}}}]
)
def test_same_config_and_seed_give_a_byte_identical_request_table(scheduler):
    def run(seed: int) -> bytes:
        config = make_config(
            seed=seed,
            scheduler=scheduler,
            slo={"ladder": {"ttft": 0.5, "tpot": 0.05}},
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


def test_conversations_with_a_prefix_cache_give_a_byte_identical_request_table_per_seed():
    """INV-6 same-result with the closed loop and the cache: a later turn's arrival and its
    blocks found cached depend only on the seed."""

    def run(seed: int) -> bytes:
        config = make_config(
            seed=seed,
            cluster={"instances": 3, "kv_capacity_blocks": 300, "ledger": "prefix-caching"},
            scheduler={"name": "llumnix", "dispatch": "cache-aware"},
            workload={
                "source": "sessions",
                "trace": "traces/sharegpt/sharegpt_v3_sessions.csv",
                "num_requests": 40,
                "arrival": {"rate": 0.5},
                "system_prompt": {"tokens": 64, "prompts": 2},
            },
        )
        return _table_bytes(Simulation(config, LinearTimer(capacity_blocks=300), transfer=make_transfer()))

    first, second, other = run(1), run(1), run(2)
    assert first == second and b"cached_tokens" in first.split(b"\n")[0]
    assert first != other
