"""Races between migration, scaling and removal: crafted runs that once never ended."""

from __future__ import annotations

import pytest

from sim.engine import Simulation
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
    scale_ins = [e for e in result.scaling_log if e.action == "scale_in"]
    removed = {e.instance: e.time for e in result.scaling_log if e.action == "removed"}
    into_drained = [m for m in result.migrations if m.destination == 1]
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
