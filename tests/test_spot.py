"""Spot pools, by hand: a notice's grace period long enough moves every running request and
loses none; one too short loses exactly those that could not finish moving; ``recompute``
pays the whole prefill again; a replacement serves after the cold start; notices come when
their source says (``sim.engine.spot``, ``sim.engine.preemptions``).

The cluster: a spot instance (id 0) whose requests are placed by hand, and an empty on-demand
instance (id 1) with room for all of them. Iterations take about 1 s (``LinearTimer`` with a
large base), so a request grows by one token a second and holds its blocks through the test; the
link copies one 8 MiB block in 0.1 s (plus a 0.01 s stage latency), and a migration is one
stage (``max_stages: 1``): it waits for the source's next iteration boundary (≤ 1.1 s), then
copies every block the request holds.
"""

from __future__ import annotations

import math

import pytest

from sim.engine import Simulation
from sim.engine.migrations import MIGRATIONS
from sim.engine.preemptions import lifetime_seconds, read_availability_trace
from sim.engine.spot import LOST, NOTICE, RECOMPUTED, REPLACED, SPOT_LOG
from sim.instance.request import RequestState
from sim.workload.traces import TraceError
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload, placed

BLOCK_BYTES = 16 * 524_288  # make_transfer's block
ONE_BLOCK_S = 0.1
NOTICE_AT = 3.0
BOUNDARY_WAIT_S = 1.1  # an iteration, slowed by a copy in flight (colocated_slowdown)
# prompts that fill 40, 30 and 20 blocks with their first token, with room to decode 15 more
# tokens (15 s) before a block more is needed: the last of them leaves by ~13 s
BLOCKS = (40, 30, 20)
PROMPTS = [(blocks - 1) * 16 for blocks in BLOCKS]


def trace_file(tmp_path, remove_at_ms: int = int(NOTICE_AT * 1000)):
    """One node that the trace takes back at ``remove_at_ms``: a notice, with certainty, for
    every live instance of the pool then (removed 1 of 1)."""
    path = tmp_path / "one_removal.csv"
    path.write_text(f"0,add,node1\n{remove_at_ms},remove,node1\n")
    return path


def spot_run(tmp_path, evacuation="live", grace=30.0, replacement="none", cold_start=0.0, prompts=PROMPTS,
             outputs=None, on_failure="abort", record_batches=False):
    spot = {
        "price": 0.5,
        "preemption": {"trace": str(trace_file(tmp_path))},
        "grace": grace,
        "evacuation": evacuation,
        "replacement": replacement,
        "cold_start": cold_start,
        "on_failure": on_failure,
    }
    config = make_config(
        pools=[
            {"name": "spot", "instances": 1, "kv_capacity_blocks": 200, "watermark_fraction": 0.0, "spot": spot},
            {"name": "od", "instances": 1, "kv_capacity_blocks": 200, "watermark_fraction": 0.0},
        ],
        scheduler={"name": "round-robin"},
        migration={"max_stages": 1},
    )
    outputs = outputs or [400] * len(prompts)
    workload = make_workload([0.0] * len(prompts), prompts, outputs)
    timer = LinearTimer(capacity_blocks=200, base=1.0)
    return Simulation(
        config,
        timer,
        workload,
        transfer=make_transfer(stage_latency=0.01, bandwidth=BLOCK_BYTES / ONE_BLOCK_S),
        # every request to the spot instance; dispatched again, to the on-demand one
        scheduler=placed(config, [0] * len(prompts) + [1] * len(prompts)),
        check_every_step=True,
        record_batches=record_batches,
    )


def events(result, kind):
    return [event for event in SPOT_LOG.of(result) if event.event == kind]


