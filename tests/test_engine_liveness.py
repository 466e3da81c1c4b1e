"""Every run ends: a crafted race between migration, scaling and removal that once left a
request in limbo, and the watchdog that stops a run that makes no more progress."""

from __future__ import annotations

import pytest

from sim.cli.main import main
from sim.engine import Simulation, SimulationStalled, watchdog
from sim.engine.migrations import MIGRATIONS
from sim.engine.scaling import SCALING_LOG
from sim.engine.watchdog import STALL_SECONDS, stall_span
from sim.instance.request import RequestState
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload, placed


def paired_and_drained_in_one_round(mode: str) -> Simulation:
    """Two requests fill instance 0 (F_full ~1.5: a migration source) while instance 1 sits
    idle (the destination and, with the fewest running requests, the one to scale in). Reports
    every 0.25 s, pairing every 5th round and a 1 s sustain all fall on t = 1.0: in that one
    round the scheduler pairs 0 -> 1, the scaler drains 1, and the engine removes what is
    drained and empty."""
    config = make_config(
        time_limit=60.0,  # without the fix the run never ends: stop it and see the stuck request
        cluster={"instances": 2, "kv_capacity_blocks": 100, "watermark_fraction": 0.0},
        scheduler={"name": "llumnix-prose", "load_report_interval": 0.25, "pairing_every": 5},
        migration={"mode": mode},
        autoscale={
            "enabled": True,
            "rule": "sustained-band",
            "low": 1,
            "high": 40,
            "sustain": 1.0,
            "min_instances": 1,
            "max_instances": 2,
        },
    )
    return Simulation(
        config,
        LinearTimer(capacity_blocks=100),
        make_workload([0.0, 0.0], [740, 740], [200, 200]),
        transfer=make_transfer(),
        scheduler=placed(config, [0, 0]),
        check_every_step=True,
    )


@pytest.mark.parametrize("mode", ["live", "blocking", "recompute"])
def test_an_instance_drained_in_the_round_it_became_a_destination_is_not_removed_under_a_migration(mode):
    simulation = paired_and_drained_in_one_round(mode)
    result = simulation.run()
    scale_ins = [e for e in SCALING_LOG.of(result) if e.action == "scale_in"]
    removed = {e.instance: e.time for e in SCALING_LOG.of(result) if e.action == "removed"}
    into_drained = [m for m in MIGRATIONS.of(result) if m.destination == 1]
    # the race happened: a migration to instance 1 started in the round it was drained
    assert [(e.time, e.instance) for e in scale_ins] == [(1.0, 1)]
    assert into_drained and into_drained[0].start == 1.0
    # a scaled-in instance stops being a destination at once: the migration aborts cleanly,
    # and the instance is removed only after it ended
    record = into_drained[0]
    assert record.outcome == "aborted" and record.abort_reason == "destination_draining"
    assert removed[1] >= record.end
    assert len(into_drained) == 1  # never chosen again
    assert all(r.state is RequestState.FINISHED for r in result.requests)
    assert all(r.instances == [0] for r in result.requests)
    assert result.end_time < 60.0 and result.leaked_blocks == 0


class DecodeNeverEnds(LinearTimer):
    """A replica model whose decode steps never end: every request gets stuck running."""

    def batch_time(self, prefills, num_decodes, decode_kv_tokens) -> float:
        return 1e12 if num_decodes else super().batch_time(prefills, num_decodes, decode_kv_tokens)


def stuck_run(**sections) -> Simulation:
    config = make_config(cluster={"instances": 2, "kv_capacity_blocks": 100}, **sections)
    return Simulation(
        config, DecodeNeverEnds(capacity_blocks=100), make_workload([0.0, 0.5], [100, 100], [50, 50])
    )


def test_the_watchdog_stops_a_run_in_which_no_request_progresses():
    simulation = stuck_run(autoscale={"cold_start": 30.0})
    span = stall_span(simulation.config)
    assert span == STALL_SECONDS + 30.0 + simulation.config.migration.prealloc_timeout
    with pytest.raises(SimulationStalled) as stalled:
        simulation.run()
    message = str(stalled.value)
    assert "no request progressed" in message and "2 pending" in message
    assert "request 0 running on instance 0 (serving)" in message
    assert "request 1 running on instance 1 (serving)" in message
    assert span <= simulation.now <= 1.25 * span + 1.0  # caught within a quarter span


def test_the_watchdog_stops_a_run_whose_clock_stops(monkeypatch):
    monkeypatch.setattr(watchdog, "EVENTS_PER_CHECK", 1000)
    monkeypatch.setattr(watchdog, "FROZEN_CHECKS", 3)
    simulation = stuck_run()

    def spin(env):
        while True:
            yield env.timeout(0)

    simulation.at(2.0, lambda: simulation.env.process(spin(simulation.env)))
    with pytest.raises(SimulationStalled, match=r"simulated time stopped at t=2\.000"):
        simulation.run()


def test_a_stalled_run_exits_3_with_one_line(monkeypatch, tmp_path, capsys):
    import sim.engine.builder as engine

    monkeypatch.setattr(engine, "load_model", lambda pool, key: DecodeNeverEnds(capacity_blocks=100))
    config = tmp_path / "stuck.yaml"
    config.write_text(
        "cluster: {instances: 1, kv_capacity_blocks: 100}\n"
        "workload: {source: synthetic, num_requests: 3, arrival: {process: burst}}\n"
    )
    assert main(["run", str(config), "--quiet", "--no-plots", "--out", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("llumsim: error: simulation stalled") and "request 0" in err
