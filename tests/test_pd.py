"""Prefill/decode disaggregation (``sim.engine.handoffs``): latencies composed by hand for
one request and for two contending for one link and one decode instance, Llumnix's pairing,
adaptive PD's fallbacks, and the config's checks."""

from __future__ import annotations

import pytest

from sim.config import ConfigError
from sim.engine import Simulation
from sim.engine.migrations import MIGRATIONS
from sim.engine.handoffs import PD
from sim.engine.setup import check_names
from sim.metrics import request_table
from sim.metrics.summary import summarize
from sim.metrics.tables import cluster_table, migration_table
from tests.doubles import ConstantTimer, make_config, make_transfer, make_workload, placed

PREFILL, DECODE = 0.1, 0.01  # seconds per prefill iteration and per decode step
TRANSFER = make_transfer(stage_latency=0.015, bandwidth=1e15)
COPY = TRANSFER.stage_time(4)  # a 64-token request's 4 blocks: 15 ms and a few ns


def pd_config(prefill=1, decode=1, mixed=0, **pd):
    pools = [
        {"name": "p", "instances": prefill, "role": "prefill"},
        {"name": "d", "instances": decode, "role": "decode"},
    ]
    if mixed:
        pools.append({"name": "m", "instances": mixed})
    return make_config(
        pools=pools,
        pd={"pairing": "immediate", **pd},
        scheduler={"name": "infaas++"},
        migration={"colocated_slowdown": 0.0},
    )


def run(config, arrivals, prompts, outputs, targets=None, capacity_blocks=10_000):
    simulation = Simulation(
        config,
        ConstantTimer(PREFILL, DECODE, capacity_blocks),
        make_workload(arrivals, prompts, outputs),
        transfer=TRANSFER,
        scheduler=placed(config, targets) if targets is not None else None,
        check_every_step=True,
    )
    return simulation, simulation.run()


def test_one_request_gets_its_first_token_from_prefill_and_pays_the_copy_in_its_second():
    simulation, result = run(pd_config(), [0.0], [64], [3])
    row = request_table(result).iloc[0]
    # first token: the prefill instance's prefill; nothing of the hand-off in it
    assert row["first_token"] == pytest.approx(PREFILL)
    # then the copy (held meanwhile: no token on the prefill instance), and two decode steps
    # on the decode instance, which was idle: the second token at 0.1 + 0.015 + 0.01
    assert row["finish"] == pytest.approx(PREFILL + COPY + 2 * DECODE)
    assert row["decode_latency_per_token"] == pytest.approx((COPY + 2 * DECODE) / 2)
    assert row["instances"] == "0>1"
    (record,) = MIGRATIONS.of(result)
    assert (record.kind, record.mode.value, record.outcome.value) == ("handoff", "blocking", "committed")
    assert record.blocks == 4  # 64 tokens: every block, copied in one stage
    assert record.downtime == pytest.approx(COPY)


def test_a_layerwise_hand_off_leaves_only_the_last_layers_share_of_the_copy_after_the_prefill():
    timer = ConstantTimer(PREFILL, DECODE)
    timer.num_layers = 32  # the replica model's (LLaMA-7B)
    config = pd_config(layerwise=True)
    simulation = Simulation(
        config, timer, make_workload([0.0], [64], [3]), transfer=TRANSFER, check_every_step=True
    )
    row = request_table(simulation.run()).iloc[0]
    # the 15 ms copy streamed during the 100 ms prefill: only its last layer's 1/32 is left
    assert row["first_token"] == pytest.approx(PREFILL)
    assert row["finish"] == pytest.approx(PREFILL + COPY / 32 + 2 * DECODE)


