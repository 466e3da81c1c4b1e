"""Policies are parts chosen by config: a new rule is one class and one registration."""

from __future__ import annotations

import pytest

from sim.cluster import DISPATCH_RULES, DispatchRule, GlobalScheduler
from sim.cluster.dispatch import ArtifactLoad, DispatchInfo
from sim.config import ConfigError, SchedulerConfig
from sim.engine import Simulation
from sim.engine.migrations import MIGRATIONS
from sim.instance.load import LoadReport
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload
from tests.reports import make_report


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


@DISPATCH_RULES.register("test-load-lowest-id")
class LoadPreferringLowestId(ArtifactLoad):
    """A shipped rule, changed by a subclass: the artifact's load, ties to the lowest id."""

    prefer_highest_id = False


def test_a_shipped_rule_can_be_subclassed_and_its_override_is_used():
    """A subclass's class-level switch is read by the shipped rule's code (every instance
    idle: the artifact breaks the tie to the highest id)."""
    runs = {}
    for dispatch in ("load", "test-load-lowest-id"):
        config = make_config(
            cluster={"instances": 3, "kv_capacity_blocks": 400},
            scheduler={"name": "infaas++", "dispatch": dispatch},
        )
        workload = make_workload([float(i) for i in range(6)], [64] * 6, [4] * 6)  # one at a time
        runs[dispatch] = Simulation(config, LinearTimer(capacity_blocks=400), workload).run()
    # the first three go round-robin (nobody reported yet), then every instance is idle
    assert [r.instances[0] for r in runs["load"].requests][3:] == [2, 2, 2]
    assert [r.instances[0] for r in runs["test-load-lowest-id"].requests][3:] == [0, 0, 0]


def test_the_docs_example_of_a_new_rule_is_code_that_registers_it():
    """docs/ARCHITECTURE.md's "Adding a policy" shows the code as it is: run verbatim, it adds the rule."""
    from tests.sweep_support import REPO

    page = (REPO / "docs" / "ARCHITECTURE.md").read_text()
    example = page.split("**Adding a policy**", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(example, namespace)
    rule = DISPATCH_RULES.get("newest-instance")
    assert rule is namespace["NewestInstance"] and issubclass(rule, DispatchRule)


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
    assert MIGRATIONS.of(runs[None]) and not MIGRATIONS.of(runs["none"])


def test_a_per_step_report_absorbs_the_demand_dispatched_before_it():
    """With dispatched load counted, demand sent to an instance weighs on its load until its
    next report (which already holds it); reports arriving between two dispatches count once,
    at the next dispatch, as if each had been applied on arrival."""
    def report(instance: int, free: int) -> LoadReport:
        return make_report(instance_id=instance, capacity_blocks=800, used_blocks=800 - free, num_running=10, watermark_blocks=8)

    s = GlobalScheduler(SchedulerConfig(name="infaas++", count_dispatched_load=True))
    for i in (0, 1):
        s.add_instance(i, None)
    deliver = s.step_reports(live=(0, 1), pairing_every=4, pairing_round=lambda: None).deliver
    deliver(report(0, 400))
    deliver(report(1, 410))  # loads −39.2 and −40.2: 1 is the lighter
    request = DispatchInfo(tier=0, demand_blocks=100)
    assert s.dispatch(request) == 1  # then 1 carries 100 pending blocks: −30.2
    assert s.dispatch(request) == 0  # and 0 too: −29.2
    deliver(report(0, 300))  # 0 reports twice (1 not at all); its latest report counts
    deliver(report(0, 400))
    assert s.dispatch(request) == 0  # 0's pending absorbed (−39.2), 1's still there (−30.2)
    assert s.view.pending == {0: 100, 1: 100}


def test_per_step_reports_are_delivered_only_where_something_reads_them():
    def wants(name: str, autoscaling: bool = False) -> bool:
        return GlobalScheduler(SchedulerConfig(name=name)).wants_step_reports(autoscaling)

    assert not wants("round-robin")  # its dispatch never reads a load
    assert wants("round-robin", autoscaling=True)  # the scaler reads them
    assert wants("infaas++") and wants("llumnix") and wants("llumnix-base")
    assert not wants("llumnix-prose")  # periodic reports: the tick delivers them
