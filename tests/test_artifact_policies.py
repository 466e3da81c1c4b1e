"""The Llumnix artifact's policies (AlibabaPAI/llumnix, branch osdi24ae) against hand-computed
cases of its own formulas. Each test names the artifact file and function it reproduces;
the cases were computed by running those functions (a test vector table is in the README's
"Schedulers" section sources: vllm/instance_info.py, vllm/core/request_scheduler.py).

Notation as in the artifact: T total blocks, F free, W watermark = int(0.01 T), R running,
Q queued, B queued blocks (Σ tokens / 16, a float), P high-priority requests, K preempted.
"""

from __future__ import annotations

import math

import pytest

from sim.cluster import GlobalScheduler
from sim.cluster.dispatch import DispatchInfo
from sim.cluster.priority import LoadTargetMode
from sim.cluster.scaling import (
    CANCEL_DRAIN,
    SCALE_IN,
    SCALE_OUT,
    ArtifactInterval,
    ScalingDecision,
    aggregate_dispatch_load,
    aggregate_load_without,
)
from sim.config import AutoscaleConfig, SchedulerConfig
from sim.instance.load import (
    LoadReport,
    artifact_dispatch_load,
    artifact_migration_load,
    block_load,
)
from tests.reports import make_report


def report(T=800, F=400, R=0, Q=0, B=0.0, P=0, K=0, instance=0, draining=False) -> LoadReport:
    """A report with the artifact's inputs (P > 0: a tier-0 request present, K = 2 tiers)."""
    return make_report(
        instance_id=instance,
        capacity_blocks=T,
        used_blocks=T - F,
        reserved_blocks=0,
        num_running=R,
        num_waiting=Q,
        waiting_demand_blocks=math.ceil(B),
        head_demand_blocks=0,
        draining=draining,
        watermark_blocks=int(0.01 * T),
        block_size=16,
        waiting_tokens=round(B * 16),
        num_preempted=K,
        top_tier=0 if P else 1,
    )


PRIORITY = LoadTargetMode(SchedulerConfig(), tiers=2)