def test_two_requests_take_turns_on_one_decode_instances_link_and_wait_for_its_iteration():
    # requests 0 and 1 to prefill instances 0 and 1, then both hand-offs to decode instance 2
    config = pd_config(prefill=2, decode=1)
    _, result = run(config, [0.0, 0.0], [64, 64], [3, 3], targets=[0, 1, 2, 2])
    table = request_table(result).set_index("id")
    assert table["first_token"].tolist() == pytest.approx([PREFILL, PREFILL])
    # request 0: copied 0.100-0.115, decodes 0.115-0.135
    assert table.loc[0, "finish"] == pytest.approx(PREFILL + COPY + 2 * DECODE)
    # request 1: waits for the link until 0.115, copied until 0.130, waits for the decode
    # instance's iteration boundary at 0.135, then two steps: 0.155. Its second token
    # (0.145) holds the link wait, the copy, the boundary wait and one step
    assert table.loc[1, "finish"] == pytest.approx(PREFILL + 2 * COPY + 0.005 + 2 * DECODE)
    records = sorted(MIGRATIONS.of(result), key=lambda r: r.request_id)
    assert records[1].committed_at == pytest.approx(PREFILL + 2 * COPY)
    assert records[1].downtime == pytest.approx(2 * COPY)  # held from 0.1, the wait included


def test_a_request_of_a_mixed_pool_never_meets_a_hand_off():
    config = pd_config(prefill=1, decode=1, mixed=1)
    _, result = run(config, [0.0, 0.0], [64, 64], [3, 3], targets=[2, 0, 1])
    table = request_table(result).set_index("id")
    assert table.loc[0, "instances"] == "2"
    assert table.loc[0, "finish"] == pytest.approx(PREFILL + 2 * DECODE)  # as without PD
    assert table.loc[1, "instances"] == "0>1"
    assert [r.request_id for r in MIGRATIONS.of(result)] == [1]


def test_a_one_token_request_finishes_on_its_prefill_instance():
    _, result = run(pd_config(), [0.0], [64], [1])
    row = request_table(result).iloc[0]
    assert (row["instances"], row["finish"]) == ("0", pytest.approx(PREFILL))
    assert not MIGRATIONS.of(result)


def test_a_full_decode_instance_refuses_and_the_request_waits_held_until_a_tick_finds_room():
    # the decode instance holds 10 blocks: request 0's 7 leave no room for request 1's 4
    # until request 0 finishes; meanwhile 1 is held (every tick's try refused), no token
    config = pd_config()
    config.pools[1].kv_capacity_blocks = 10
    _, result = run(config, [0.0, 0.0], [112, 64], [40, 5], targets=[0, 0] + [1] * 100, capacity_blocks=100)
    table = request_table(result).set_index("id")
    refused = [r for r in MIGRATIONS.of(result) if r.abort_reason == "destination_out_of_memory"]
    assert refused and all(r.request_id == 1 for r in refused)
    committed = [r for r in MIGRATIONS.of(result) if r.outcome.value == "committed" and r.request_id == 1]
    assert len(committed) == 1
    assert committed[0].start >= table.loc[0, "finish"]  # not before request 0 left
    assert table.loc[1, "instances"] == "0>1"
    assert table.loc[1, "first_token"] == pytest.approx(PREFILL)
    assert table.loc[1, "finish"] > committed[0].committed_at  # every later token from the decode instance
    summary = summarize(result, request_table(result), cluster_table(result), migration_table(result))
    assert summary["pd"]["handoffs"]["refused"] == len(refused)
    assert summary["migration"]["total"] == 0  # hand-offs are not balance migrations


def test_llumnix_pairing_hands_off_at_the_tick_to_the_freest_decode_instance_one_at_a_time():
    config = pd_config(prefill=1, decode=2, pairing="llumnix")
    config.scheduler.load_report_interval = 0.05
    # request 0 prefilled by 0.11 goes at the 0.15 tick (both decode instances empty: the
    # first); requests 1 and 2, prefilled together by 0.31, go one per tick from the
    # prefill instance: 1 at 0.35 to the decode instance running nothing, 2 at 0.40
    _, result = run(config, [0.01, 0.21, 0.21], [64, 64, 64], [200, 3, 3], targets=[0, 0, 0])
    handoffs = sorted(MIGRATIONS.of(result), key=lambda r: r.start)
    assert [round(r.start, 9) for r in handoffs] == [0.15, 0.35, 0.4]
    assert [r.destination for r in handoffs[:2]] == [1, 2]
    assert [r.request_id for r in handoffs] == [0, 1, 2]