def test_a_grace_period_long_enough_moves_every_running_request_and_loses_none(tmp_path):
    simulation = spot_run(tmp_path, grace=30.0)
    result = simulation.run()
    evacuations = [m for m in MIGRATIONS.of(result) if m.kind == "evacuation"]
    # largest first, one at a time: 40, 30, then 20 blocks, each copied whole in one stage
    assert [m.request_id for m in evacuations] == [0, 1, 2]
    assert [m.outcome for m in evacuations] == ["committed"] * 3
    assert [m.blocks for m in evacuations] == list(BLOCKS)
    for m in evacuations:  # the copy: latency + blocks at 0.1 s each, after the boundary wait
        assert m.end - m.suspended_at == pytest.approx(0.01 + m.blocks * ONE_BLOCK_S)
        assert 0.0 <= m.suspended_at - m.start <= BOUNDARY_WAIT_S
    assert [e.time for e in events(result, NOTICE)] == [NOTICE_AT]
    assert not events(result, LOST)
    assert all(r.state is RequestState.FINISHED and r.instances == [0, 1] for r in result.requests)
    # every request moved before the stop; the emptied instance left before its deadline
    assert evacuations[-1].end < NOTICE_AT + 30.0
    assert result.instance_lifetimes[0][1] < NOTICE_AT + 30.0


def test_a_grace_period_too_short_loses_exactly_the_requests_that_could_not_finish_moving(tmp_path):
    # 40 blocks take 4.01 s after a wait of at most 1.1 s: committed by 8.11 s, before the
    # 9 s stop; the 30-block request then needs 3.01 s more (done at 10.02 s at the soonest)
    # and cannot finish: it and the 20-block one behind it are lost (its migration aborted
    # by the stop)
    simulation = spot_run(tmp_path, grace=6.0)
    result = simulation.run()
    evacuations = [m for m in MIGRATIONS.of(result) if m.kind == "evacuation"]
    assert [(m.request_id, m.outcome) for m in evacuations] == [(0, "committed"), (1, "aborted")]
    assert evacuations[1].abort_reason == "source_failed"
    assert sorted(e.detail for e in events(result, LOST)) == [1, 2]
    states = [r.state for r in result.requests]
    assert states == [RequestState.FINISHED, RequestState.ABORTED, RequestState.ABORTED]
    assert result.instance_lifetimes[0][1] == NOTICE_AT + 6.0  # stopped at the deadline
    assert result.leaked_blocks == 0


def test_the_lost_are_retried_from_scratch_when_clients_retry(tmp_path):
    result = spot_run(tmp_path, grace=6.0, on_failure="retry").run()
    assert all(r.state is RequestState.FINISHED for r in result.requests)
    assert [r.retries for r in result.requests] == [0, 1, 1]


def test_recompute_pays_the_whole_prefill_again(tmp_path):
    """At the notice the request is dispatched again from scratch: it finishes exactly when the
    same request arriving at the notice on the idle on-demand instance would."""
    prompt, output = [600], [30]
    result = spot_run(tmp_path, evacuation="recompute", prompts=prompt, outputs=output).run()
    request = result.requests[0]
    assert [e.detail for e in events(result, RECOMPUTED)] == [0]
    assert request.retries == 1 and request.instances == [0, 1]
    assert result.instance_lifetimes[0][1] == NOTICE_AT  # holds nothing after the notice

    timer = LinearTimer(capacity_blocks=200, base=1.0)
    alone = Simulation(
        make_config(cluster={"instances": 1, "kv_capacity_blocks": 200, "watermark_fraction": 0.0},
                    scheduler={"name": "round-robin"}),
        timer,
        make_workload([NOTICE_AT], prompt, output),
    ).run()
    assert request.finish_time == pytest.approx(alone.requests[0].finish_time)
    # what it had generated before the notice was thrown away and made again
    assert request.first_token_time == pytest.approx(alone.requests[0].first_token_time)


