"""Policies are parts chosen by config: a new rule is one class and one registration."""

from __future__ import annotations

import pytest

from sim.cluster import DISPATCH_RULES, DispatchRule, GlobalScheduler
from sim.config import ConfigError, SchedulerConfig
from sim.engine import Simulation
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload


@DISPATCH_RULES.register("test-newest-instance")
class NewestInstance(DispatchRule):
    """A toy rule: every request goes to the highest-numbered instance."""

    def choose(self, view, request):
        return view.instances[-1]


def test_a_toy_dispatch_rule_is_one_class_and_one_registration():
    config = make_config(
        cluster={"instances": 3, "kv_capacity_blocks": 400},
        scheduler={"name": "infaas++", "dispatch": "test-newest-instance"},
    )
    result = Simulation(
        config, LinearTimer(capacity_blocks=400), make_workload([0.1 * i for i in range(12)], [64] * 12, [8] * 12)
    ).run()
    assert [r.instances for r in result.requests] == [[2]] * 12
    # the preset's own rule spreads the same requests
    spread = Simulation(
        make_config(cluster={"instances": 3, "kv_capacity_blocks": 400}, scheduler={"name": "round-robin"}),
        LinearTimer(capacity_blocks=400),
        make_workload([0.1 * i for i in range(12)], [64] * 12, [8] * 12),
    ).run()
    assert {r.instances[0] for r in spread.requests} == {0, 1, 2}


def test_parts_override_the_preset_and_unknown_names_are_config_errors():
    scheduler = GlobalScheduler(SchedulerConfig(name="llumnix-prose", pairing="none"), tiers=2)
    assert not scheduler.migrates and scheduler.local_tiers
    assert GlobalScheduler(SchedulerConfig(name="llumnix")).migrates
    with pytest.raises(ConfigError, match=r"scheduler\.dispatch: unknown dispatch rule 'nope'.*freeness"):
        GlobalScheduler(SchedulerConfig(name="llumnix", dispatch="nope"))
    with pytest.raises(ConfigError, match=r"scheduler\.name: unknown scheduler"):
        GlobalScheduler(SchedulerConfig(name="fifo"))
    with pytest.raises(ConfigError, match=r"autoscale\.rule: unknown scaling rule"):
        Simulation(make_config(autoscale={"rule": "nope"}), LinearTimer(), make_workload([0.0], [8], [2]))


def test_without_pairing_llumnix_dispatches_by_freeness_but_never_migrates():
    n = 60
    arrival = [0.05 * i for i in range(n)]
    common = dict(cluster={"instances": 2, "kv_capacity_blocks": 120})
    runs = {}
    for pairing in (None, "none"):
        scheduler = {"name": "llumnix"} if pairing is None else {"name": "llumnix", "pairing": pairing}
        runs[pairing] = Simulation(
            make_config(scheduler=scheduler, **common),
            LinearTimer(capacity_blocks=120),
            make_workload(arrival, [400] * n, [200] * n),
            transfer=make_transfer(),
        ).run()
    assert runs[None].migrations and not runs["none"].migrations
