"""INV-4 idle-view: an idle instance's last report in the scheduler's view shows it idle.

An instance that dropped a request (it outgrew every block) used to keep the report taken
before the drop, full, and serve nothing for the rest of the run; the artifact's step that
drops a request still reports the instance after the drop (``vllm/simulator/llm_engine.py``,
the early return of ``step``)."""

from __future__ import annotations

import pandas as pd
import pytest

from sim.config import load_config
from sim.engine import Simulation
from sim.engine.idle_watch import IdleWatch, StaleViewError
from sim.instance.load import LoadReport
from sim.instance.request import RequestState
from sim.metrics import write_run
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload
from tests.reports import make_report

# per-step reports (the artifact's cadence) and periodic ones (the paper's prose)
PRESETS = ["llumnix", "infaas++", "llumnix-base", "llumnix-prose", "llumnix-prose-base", "round-robin"]
PER_STEP = ["llumnix", "infaas++", "llumnix-base", "round-robin"]  # scheduler.idle_reports applies


def dropped_then_freest(scheduler: str, idle_reports: str = "always") -> Simulation:
    """Request 0 grows past all 20 blocks of its instance and is aborted
    ``exceeds_instance_limits`` at ~4.5 s (100-token prompt, 1,000 tokens asked); the other
    instance holds request 1 (17 blocks) until ~5.2 s. Request 2 arrives at 5.0 s: the
    instance that dropped request 0 is empty, the freest, and must get it."""
    config = make_config(
        cluster={"instances": 2, "kv_capacity_blocks": 20, "watermark_fraction": 0.0, "max_batched_tokens": 2048},
        # no migration: where each request runs is where it was dispatched
        scheduler={"name": scheduler, "load_report_interval": 0.25, "pairing": "none", "idle_reports": idle_reports},
    )
    workload = make_workload([0.0, 0.05, 5.0, 5.1], [100, 16, 40, 40], [1000, 250, 20, 20])
    return Simulation(config, LinearTimer(capacity_blocks=20), workload, transfer=make_transfer(), check_every_step=True)


@pytest.mark.parametrize(
    "scheduler, idle_reports",
    [(p, "always") for p in PRESETS if p != "round-robin"]
    + [(p, "artifact") for p in PER_STEP if p != "round-robin"],
)
def test_an_instance_that_dropped_a_request_is_dispatched_to_when_it_is_the_freest(scheduler, idle_reports):
    """Both reporting choices report after a drop (the artifact's early return of ``step``;
    periodic reports see it at the next tick)."""
    simulation = dropped_then_freest(scheduler, idle_reports)
    result = simulation.run()
    dropped, busy, later = result.requests[0], result.requests[1], result.requests[2]
    dropped_on, busy_on = dropped.instances[0], busy.instances[0]
    assert dropped_on != busy_on
    assert dropped.state is RequestState.ABORTED and dropped.abort_reason == "exceeds_instance_limits"
    assert dropped.finish_time < later.arrival < busy.finish_time  # the other is still busy then
    assert later.instances[0] == dropped_on
    assert result.idle_stretches > 0
    if idle_reports == "always":
        assert result.stale_idle_seconds == 0.0


def test_with_the_artifacts_reporting_an_instance_emptied_by_a_finish_keeps_its_last_snapshot():
    """``scheduler.idle_reports: artifact``: after its last request finished an instance
    sends nothing (the artifact's idle step has no output to carry its report), so the view
    keeps the finishing step's snapshot and the summary counts the seconds it was wrong."""

    def run(idle_reports: str):
        config = make_config(
            cluster={"instances": 2, "kv_capacity_blocks": 100},
            scheduler={"name": "llumnix", "idle_reports": idle_reports},
        )
        workload = make_workload([0.0, 0.0, 5.0], [64, 64, 64], [3, 3, 3])  # both idle from ~0.1 s to 5 s
        simulation = Simulation(config, LinearTimer(capacity_blocks=100), workload, transfer=make_transfer())
        simulation.run_until(4.0)
        return dict(simulation.scheduler.view.reports), simulation.run()

    stale, stale_result = run("artifact")
    assert all(r.num_running == 1 and r.used_blocks == 5 for r in stale.values())  # 65 tokens
    assert stale_result.stale_idle_seconds > 4.8  # instance 0 (or 1) from ~0.1 s to the dispatch at 5 s
    fresh, fresh_result = run("always")
    assert all(r.num_running == 0 and r.used_blocks == 0 for r in fresh.values())
    assert fresh_result.stale_idle_seconds == 0.0