def test_none_serves_on_until_the_stop_and_loses_what_is_left(tmp_path):
    result = spot_run(tmp_path, evacuation="none", grace=6.0).run()
    assert not [m for m in MIGRATIONS.of(result) if m.kind == "evacuation"]
    assert sorted(e.detail for e in events(result, LOST)) == [0, 1, 2]
    assert all(r.state is RequestState.ABORTED for r in result.requests)


@pytest.mark.parametrize(("replacement", "pool"), [("spot", "spot"), ("on-demand", "od")])
def test_a_replacement_serves_after_the_cold_start_billed_from_the_notice(tmp_path, replacement, pool):
    simulation = spot_run(tmp_path, replacement=replacement, cold_start=30.0, prompts=[600], outputs=[200])
    result = simulation.run()
    (ready,) = events(result, REPLACED)
    assert ready.time == NOTICE_AT + 30.0 and ready.detail == pool
    assert result.instance_pools[ready.instance] == pool
    assert result.instance_lifetimes[ready.instance][0] == NOTICE_AT


def test_a_rate_gives_each_instance_its_own_seeded_lifetime(tmp_path):
    config = make_config(
        pools=[{"name": "spot", "instances": 3, "spot": {"price": 0.5, "preemption": {"rate_per_hour": 360.0},
                                                          "replacement": "none", "evacuation": "none"}},
               {"name": "od", "instances": 1}],
        seed=7,
        scheduler={"name": "round-robin"},
    )
    result = Simulation(config, LinearTimer(), make_workload([0.0, 60.0], [100, 100], [10, 10])).run()
    notices = {e.instance: e.time for e in events(result, NOTICE)}
    expected = {i: lifetime_seconds(360.0, 7, i) for i in range(3)}
    assert notices == pytest.approx({i: t for i, t in expected.items() if t < result.end_time})
    assert all(t > 0 for t in expected.values()) and len(set(expected.values())) == 3


def test_the_trace_replays_a_removal_as_a_share_of_the_nodes_live_then(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text("0,add,a\n0,add,b\n0,add,c\n0,add,d\n1000,remove,a\n1000,remove,b\n2500,add,e\n3000,remove,e\n")
    removals = read_availability_trace(path)
    assert [(r.time, r.removed, r.live) for r in removals] == [(1.0, 2, 4), (3.0, 1, 3)]


def test_the_shipped_trace_reads():
    from sim.workload.build import REPO_ROOT

    removals = read_availability_trace(REPO_ROOT / "traces/spot/aws_g4dn_availability.csv")
    assert sum(r.removed for r in removals) == 74 and all(0 < r.removed <= r.live for r in removals)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("0,add,a\nsoon,remove,a\n", "row 2, column 'time_ms'"),
        ("0,add,a\n5,evict,a\n", "row 2, column 'event'"),
        ("0,add,a\n5,remove,b\n", "row 2, column 'node'"),
        ("0,add,a\n5,add,a\n", "row 2, column 'node'"),
        ("9,add,a\n5,remove,a\n", "row 2, column 'time_ms'"),
        ("0,add,a\n5,remove\n", "row 2: 2 cells"),
        ("0,add,a\n", "no remove row"),
    ],
)
def test_a_bad_trace_names_its_file_row_and_column(tmp_path, text, where):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(TraceError, match=f"{path}: {where}" if "row" in where else where):
        read_availability_trace(path)


def test_spot_is_off_by_default_and_costs_nothing_new():
    config = make_config(cluster={"instances": 1})
    simulation = Simulation(config, LinearTimer(), make_workload([0.0], [10], [5]))
    assert simulation.spot is None
    assert SPOT_LOG.of(simulation.run()) is None
    assert math.isfinite(simulation.now)


