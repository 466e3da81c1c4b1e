"""Per-tier SLOs: the config's two spellings, attainment from a request table, the TTFT/TPOT
predictor against the replica model, and the SLO-aware dispatch rule."""

from __future__ import annotations

import pytest

from sim.config import SimulationConfig, from_dict, to_dict
from tests.reports import make_report


def test_a_ladder_expands_to_one_target_per_tier_growing_geometrically():
    config = from_dict(
        SimulationConfig,
        {"workload": {"priority": {"tiers": 3}}, "slo": {"ladder": {"ttft": 0.5, "tpot": 0.05, "growth": 4}}},
    )
    targets = config.slo.targets(config.workload.priority.tiers)
    assert [(t.ttft, t.tpot) for t in targets] == [(0.5, 0.05), (2.0, 0.2), (8.0, pytest.approx(0.8))]


def test_explicit_tiers_are_kept_as_written_and_a_config_without_slo_keeps_its_dict():
    explicit = from_dict(
        SimulationConfig,
        {"workload": {"priority": {"tiers": 2}}, "slo": {"tiers": [{"ttft": 1, "tpot": 0.1}, {"ttft": 3, "tpot": 0.2}]}},
    )
    assert [(t.ttft, t.tpot) for t in explicit.slo.targets(2)] == [(1, 0.1), (3, 0.2)]
    assert "slo" not in to_dict(SimulationConfig())  # old runs' hashes do not move
    assert to_dict(explicit)["slo"]["quantile"] == 0.99


def _table(rows):
    import pandas as pd

    columns = ["tier", "status", "prefill_latency", "decode_latency_per_token"]
    return pd.DataFrame(rows, columns=columns)


def test_attainment_from_a_hand_made_request_table():
    from sim.config import SloConfig, SloTargetConfig
    from sim.metrics.attainment import attainment_summary

    nan = float("nan")
    requests = _table(
        [
            (0, "finished", 0.4, 0.04),  # meets both
            (0, "finished", 0.6, 0.04),  # misses TTFT (0.5)
            (0, "finished", 0.3, 0.06),  # misses TPOT (0.05)
            (0, "aborted", nan, nan),  # never produced a token: misses both
            (1, "finished", 1.9, 0.09),  # meets both (2.0, 0.1)
            (1, "finished", 0.1, nan),  # one output token: no per-token time, meets
            (1, "unfinished", 0.5, nan),  # first token in time, never finished: TTFT only
        ]
    )
    slo = SloConfig(tiers=[SloTargetConfig(0.5, 0.05), SloTargetConfig(2.0, 0.1)], quantile=0.6)
    summary = attainment_summary(requests, slo, tiers=2, seconds=10.0, gpu_hours=2.0)
    tier0, tier1 = summary["by_tier"]["0"], summary["by_tier"]["1"]
    assert (tier0["ttft_attainment"], tier0["tpot_attainment"], tier0["attainment"]) == (0.5, 0.5, 0.25)
    assert (tier1["ttft_attainment"], tier1["tpot_attainment"], tier1["attainment"]) == (1.0, 2 / 3, 2 / 3)
    assert (tier0["met"], tier1["met"], summary["tiers_met"]) == (False, True, 1)
    overall = summary["overall"]
    assert overall["requests"] == 7 and overall["attainment"] == 3 / 7
    assert overall["goodput"] == pytest.approx(0.3)  # 3 requests met both in 10 s
    assert tier0["goodput"] == pytest.approx(0.1)
    assert overall["attainment_per_gpu_hour"] == pytest.approx(3 / 7 / 2)


