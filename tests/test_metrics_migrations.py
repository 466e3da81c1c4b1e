"""Migration metrics: the log, churn, time spent migrating, the trace-event timeline, outputs."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import astuple

import pandas as pd
import pytest

from sim.engine import Simulation, SimulationResult
from sim.engine.migrations import MIGRATIONS
from sim.instance.migration import MigrationOutcome, MigrationRecord
from sim.instance.transfer_plan import MigrationMode
from sim.instance.request import Request
from sim.metrics import migration_table, request_table, write_run, write_timeline
from sim.metrics.migration import migrating_fractions, migration_summary
from sim.metrics.trace import pid_of
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload, placed

CAPACITY = 100


@pytest.fixture(scope="module")
def result() -> SimulationResult:
    """Three instances; request 0 (on 0) is sent to a full instance 2 (aborted at once,
    nothing copied), then 0 -> 1 and back 1 -> 0 (both committed: a reversal)."""
    config = make_config(
        cluster={"instances": 3, "kv_capacity_blocks": CAPACITY}, output={"timeline": True}
    )
    simulation = Simulation(
        config,
        LinearTimer(capacity_blocks=CAPACITY),
        make_workload([0.0, 0.0, 0.0], [640, 160, 1400], [300, 400, 300], tier=[0, 1, 2]),
        transfer=make_transfer(),
        scheduler=placed(config, [0, 1, 2]),
        record_batches=True,
    )
    for when, source, destination in ((0.5, 0, 2), (1.0, 0, 1), (4.0, 1, 0)):
        simulation.at(when, lambda s=source, d=destination: simulation.migrate(0, s, d))
    return simulation.run()


def record(mid, request, source, destination, start, end, outcome="committed", **fields):
    return MigrationRecord(
        id=mid, request_id=request, source=source, destination=destination,
        mode=MigrationMode.LIVE, start=start, end=end, outcome=MigrationOutcome(outcome),
        committed_at=end if outcome == "committed" else math.nan, **fields,
    )


def hand_built(migrations, lifetimes, end_time=10.0, requests=()) -> SimulationResult:
    return SimulationResult(
        config=make_config(), requests=list(requests), load_samples=[],
        instance_lifetimes=lifetimes, instance_pools=dict.fromkeys(lifetimes, "cluster"), end_time=end_time, wall_seconds=0.0,
        capacity_blocks=CAPACITY, workload_description="hand-built", sections={MIGRATIONS.name: migrations},
    )


def test_the_scenario_is_what_the_other_tests_assume(result):
    outcomes = [(r.source, r.destination, r.outcome, r.blocks) for r in MIGRATIONS.of(result)]
    assert outcomes == [(0, 2, "aborted", 0), (0, 1, "committed", 43), (1, 0, "committed", 52)]
    assert result.requests[0].instances == [0, 1, 0]


def test_log_rows_match_the_records(result):
    table = migration_table(result)
    assert len(table) == len(MIGRATIONS.of(result))
    for row, rec in zip(table.itertuples(index=False), MIGRATIONS.of(result)):
        values = list(row)
        assert values.pop(2) == 0  # request_tier of request 0
        assert values == pytest.approx(list(astuple(rec)), nan_ok=True)
    assert list(table.columns[:3]) == ["id", "request_id", "request_tier"]


def test_churn_counts_requests_moved_3_times_and_reversals():
    migrations = [
        # request 7: path 0>1>0>1, migrated 3 times with 2 reversals
        record(0, 7, 0, 1, 1.0, 1.5), record(1, 7, 1, 0, 2.0, 2.5), record(2, 7, 0, 1, 3.0, 3.5),
        # request 8: path 0>2>3, no reversal; its aborted attempt back to 0 does not count
        record(3, 8, 0, 2, 1.0, 1.2), record(4, 8, 2, 0, 2.0, 2.0, "aborted"),
        record(5, 8, 2, 3, 4.0, 4.5),
        # request 9: path 3>0>3, one reversal
        record(6, 9, 3, 0, 5.0, 5.5), record(7, 9, 0, 3, 6.0, 6.5),
    ]
    run = hand_built(
        migrations, {i: (0.0, 10.0) for i in range(4)}, requests=[Request(7, 0.0, 10, 10, tier=2)]
    )
    table = migration_table(run)
    assert table.groupby("request_id")["request_tier"].unique().to_dict() == {7: [2], 8: [-1], 9: [-1]}
    churn = migration_summary(run, table)["churn"]
    assert churn == {
        "requests_migrated": 3,
        "requests_migrated_3_or_more": 1,
        "reversals": 3,
        "requests_with_reversal": 2,
    }


def test_migrating_fraction_on_known_intervals():
    migrations = [
        record(0, 1, 0, 1, 1.0, 3.0),  # 2 s on 0 and 1
        record(1, 2, 1, 2, 4.0, 6.0),  # 2 s on 1; on 2 only from its start at 5
        record(2, 3, 0, 2, 8.0, math.nan, "in_flight"),  # until the end of the run
    ]
    lifetimes = {0: (0.0, 10.0), 1: (0.0, 10.0), 2: (5.0, 10.0)}
    table = migration_table(hand_built(migrations, lifetimes))
    fractions = migrating_fractions(table, lifetimes)
    assert fractions == pytest.approx({0: 0.4, 1: 0.4, 2: 0.6})
    summary = migration_summary(hand_built(migrations, lifetimes), table)
    assert summary["migrating_fraction"]["mean"] == pytest.approx(1.4 / 3)
    assert summary["migrating_fraction"]["per_instance"] == pytest.approx(
        {"0": 0.4, "1": 0.4, "2": 0.6}
    )
    # overlapping intervals on one instance are counted once
    overlapping = migration_table(
        hand_built([record(0, 1, 0, 1, 1.0, 3.0), record(1, 2, 0, 2, 2.0, 4.0)], lifetimes)
    )
    assert migrating_fractions(overlapping, lifetimes)[0] == pytest.approx(0.3)


def test_summary_section_counts_outcomes_downtime_and_churn(result):
    summary = migration_summary(result, migration_table(result))
    committed = [r for r in MIGRATIONS.of(result) if r.outcome == "committed"]
    assert (summary["total"], summary["committed"], summary["aborted"]) == (3, 2, 1)
    assert summary["abort_reasons"] == {"destination_out_of_memory": 1}
    assert summary["downtime"]["mean"] == pytest.approx(sum(r.downtime for r in committed) / 2)
    assert summary["mean_stages"] == 2.0
    assert summary["churn"]["reversals"] == 1 and summary["churn"]["requests_with_reversal"] == 1


def load_trace(result, tmp_path) -> list[dict]:
    path = write_timeline(result, tmp_path / "timeline.json")
    return json.loads(path.read_text(encoding="utf-8"))["traceEvents"]


def test_timeline_has_one_process_per_instance_and_the_batches(result, tmp_path):
    events = load_trace(result, tmp_path)
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {pid_of(i): f"instance {i}" for i in result.instance_lifetimes}
    batches = sorted(
        (e["pid"], e["ts"], e["dur"], e["name"], e["args"]["size"])
        for e in events
        if e["ph"] == "X" and e["name"] in ("prefill", "decode")
    )
    expected = sorted(
        (pid_of(i), round(start * 1e6), round((start + duration) * 1e6) - round(start * 1e6),
         "prefill" if prefill else "decode", size)
        for i, start, duration, prefill, size in result.batch_log
    )
    assert batches == expected and len(batches) == len(result.batch_log) > 0
    for (_, _, dur, _, _), (_, _, duration, _, _) in zip(
        batches, sorted(result.batch_log, key=lambda b: (pid_of(b[0]), b[1]))
    ):
        assert abs(dur - duration * 1e6) <= 1
    # slices on one thread never overlap, or the viewers would nest them
    by_thread = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            by_thread[e["pid"], e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        spans.sort()
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))


def test_each_committed_migration_is_one_flow_pair_inside_its_slices(result, tmp_path):
    events = load_trace(result, tmp_path)
    slices = [e for e in events if e["ph"] == "X" and e.get("cat") == "migration"]
    flows = [e for e in events if e["ph"] in ("s", "f")]
    committed = [r for r in MIGRATIONS.of(result) if r.outcome == "committed"]
    assert len(flows) == 2 * len(committed)
    for rec in committed:
        pair = {e["ph"]: e for e in flows if e["id"] == rec.id}
        assert len([e for e in flows if e["id"] == rec.id]) == 2 and set(pair) == {"s", "f"}
        start, end = pair["s"], pair["f"]
        assert (start["cat"], start["name"]) == (end["cat"], end["name"])
        assert end["bp"] == "e"
        assert start["pid"] == pid_of(rec.source) and end["pid"] == pid_of(rec.destination)
        for flow, name in (
            (start, f"migrate out r{rec.request_id} \u2192 {rec.destination}"),
            (end, f"migrate in r{rec.request_id} \u2190 {rec.source}"),
        ):
            (enclosing,) = [
                e for e in slices
                if (e["pid"], e["tid"]) == (flow["pid"], flow["tid"])
                and e["ts"] < flow["ts"] < e["ts"] + e["dur"]
            ]
            assert enclosing["name"] == name and enclosing["args"]["migration"] == rec.id
            assert enclosing["dur"] == round(rec.end * 1e6) - round(rec.start * 1e6)


def test_an_abort_that_copied_nothing_has_its_own_look_and_no_arrow(result, tmp_path):
    events = load_trace(result, tmp_path)
    (aborted,) = [r for r in MIGRATIONS.of(result) if r.outcome == "aborted"]
    assert not [e for e in events if e["ph"] in ("s", "f") and e["id"] == aborted.id]
    marked = [e for e in events if e["ph"] == "X" and e.get("args", {}).get("migration") == aborted.id]
    assert sorted(e["name"] for e in marked) == ["aborted in r0 \u2190 0", "aborted out r0 \u2192 2"]
    assert {e["cname"] for e in marked} == {"terrible"}


def test_write_run_writes_the_log_the_timeline_and_the_plot_and_changes_nothing(result, tmp_path):
    before = request_table(result)
    records = [repr(astuple(r)) for r in MIGRATIONS.of(result)]
    summary = write_run(result, tmp_path)
    assert {"migrations.csv", "timeline.json", "migrations.png"} <= set(summary["files"])
    assert all((tmp_path / name).exists() for name in summary["files"])
    assert len(pd.read_csv(tmp_path / "migrations.csv")) == 3
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["migration"]["committed"] == 2
    pd.testing.assert_frame_equal(request_table(result), before)
    assert [repr(astuple(r)) for r in MIGRATIONS.of(result)] == records


def test_a_run_without_migrations_still_writes_the_log_header(tmp_path):
    config = make_config(cluster={"instances": 1, "kv_capacity_blocks": CAPACITY})
    simulation = Simulation(
        config,
        LinearTimer(capacity_blocks=CAPACITY),
        make_workload([0.0], [64], [4]),
        scheduler=placed(config, [0]),
    )
    summary = write_run(simulation.run(), tmp_path, plots=False)
    assert "timeline.json" not in summary["files"] and "migrations.png" not in summary["files"]
    header = (tmp_path / "migrations.csv").read_text().splitlines()
    assert header[0].startswith("id,request_id,request_tier,source,destination,mode,start,end")
    assert len(header) == 1
    assert summary["migration"]["total"] == 0 and summary["migration"]["churn"]["reversals"] == 0