def test_the_summary_counts_the_notice_and_prices_spot_and_on_demand(tmp_path):
    from sim.metrics import request_table
    from sim.metrics.summary import summarize
    from sim.metrics.tables import cluster_table

    result = spot_run(tmp_path, grace=6.0).run()
    summary = summarize(result, request_table(result), cluster_table(result))
    spot = summary["spot"]
    assert (spot["notices"], spot["moved"], spot["evacuations_aborted"], spot["lost"]) == (1, 1, 1, 2)
    assert spot["kv_blocks_copied"] == 40  # the cut copy never arrived
    # the spot instance lived 9 s at 0.5 a GPU-hour, the on-demand one to the end at 1.0
    spot_s = NOTICE_AT + 6.0
    od_s = result.instance_lifetimes[1][1] - result.instance_lifetimes[1][0]
    assert spot["cost_at_spot_prices"] == pytest.approx((spot_s * 0.5 + od_s) / 3600)
    assert spot["cost_at_on_demand_prices"] == pytest.approx((spot_s + od_s) / 3600)
    assert summary["cost"]["cost"] == pytest.approx(spot["cost_at_spot_prices"])
    assert spot["cost_per_1000_requests_at_spot_prices"] == pytest.approx(1000 * spot["cost_at_spot_prices"])


def test_a_bad_trace_stops_the_run_with_one_line_naming_file_row_and_column(tmp_path_factory, tmp_path, capsys):
    from tests.test_bad_inputs import refused_run

    bad = tmp_path_factory.mktemp("trace") / "bad.csv"
    bad.write_text("0,add,a\n1000,remove,a\n2000,evict,b\n")
    base = (
        "name: bad-trace\nworkload: {source: synthetic, num_requests: 20}\npools:\n"
        f"  - {{name: s, instances: 1, spot: {{price: 0.5, preemption: {{trace: {bad}}}}}}}\n"
        "  - {name: d, instances: 1}\n"
    )
    line = refused_run(base, [], tmp_path, capsys)
    assert line == f"llumsim: error: {bad}: row 3, column 'event': 'evict' is not add or remove"


def test_the_timeline_marks_the_notice_and_the_stop(tmp_path):
    import json

    from sim.metrics.trace import pid_of, write_timeline

    result = spot_run(tmp_path, grace=6.0, record_batches=True).run()
    events = json.loads(write_timeline(result, tmp_path / "timeline.json").read_text())["traceEvents"]
    marks = [(e["name"], e["pid"], e["ts"]) for e in events if e["ph"] == "i"]
    assert marks == [("spot notice", pid_of(0), 3_000_000), ("spot stop", pid_of(0), 9_000_000)]
    assert any(e.get("args", {}).get("kind") == "evacuation" for e in events)


def test_the_autoscaler_scales_out_rather_than_cancel_the_drain_of_an_instance_under_notice():
    # the rule wants capacity back and names the draining instance to keep; a spot instance
    # under notice leaves whatever the rule wants, so one new instance is started instead
    import simpy

    from sim.cluster.scaling import CANCEL_DRAIN, ScalingDecision
    from sim.engine.scaling import Scaler

    class Rule:
        def decide(self, now, reports, instances, starting):
            return ScalingDecision(CANCEL_DRAIN, instance=3)

    class Pool:
        def choose(self, reports, pool_of, pool_names):
            return "spot"

    class Actions:
        pool_names = ["spot"]
        undrained: list[int] = []
        added: list[str] = []

        def pool_of(self, instance_id):
            return "spot"

        def undrain(self, instance_id):
            self.undrained.append(instance_id)

        def add_instance(self, pool, billed_from=None):
            self.added.append(pool)
            return 9

    def run(leaving: bool) -> Actions:
        env, actions = simpy.Environment(), Actions()
        actions.undrained, actions.added = [], []
        scaler = Scaler(env, Rule(), actions, 1.0, Pool(), lambda instance_id: leaving and instance_id == 3)
        scaler.on_reports(0.0, {}, 4)
        env.run(until=2.0)
        return actions

    assert (run(leaving=False).undrained, run(leaving=False).added) == ([3], [])
    noticed = run(leaving=True)
    assert (noticed.undrained, noticed.added) == ([], ["spot"])