def test_a_run_with_slos_prints_and_stores_per_tier_attainment_and_the_index_carries_it(tmp_path, capsys):
    import json

    import pandas as pd

    from sim.cli.main import main
    from sim.sweep.index import flatten

    config = tmp_path / "slo.yaml"
    config.write_text(
        "name: slo\ncluster: {instances: 2}\nscheduler: {name: llumnix}\n"
        "workload: {source: synthetic, num_requests: 200, arrival: {rate: 8.0}, priority: {tiers: 2, sampler: uniform}}\n"
        "slo: {ladder: {ttft: 0.3, tpot: 0.04, growth: 3}, quantile: 0.9}\n"
    )
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "SLO tier" in printed and "tiers attain 90% of their requests" in printed
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    requests = pd.read_csv(tmp_path / "out" / "requests.csv")
    for tier, ttft in ((0, 0.3), (1, 0.9)):
        rows = requests[requests["tier"] == tier]
        assert summary["slo"]["by_tier"][str(tier)]["ttft_attainment"] == pytest.approx(
            (rows["prefill_latency"] <= ttft).mean()
        )
    flat = flatten(summary)
    assert flat["slo.by_tier.1.attainment"] == summary["slo"]["by_tier"]["1"]["attainment"]
    assert "slo.overall.goodput" in flat


# ------------------------------------------------------------------ the predictor and the rule
def _model(**limits):
    from sim.cluster.slo_predictor import InstanceModel
    from sim.instance.limits import LlumletLimits
    from tests.doubles import LinearTimer

    settings = dict(capacity_blocks=1000, block_size=16, max_batched_tokens=1500, watermark_blocks=10)
    settings.update(limits)
    return InstanceModel(LinearTimer(), LlumletLimits(**settings))


def _report(instance_id=0, **fields):
    return make_report(**{"instance_id": instance_id, "capacity_blocks": 1000, "watermark_blocks": 10, **fields})


# LinearTimer: 0.02 s + 0.2 ms per prefill token + 0.3 ms per decode + 1 µs per KV token
BUSY = dict(num_running=4, used_blocks=100, num_waiting=2, waiting_tokens=1000, waiting_demand_blocks=64, head_demand_blocks=32)


def test_predicted_ttft_and_tpot_match_a_hand_computed_case():
    from sim.cluster.slo_predictor import predict

    predicted = predict(_report(**BUSY), 0, 600, _model())
    # half the running batch's decode step (1,600 + 4 KV tokens): what remains of it on average
    under_way = (0.02 + 4 * 0.0003 + 1604e-6) / 2
    queue = 0.02 + 1000 * 0.0002  # the two queued 500-token prompts in one iteration
    own = 0.02 + 600 * 0.0002  # its own prompt: 1,000 + 600 > the 1,500-token budget
    assert predicted.ttft == pytest.approx(under_way + queue + own)
    # it decodes with the 4 running and the 2 queued: 7 requests over 1,600 + 1,000 + 600 + 7 tokens
    assert predicted.tpot == pytest.approx(0.02 + 7 * 0.0003 + 3207e-6)
    assert not predicted.waits_for_memory  # 64 + 38 blocks needed, 890 free above the watermark


def test_demand_dispatched_since_the_report_queues_ahead_and_memory_can_run_out():
    from sim.cluster.slo_predictor import predict

    pending = predict(_report(**BUSY), 10, 600, _model())
    # three queued of the mean length (1,000 + 160) // 3 = 386 share one iteration
    expected = (0.02 + 4 * 0.0003 + 1604e-6) / 2 + (0.02 + 3 * 386 * 0.0002) + (0.02 + 600 * 0.0002)
    assert pending.ttft == pytest.approx(expected)
    tight = predict(_report(**{**BUSY, "used_blocks": 900}), 0, 600, _model())
    assert tight.waits_for_memory  # 102 blocks needed, 90 free above the watermark
    assert predict(_report(**{**BUSY, "used_blocks": 860}), 0, 600, _model()).waits_for_memory is False


def test_on_an_empty_instance_the_prediction_is_the_replica_models_prefill_and_decode():
    from sim.cluster.slo_predictor import InstanceModel, predict
    from sim.instance.limits import LlumletLimits
    from tests.hardware_support import replica

    model = replica("llama-7b")
    limits = LlumletLimits(capacity_blocks=model.kv_capacity_blocks, max_seq_len=model.max_tokens)
    for prompt in (64, 700, 4000):
        predicted = predict(None, 0, prompt, InstanceModel(model, limits))
        assert predicted.ttft == pytest.approx(model.prefill_time(prompt))
        assert predicted.tpot == pytest.approx(model.decode_time(1, prompt + 1))