def test_adaptive_pd_serves_on_a_decode_instance_when_every_prefill_instance_is_full():
    # request 0's 128 tokens fill the 8-block prefill instance (its report at 0.1 says so);
    # request 1 arrives while 0 is still being copied out: a decode instance serves it whole
    config = pd_config(adaptive=True)
    config.pools[0].kv_capacity_blocks = 8
    _, result = run(config, [0.0, 0.105], [128, 32], [3, 3], capacity_blocks=100)
    table = request_table(result).set_index("id")
    assert table["instances"].tolist() == ["0>1", "1"]
    assert table.loc[1, "first_token"] == pytest.approx(0.105 + PREFILL)
    assert (PD.of(result).role_swaps["prefilled_on_decode"], PD.of(result).role_swaps["decoded_on_prefill"]) == (1, 0)
    # without adaptive PD the same request waits for the prefill instance
    config = pd_config()
    config.pools[0].kv_capacity_blocks = 8
    _, result = run(config, [0.0, 0.105], [128, 32], [3, 3], capacity_blocks=100)
    assert request_table(result)["instances"].tolist() == ["0>1", "0>1"]


def test_adaptive_pd_decodes_on_the_prefill_instance_while_every_decode_instance_is_busy():
    # the decode instance's 17 blocks hold request 0 (9 after growth): 8 free, below 10
    # remaining steps per request, so request 1 decodes on its prefill instance; once 0 has
    # finished a tick hands 1 off
    config = pd_config(adaptive=True)
    config.pools[1].kv_capacity_blocks = 17
    _, result = run(config, [0.0, 0.3], [128, 32], [30, 60], capacity_blocks=100)
    table = request_table(result).set_index("id")
    assert PD.of(result).role_swaps["decoded_on_prefill"] >= 1
    assert table.loc[1, "instances"] == "0>1"
    handoff = [r for r in MIGRATIONS.of(result) if r.request_id == 1 and r.outcome.value == "committed"]
    assert handoff[0].start >= table.loc[0, "finish"]


def test_adaptive_pd_packs_decoding_prefill_instances_and_eases_a_busy_decode_instance():
    # one decode instance of 17 blocks, kept busy by request 0 (9 blocks: 8 free, under 10
    # remaining steps); requests 1 and 2 decode on prefill instances 0 and 1 meanwhile
    config = pd_config(prefill=2, decode=1, adaptive=True, pairing="llumnix")
    config.pools[1].kv_capacity_blocks = 17
    _, result = run(config, [0.0, 0.3, 0.3], [128, 64, 64], [200, 150, 150], targets=[0, 0, 1], capacity_blocks=100)
    assert (request_table(result)["status"] == "finished").all()
    moves = [r for r in MIGRATIONS.of(result) if r.kind == "adaptive"]
    packed = [r for r in moves if r.destination != 2 and r.source != 2]
    eased = [r for r in moves if r.source == 2]
    # packing goes from the lower prefill instance's id to the higher; easing from the decode
    # instance to a prefill instance running nothing
    assert packed and all(r.source < r.destination for r in packed)
    assert eased and all(r.destination in (0, 1) for r in eased)
    assert PD.of(result).role_swaps["aggregated_on_prefill"] == len(packed)
    assert PD.of(result).role_swaps["eased_to_prefill"] == len(eased)