# (case, report, migration load with load control, without, 'load' dispatch, 'priority'
#  dispatch, 'block' dispatch) — instance_info.py::InstanceLoadInfo
CASES = [
    ("M1", report(F=400, R=10), -39.2, -39.2, -39.2, 30.8, 0.5),
    ("M2", report(F=100, R=20, Q=2, B=25.0), -67 / 21, -4.6, -67 / 22, 28.772727, 0.90625),
    ("M3", report(F=0, R=30, Q=1, B=32.0), 40 / 31, 8 / 30, 1.2903226, 23.870968, 1.04),
    ("M4", report(F=800), -math.inf, -math.inf, -math.inf, -math.inf, 0.0),
    ("M5", report(F=800, Q=1, B=384.0), -408.0, -math.inf, -408.0, 292.0, 0.48),
    ("M6", report(F=600, R=2, P=1), 54.0, -296.0, 54.0, -296.0, 0.25),
    ("M7", report(F=760, R=1, P=1), -52.0, -752.0, -52.0, -752.0, 0.05),
    ("M8", report(F=750, R=1, Q=1, B=6.25, P=1), -17.875, -742.0, -17.875, -367.875, 0.0703125),
    (
        "M9",
        report(T=792, F=300, R=12, Q=3, B=62.5 + 2.3125 + 125),
        -7.9375,
        -24.416667,
        -6.8791667,
        39.254167,
        0.86087437,
    ),
    ("M10", report(F=8, R=40), -0.0, -0.0, -0.0, 17.5, 0.99),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_instance_info_loads_match_the_artifact(case):
    """instance_info.py: compute_instance_load ('migrate', load control on and off) and
    compute_instance_load_dispatch ('load', 'priority', 'block')."""
    _, r, migrate_on, migrate_off, load, priority, block = case
    reservation = PRIORITY.migration_reservation(r)
    assert artifact_migration_load(r, True, reservation) == pytest.approx(migrate_on, rel=1e-6)
    assert artifact_migration_load(r, False, reservation) == pytest.approx(migrate_off, rel=1e-6)
    normal = artifact_dispatch_load(r, PRIORITY.dispatch_reservation(r, tier=1))
    high = artifact_dispatch_load(r, PRIORITY.dispatch_reservation(r, tier=0))
    assert normal == pytest.approx(load, rel=1e-6)
    assert high == pytest.approx(priority, rel=1e-6)
    assert block_load(r) == pytest.approx(block, rel=1e-6)


def test_a_draining_instance_reports_a_large_finite_load():
    """llm_engine.py step_async: while scaling down, R is reported as 1 and the available
    blocks as −1000 (M11, M12)."""
    idle = report(F=400, R=3, draining=True)
    assert artifact_migration_load(idle) == 1000.0
    assert artifact_dispatch_load(idle) == 1000.0
    queued = report(F=400, R=3, Q=2, B=10.0, draining=True)
    assert artifact_migration_load(queued, True) == 505.0
    assert artifact_migration_load(queued, False) == 1000.0
    assert artifact_dispatch_load(queued) == pytest.approx(1010 / 3)


def test_priority_reservation_is_capacity_less_a_1600_token_load_target():
    """instance_info.py: priority_reserved_blocks = num_total_gpu_block − 1600 // 16."""
    assert PRIORITY.migration_reservation(report(T=800, P=1)) == 700
    assert PRIORITY.migration_reservation(report(T=800, P=0)) == 0
    # K tiers: the most critical tier present leads; geometric targets up to capacity
    three = LoadTargetMode(SchedulerConfig(), tiers=3)
    assert three.target_tokens(0, 12800) == 1600
    assert three.target_tokens(1, 12800) == pytest.approx((1600 * 12800) ** 0.5)
    assert math.isinf(three.target_tokens(2, 12800))


def scheduler(name="llumnix", instances=4, **overrides) -> GlobalScheduler:
    s = GlobalScheduler(SchedulerConfig(name=name, **overrides), tiers=2)
    for i in range(instances):
        s.add_instance(i, None)  # per-step reports: nothing reported before the first step
    return s


def normal(s: GlobalScheduler) -> int:
    return s.dispatch(DispatchInfo(tier=1, demand_blocks=8))


def test_dispatch_is_round_robin_until_every_instance_reported_then_lowest_load_highest_id():
    """request_scheduler.py::dispatch_load (D1–D4)."""
    s = scheduler()
    assert [normal(s) for _ in range(6)] == [0, 1, 2, 3, 0, 1]  # D1
    s.observe({i: report(F=400, R=10, instance=i) for i in range(3)})
    assert [normal(s), normal(s)] == [2, 3]  # D2: the pointer goes on while 3 is unreported
    s.observe({3: report(F=400, R=10, instance=3)})
    assert [normal(s) for _ in range(3)] == [3, 3, 3]  # D3: ties -> highest id, no accounting
    s.observe({i: report(F=800, instance=i) for i in (1, 2)})
    assert normal(s) == 2  # D4


def test_high_priority_requests_gather_and_normal_ones_avoid_them():
    """request_scheduler.py::dispatch_load with priority_type 1 (D5, D6)."""
    s = scheduler()
    s.observe(
        {
            0: report(F=700, R=3, instance=0),
            1: report(F=500, R=6, P=1, instance=1),
            2: report(F=300, R=10, P=2, instance=2),
            3: report(F=200, R=12, instance=3),
        }
    )
    assert normal(s) == 0  # D5: loads −230.7, +34.7, +40.8, −16.0
    assert s.dispatch(DispatchInfo(tier=0, demand_blocks=8)) == 1  # D6: priority loads +2.7, −82


def test_a_scaled_out_instance_is_the_first_choice_until_it_reports():
    """request_scheduler.py::scale_up: a new instance's dummy info has load −inf (D7)."""
    s = scheduler(instances=3)
    s.observe({i: report(F=400, R=10, instance=i) for i in range(3)})
    for new in (3, 4):
        s.add_instance(new, report(F=800, instance=new))  # empty, as the dummy
    assert normal(s) == 4


def test_pairing_sources_include_instances_with_a_preempted_request():
    """request_scheduler.py::need_migrate_prefill_v2 with threshold 3 (P1)."""
    s = scheduler(instances=6)
    s.observe(
        {
            0: report(F=50, R=30, Q=2, B=30.0, instance=0),
            1: report(F=400, R=10, instance=1),
            2: report(F=5, R=40, instance=2),
            3: report(F=800, instance=3),
            4: report(F=120, R=25, K=1, instance=4),
            5: report(F=300, R=10, instance=5),
        }
    )
    assert list(s.migration_pairs().items()) == [(2, 3), (0, 1), (4, 5)]


def test_artifact_pairing_starts_one_migration_per_pair_and_never_on_a_migrating_instance():
    """llm_engine_manager.py::_migrate skips pairs with a migrating side; no continuation."""
    s = scheduler(instances=2)
    assert not s.continues_after_commit
    busy, free = report(F=5, R=40, instance=0), report(F=800, instance=1)
    assert s.should_migrate(busy, free)
    assert not s.should_migrate(busy._replace(migrating=True), free)


# ------------------------------------------------------------------------ scaling
def cluster(*instances, T=800):
    """{id: report} from (F, R[, Q, B]) tuples, ids in order."""
    reports = {}
    for i, values in enumerate(instances):
        F, R, *rest = values
        Q, B = (rest + [0, 0.0])[:2]
        reports[i] = report(T=T, F=F, R=R, Q=Q, B=B, instance=i)
    return reports


SCALING = [
    # (case, instances, up metric, down metric, expected decision; t = 10)
    ("S1", cluster(*[(50, 30, 2, 40.0)] * 8), -0.0625, 1.560166, ScalingDecision(SCALE_OUT, count=4)),
    ("S2", cluster((500, 5), (600, 4), (700, 3)), -148.0, -82.0, ScalingDecision(SCALE_IN, instance=2)),
    ("S3", cluster((300, 10), (300, 10), (760, 1)), -63.619048, -25.904762, None),
    ("S4", cluster((700, 2, 3, 300.0), (700, 2)), -154.857143, -58.4, None),
    ("S9", cluster((700, 2)), -346.0, -0.0, None),
]


@pytest.mark.parametrize("case", SCALING, ids=[c[0] for c in SCALING])
def test_scaling_decision_matches_need_scale(case):
    """request_scheduler.py::need_scale, _get_avg_load, _get_load_metric_down (avg_load)."""
    _, reports, up, down, expected = case
    assert aggregate_dispatch_load(reports.values()) == pytest.approx(up, rel=1e-6)
    assert aggregate_load_without(reports, max(reports), True) == pytest.approx(down, rel=1e-6, abs=1e-9)
    rule = ArtifactInterval(AutoscaleConfig(enabled=True, low=10, high=60, max_instances=16), True)
    assert rule.decide(200.0, reports, len(reports), 0) == expected


def test_scale_in_metric_ignores_queues_without_load_control():
    """S5: the Threshold INFaaS++ runs had load control off."""
    reports = cluster((700, 2, 3, 300.0), (700, 2))
    assert aggregate_load_without(reports, 1, False) == pytest.approx(-148.0)
    rule = ArtifactInterval(AutoscaleConfig(enabled=True, low=10, high=60), load_control=False)
    assert rule.decide(200.0, reports, 2, 0) == ScalingDecision(SCALE_IN, instance=1)


def test_draining_instance_counts_with_one_request_and_blocks_a_second_drain():
    """S7; and a scale-out wanted while draining cancels the drain (_terminate_scaling_down)."""
    reports = cluster((400, 8))
    reports[1] = report(F=400, R=5, instance=1, draining=True)
    assert aggregate_dispatch_load(reports.values()) == pytest.approx(-87.111111)
    rule = ArtifactInterval(AutoscaleConfig(enabled=True, low=10, high=60), True)
    assert rule.decide(200.0, reports, 2, 0) is None
    loaded = cluster((50, 30, 2, 40.0), (50, 30, 2, 40.0))
    loaded[1] = loaded[1]._replace(draining=True)
    decision = ArtifactInterval(AutoscaleConfig(enabled=True), True).decide(200.0, loaded, 2, 0)
    assert decision == ScalingDecision(CANCEL_DRAIN, instance=1)


def test_checks_start_after_first_check_and_repeat_every_interval_and_wait_for_reports():
    """llm_engine_manager.py: last_check_scale_time = start + 100, then every scaling_interval."""
    rule = ArtifactInterval(AutoscaleConfig(enabled=True, low=5, high=55), True)
    busy = cluster(*[(100, 20)] * 4)  # S8 at t = 5: scale out by one
    assert rule.decide(110.0, busy, 4, 0) is None  # not yet: strictly after 100 + 10
    assert rule.decide(110.01, busy, 4, 0) == ScalingDecision(SCALE_OUT, count=1)
    assert rule.decide(115.0, busy, 4, 0) is None  # within the interval
    assert rule.decide(121.0, busy, 5, 0) is None  # an instance has not reported yet
    assert rule.decide(131.5, busy, 4, 1) is None  # still starting: no second scale-out


# ------------------------------------------------------------------------ candidates
def running_batch(arrivals, tiers, prompts):
    from sim.instance.limits import LlumletLimits
    from sim.instance.llumlet import Llumlet
    from sim.instance.request import Request
    from tests.doubles import LinearTimer

    llumlet = Llumlet(0, LlumletLimits(capacity_blocks=1000, tiers=2), LinearTimer(), clock=lambda: 0.0)
    for rid, (arrival, tier, prompt) in enumerate(zip(arrivals, tiers, prompts)):
        llumlet.enqueue(Request(rid, arrival, prompt, 50, tier))
    llumlet.batches.complete(llumlet.batches.next_batch())  # one prefill: all are running and decoding
    return llumlet.batches


def test_lcfs_takes_the_last_arrival_whenever_some_normal_request_decodes():
    """scheduler.py::get_migrating_seq_groups, LCFS: the scan checks each request for
    "decoding and normal priority" but appends running[-1] — the latest arrival."""
    from sim.instance.candidates import CANDIDATE_RULES

    lcfs, intended = CANDIDATE_RULES.get("lcfs"), CANDIDATE_RULES.get("lcfs-normal")
    batch = running_batch([0.0, 1.0, 2.0], tiers=[1, 1, 0], prompts=[64, 32, 16])
    assert lcfs(batch, 1).id == 2  # the high-priority request itself: the artifact's quirk
    assert intended(batch, 1).id == 1  # the latest normal one
    assert lcfs(batch, 0).id == 2  # priorities off: everything is normal
    only_high = running_batch([0.0, 1.0], tiers=[0, 0], prompts=[64, 32])
    assert lcfs(only_high, 1) is None and intended(only_high, 1) is None


def test_sjf_and_ljf_pick_by_sequence_length_with_arrival_order_on_ties():
    """scheduler.py::get_migrating_seq_groups, SJF / LJF (a stable sort by length)."""
    from sim.instance.candidates import CANDIDATE_RULES

    batch = running_batch([0.0, 1.0, 2.0, 3.0], tiers=[1] * 4, prompts=[64, 16, 64, 16])
    assert CANDIDATE_RULES.get("sjf")(batch, 1).id == 1  # shortest, earliest of the two
    assert CANDIDATE_RULES.get("ljf")(batch, 1).id == 2  # longest, latest of the two


# ------------------------------------------------------------------------ cadence
def test_per_step_reports_are_scheduling_snapshots_and_an_idle_instance_reports_itself_empty():
    """llm_engine.py::step and llm_engine_manager.py::progress_output: one report per executed
    step, taken when the step is scheduled and delivered when it ends. A loop that finds
    nothing more to run reports the instance as it is then (the artifact's early return of
    ``step`` after a drop; INV-4 idle-view for the rest, where the artifact's view stays on the
    last busy snapshot), so the view ends empty, as the prose presets' periodic reports see it."""
    from sim.engine import Simulation
    from tests.doubles import LinearTimer, make_config, make_transfer, make_workload

    def simulation(name):
        return Simulation(
            make_config(cluster={"instances": 2, "kv_capacity_blocks": 100}, scheduler={"name": name}),
            LinearTimer(capacity_blocks=100),
            make_workload([0.0, 0.0], [64, 64], [3, 3]),
            transfer=make_transfer(),
        )

    # the 64-token prefill ends at 32.8 ms; the first decode step, scheduled then with a 5th
    # block (65 tokens), ends at ~53 ms: in between the view holds the prefill's snapshot
    during = simulation("llumnix")
    during.run_until(0.04)
    assert during.llumlet(0).ledger.allocated == 5
    assert during.scheduler.view.reports[0].used_blocks == 4 and during.scheduler.view.reports[0].num_running == 1

    for name in ("llumnix", "llumnix-prose"):
        run = simulation(name)
        result = run.run()
        assert [r.instances for r in result.requests] == [[0], [1]]  # round-robin start
        run.run_until(result.end_time + 1.0)
        assert all(r.num_running == 0 and r.used_blocks == 0 for r in run.scheduler.view.reports.values())