def _view(reports, ttft=0.3, tpot=0.05):
    from sim.cluster.view import ClusterView
    from sim.config import SloTargetConfig

    view = ClusterView([SloTargetConfig(ttft, tpot)])
    for report in reports:
        view.add(report.instance_id, _model())
        view.observe_one(report)
    return view


def _choose(name, view, tokens=600):
    from sim.cluster import DISPATCH_RULES, DispatchInfo
    from sim.config import SchedulerConfig

    rule = DISPATCH_RULES.get(name)(SchedulerConfig())
    for instance_id in view.instances:
        rule.added(view, instance_id)
    rule.observed(view, view.reports)
    return rule.choose(view, DispatchInfo(0, -(-tokens // 16), tokens))


def test_slo_aware_dispatch_picks_the_predicted_feasible_instance_over_the_least_loaded():
    # instance 0: one long request running and a 1,400-token prompt queued (load −51: the
    # lowest); its predicted TTFT, 0.46 s, misses 0.3 s. Instance 1: 20 short requests
    # running (load −29.5), predicted TTFT 0.16 s.
    long_queue = _report(0, num_running=1, used_blocks=800, num_waiting=1, waiting_tokens=1400,
                         waiting_demand_blocks=88, head_demand_blocks=88)
    many_short = _report(1, num_running=20, used_blocks=400)
    view = _view([long_queue, many_short])
    assert _choose("load", view) == 0
    assert _choose("slo-aware", view) == 1
    # both feasible: the lowest load, as the load rule would choose
    assert _choose("slo-aware", _view([long_queue, many_short], ttft=1.0)) == 0


def test_with_no_feasible_instance_the_smallest_violation_wins_and_memory_waits_rank_last():
    slow = _report(0, num_running=1, used_blocks=800, num_waiting=1, waiting_tokens=1400,
                   waiting_demand_blocks=88, head_demand_blocks=88)  # TTFT 0.46 s
    faster = _report(1, num_running=20, used_blocks=400)  # TTFT 0.16 s
    assert _choose("slo-aware", _view([slow, faster], ttft=0.1)) == 1
    full = _report(1, num_running=20, used_blocks=985)  # fast, but its prefill waits for blocks
    assert _choose("slo-aware", _view([slow, full], ttft=0.1)) == 0


def test_the_shipped_slo_scenario_runs_and_prints_its_four_tiers_attainment(tmp_path, capsys):
    from pathlib import Path

    from sim.cli.main import main

    config = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "slo_tiers.yaml"
    smaller = ["workload.num_requests=300", "cluster.instances=4", "workload.arrival.rate=2"]
    argv = ["run", str(config), "--no-plots", "--out", str(tmp_path / "out")]
    assert main(argv + [arg for pair in (("--set", s) for s in smaller) for arg in pair]) == 0
    printed = capsys.readouterr().out
    table = printed[printed.index("SLO tier"):].splitlines()
    assert [line.split()[0] for line in table[1:6]] == ["0", "1", "2", "3", "all"]
    assert "scheduler=llumnix" in printed


# ------------------------------------------------------------------ adaptive headroom
def _controller(start=(0.2, 0.07, 0.0), step=0.02, max_total=0.5):
    from sim.cluster.adaptive_headroom import HeadroomController
    from sim.config import SloTargetConfig

    targets = [SloTargetConfig(0.5, 0.05), SloTargetConfig(1.0, 0.1), SloTargetConfig(2.0, 0.2)]
    return HeadroomController(list(start), targets, quantile=0.9, step=step, max_total=max_total, fixed=[2])


def test_the_controller_raises_a_missing_tiers_headroom_and_releases_a_slack_one():
    controller = _controller()
    for _ in range(8):
        controller.observe(0, 0.9, 0.04)  # tier 0: TTFT over its 0.5 s target
    for _ in range(2):
        controller.observe(0, 0.2, 0.04)
    for _ in range(10):
        controller.observe(1, 0.3, 0.05)  # tier 1: every request within target
        controller.observe(2, 9.0, None)  # tier 2 misses, but has no headroom by design
    assert controller.attainment() == [0.2, 1.0, 0.0]
    assert controller.adjust()
    assert controller.fractions == pytest.approx([0.22, 0.05, 0.0])
    assert not controller.adjust()  # an empty window changes nothing


def test_the_controller_holds_in_its_dead_band_and_keeps_within_the_total():
    held = _controller()
    for met in [True] * 92 + [False] * 8:  # 92%: above the 90% quantile, under the 95% slack line
        held.observe(1, 0.3 if met else 5.0, 0.05)
    assert not held.adjust() and held.fractions == [0.2, 0.07, 0.0]
    capped = _controller(start=(0.45, 0.05, 0.0), step=0.1)
    capped.observe(0, None, None)  # aborted before a first token: missed
    capped.observe(1, 5.0, 0.05)
    assert capped.adjust()
    assert sum(capped.fractions) == pytest.approx(0.5)  # 0.55 + 0.15 scaled into the total
    assert capped.fractions[0] / capped.fractions[1] == pytest.approx(0.55 / 0.15)


def test_an_adaptive_headroom_run_writes_each_tiers_headroom_over_time(tmp_path):
    import pandas as pd

    from sim.cli.main import main

    config = tmp_path / "adaptive.yaml"
    config.write_text(
        "name: adaptive\ncluster: {instances: 2}\n"
        "scheduler: {name: llumnix, priority: {mode: adaptive-headroom, adaptive: {interval: 2}}}\n"
        "workload: {source: synthetic, num_requests: 300, arrival: {rate: 6.0}, priority: {tiers: 3, sampler: uniform}}\n"
        "slo: {ladder: {ttft: 0.2, tpot: 0.03}, quantile: 0.99}\n"
    )
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    cluster = pd.read_csv(tmp_path / "out" / "cluster.csv")
    assert {"headroom_tier0", "headroom_tier1", "headroom_tier2"} <= set(cluster.columns)
    assert (cluster["headroom_tier2"] == 0).all()  # the background tier never gets any
    assert cluster["headroom_tier0"].nunique() > 1  # the tight tier-0 target moved it
    assert (tmp_path / "out" / "headroom.png").exists()


# ------------------------------------------------------------------ SLO-driven migration
def _pairs(reports, tpot):
    from sim.cluster import PAIRING_RULES
    from sim.cluster.priority import PriorityMode
    from sim.config import SchedulerConfig

    config = SchedulerConfig()
    rule = PAIRING_RULES.get("slo")(config, PriorityMode(config, 1), True)
    return dict(rule.pair(_view(reports, ttft=10.0, tpot=tpot)))


def test_slo_pairing_sends_a_predicted_tpot_miss_to_the_fastest_destination_that_stays_within():
    # LinearTimer decode step: 0.02 s + 0.3 ms per request + 1 µs per KV token
    over = _report(0, num_running=40, used_blocks=800)  # 40 x 320 tokens: 44.8 ms per token
    light = _report(1, num_running=10, used_blocks=100)  # +1 of 320 tokens: 25.2 ms
    busy = _report(2, num_running=35, used_blocks=500)  # +1 of 320 tokens: 39.2 ms
    assert _pairs([over, light, busy], tpot=0.04) == {0: 1}
    assert _pairs([over, busy], tpot=0.04) == {0: 2}
    assert _pairs([over, busy], tpot=0.035) == {}  # taking one would push 2 past its target too
    full = _report(1, num_running=10, used_blocks=975)  # fast, but no room for 20 blocks above the watermark
    assert _pairs([over, full], tpot=0.04) == {}
    assert _pairs([light, busy], tpot=0.04) == {}  # nobody predicted to miss: nothing moves


def test_the_slo_candidate_is_the_least_critical_longest_request():
    from sim.instance.candidates import CANDIDATE_RULES
    from sim.instance.request import Request

    class Batch:
        def __init__(self, requests, generated):
            self.running = requests
            self._generated = generated

        def progress(self, request):
            return self._generated[request.id]

    requests = [Request(0, 0.0, 100, 50, 0), Request(1, 0.1, 100, 50, 2), Request(2, 0.2, 300, 50, 2), Request(3, 0.3, 50, 50, 1)]
    batch = Batch(requests, {0: 900, 1: 250, 2: 10, 3: 0})
    chosen = CANDIDATE_RULES.get("least-critical-longest")(batch, 0)
    assert chosen.id == 1  # tier 2's longest: 100 + 250 tokens beats 300 + 10