@pytest.mark.parametrize(
    "pools, pd, message",
    [
        ([{"name": "p", "role": "prefill"}], None, "no decode pool"),
        ([{"name": "d", "role": "decode"}], None, "no prefill pool"),
        ([{"name": "a"}], {"pairing": "immediate"}, "pd: set, but no pool has a role"),
        ([{"name": "p", "role": "prefill"}, {"name": "d", "role": "decode"}], {"copy": "stream"}, "pd.copy"),
        ([{"name": "p", "role": "prefill"}, {"name": "d", "role": "decode"}], {"layerwise": True, "pairing": "llumnix"},
         "pd.layerwise: .* needs pd.pairing: immediate"),
        ([{"name": "p", "role": "prefill"}, {"name": "d", "role": "decode"}], {"pairing": "nearest"},
         r"pd.pairing: unknown hand-off rule 'nearest' \(known: immediate, llumnix\)"),
        ([{"name": "a", "role": "prefil"}], None, r"pools\[0\]\.role: 'prefil' is not one of"),
    ],
)
def test_a_cluster_that_cannot_disaggregate_is_refused_naming_the_key(pools, pd, message):
    # the config's own checks when it loads, then the rules it names, before a run is built
    sections = {"pools": pools, **({"pd": pd} if pd else {})}
    with pytest.raises(ConfigError, match=message):
        check_names(make_config(**sections))


def test_the_summary_counts_hand_offs_apart_from_balance_migrations_with_their_bytes_and_roles():
    from sim.metrics.report import format_summary

    _, result = run(pd_config(prefill=2, decode=1), [0.0, 0.0], [64, 64], [3, 3], targets=[0, 1, 2, 2])
    summary = summarize(result, request_table(result), cluster_table(result), migration_table(result))
    pd_section = summary["pd"]
    handoffs = pd_section["handoffs"]
    assert (handoffs["committed"], handoffs["refused"], summary["migration"]["total"]) == (2, 0, 0)
    assert handoffs["gigabytes"] == pytest.approx(2 * 4 * TRANSFER.block_bytes / 1e9)
    # request 0 reaches the decode instance one copy after its first token, request 1 two
    assert handoffs["first_token_to_commit"]["mean"] == pytest.approx(1.5 * COPY)
    assert handoffs["seconds"]["mean"] == pytest.approx(1.5 * COPY)  # the wait for the link counts
    assert {role: row["instances"] for role, row in pd_section["roles"].items()} == {"decode": 1, "prefill": 2}
    # each prefill instance's link carried its one copy (the second's wait for the decode
    # instance's link is not carrying)
    assert handoffs["link_utilisation"] == pytest.approx(COPY / result.end_time)
    # each prefill instance ran one prefill; the decode instance 4 steps (0.115-0.155)
    assert pd_section["roles"]["prefill"]["busy_fraction"] == pytest.approx(2 * PREFILL / (2 * result.end_time))
    assert pd_section["roles"]["decode"]["busy_fraction"] == pytest.approx(4 * DECODE / result.end_time)
    text = format_summary(summary)
    assert "hand-offs: 2 committed, 0 refused" in text and "roles: decode 1 instances" in text


def test_a_run_without_roles_has_no_pd_section():
    config = make_config(cluster={"instances": 1}, scheduler={"name": "infaas++"})
    simulation = Simulation(config, ConstantTimer(PREFILL, DECODE), make_workload([0.0], [64], [3]))
    result = simulation.run()
    summary = summarize(result, request_table(result), cluster_table(result), migration_table(result))
    assert summary["pd"] is None



def test_a_request_lost_where_a_recompute_migration_just_moved_it_is_owned_by_no_migration_after_its_retry():
    # found by the property test: such a request kept the committed record, so once prefilled
    # again on a prefill instance its hand-off was refused for ever (a stall)
    from sim.instance.migration import MigrationRecord
    from sim.instance.transfer_plan import MigrationMode
    from sim.instance.request import Request

    request = Request(7, 0.0, 64, 8)
    record = MigrationRecord(id=3, request_id=7, source=1, destination=0, mode=MigrationMode.RECOMPUTE, start=0.9)
    request.moving(record)
    request.restart_from_scratch(failed_instance=0)
    assert request.migration is None and request.retries == 1
    elsewhere = MigrationRecord(id=4, request_id=7, source=1, destination=2, mode=MigrationMode.LIVE, start=1.0)
    request.moving(elsewhere)
    request.restart_from_scratch(failed_instance=0)  # neither end failed: still its migration
    assert request.migration is elsewhere