@pytest.mark.parametrize("scheduler", PRESETS)
def test_no_idle_instance_is_shown_busy_on_any_preset(scheduler):
    """The summary's figure is 0 on every scheduler preset, over a run whose instances go
    idle often (bursts with gaps), drop requests and preempt."""
    n = 120
    arrival = [0.5 * (i // 10) * 4 + 0.01 * i for i in range(n)]  # bursts of 10, 2 s apart
    prompt = [50 + 37 * i % 300 for i in range(n)]
    output = [1000 if i % 17 == 0 else 20 + 13 * i % 200 for i in range(n)]  # some outgrow 40 blocks
    config = make_config(
        cluster={"instances": 3, "kv_capacity_blocks": 40, "watermark_fraction": 0.0, "max_batched_tokens": 2048},
        scheduler={"name": scheduler, "load_report_interval": 0.25},
    )
    result = Simulation(
        config, LinearTimer(capacity_blocks=40), make_workload(arrival, prompt, output), transfer=make_transfer()
    ).run()
    assert any(r.abort_reason == "exceeds_instance_limits" for r in result.requests)
    if scheduler != "round-robin":  # round-robin reads no report with per-step reports
        assert result.idle_stretches >= 5
    assert result.stale_idle_seconds == 0.0


def report(instance_id: int, running: int, used: int) -> LoadReport:
    return make_report(instance_id=instance_id, capacity_blocks=20, used_blocks=used, num_running=running)


def test_the_watch_counts_the_seconds_after_the_report_was_due_and_strict_raises():
    view = {0: report(0, 1, 20), 1: report(1, 0, 0)}
    watch = IdleWatch(view, report_due=lambda now: now + 0.5, view_in_use=lambda: True)
    watch.idle(0, 10.0)
    watch.idle(1, 10.0)
    watch.ended(0, 14.0)  # idle 10..14, heard of from 10.5 on, still shown full: 3.5 s
    watch.ended(1, 14.0)  # shown idle: nothing
    watch.idle(0, 20.0)
    watch.ended(0, 20.25)  # ended before its report was due: nothing
    assert watch.stretches == 3 and watch.stale_idle_seconds == pytest.approx(3.5)
    down = IdleWatch(view, report_due=lambda now: now, view_in_use=lambda: False)
    down.idle(0, 0.0)
    down.close(5.0)  # the scheduler is down: nobody reads the view, nothing counts
    assert down.stale_idle_seconds == 0.0
    strict = IdleWatch(view, report_due=lambda now: now, view_in_use=lambda: True, strict=True)
    strict.idle(0, 1.0)
    with pytest.raises(StaleViewError, match="instance 0 idle from 1.000 s"):
        strict.close(2.0)


def test_in_the_quickstart_no_instance_idles_while_requests_arrive_and_others_work(tmp_path):
    """The quickstart's own config (seed 0: request 1582 outgrows instance 3's blocks at
    ~271 s): from its samples, no instance holds nothing for more than one sampling interval
    while requests still arrive and another instance has requests queued or running."""
    config = load_config("experiments/configs/quickstart.yaml")
    simulation = Simulation(config)
    result = simulation.run()
    assert any(r.abort_reason == "exceeds_instance_limits" for r in result.requests)
    write_run(result, tmp_path / "run", plots=False)
    instances = pd.read_csv(tmp_path / "run" / "instances.csv")
    interval = config.output.timeseries_interval
    last_arrival = max(r.arrival for r in result.requests)
    work = instances["running"] + instances["queue_length"]
    instances["empty"] = (work == 0) & (instances["used_blocks"] == 0)
    busy_elsewhere = instances.assign(work=work).groupby("time")["work"].transform("sum") - work > 0
    # from each instance's first request on (the first dispatches go round-robin until every
    # instance has reported, 15 down to 0, over the first ~2 s) until the last arrival
    first_work = instances[~instances["empty"]].groupby("instance")["time"].min()
    serving = instances["time"] >= instances["instance"].map(first_work)
    suspect = instances[instances["empty"] & busy_elsewhere & serving & (instances["time"] <= last_arrival)]
    longest = 0.0
    for _, samples in suspect.groupby("instance"):
        times = samples["time"].to_numpy()
        start = times[0]
        for previous, current in zip(times, times[1:]):
            if current - previous > interval * 1.5:  # a gap: the stretch ended
                start = current
            longest = max(longest, current - start)
    assert longest <= interval, f"an instance sat empty for {longest:.1f} s while others worked"
    assert result.stale_idle_seconds == 0.0


@pytest.mark.parametrize("idle_reports", ["always", "artifact"])
def test_a_source_that_empties_while_its_migration_is_in_flight_is_watched_and_reported(idle_reports):
    """Request 0 is migrating out (stages of 1 s) when it finishes on its source at ~0.18 s:
    the migration aborts at its stage's end, and the source, empty, is woken then. With ``always`` its view stops
    showing a migration; with the artifact's reporting its last busy snapshot stays, and the
    watch counts it (the source's stretch was never opened before the wake)."""
    config = make_config(
        cluster={"instances": 2, "kv_capacity_blocks": 100},
        scheduler={"name": "llumnix", "pairing": "none", "idle_reports": idle_reports},
        migration={"last_stage_blocks": 0, "max_stages": 5},
    )
    workload = make_workload([0.0, 0.0, 5.0], [64, 16, 64], [8, 2, 10])
    simulation = Simulation(
        config, LinearTimer(capacity_blocks=100), workload, transfer=make_transfer(stage_latency=1.0), check_every_step=True
    )
    simulation.run_until(0.05)
    source = simulation.request(0).instances[0]
    record = simulation.migrate(0, source, 1 - source)
    simulation.run_until(3.0)
    assert record.outcome == "aborted" and record.abort_reason == "request_finished"
    view = simulation.scheduler.view.reports[source]
    result = simulation.run()
    if idle_reports == "always":
        assert not view.migrating and view.num_running == 0 and view.used_blocks == 0
        assert result.stale_idle_seconds == 0.0
    else:  # both sat idle behind a busy snapshot from the abort (~1 s) to the dispatch at 5 s
        assert view.num_running == 1
        assert result.stale_idle_seconds > 2 * 3.5
