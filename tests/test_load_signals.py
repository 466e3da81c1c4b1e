"""Every virtual-usage rule, every load signal of a report, and the K-tier headroom formula."""

from __future__ import annotations

import math

import pytest

from sim.instance.load import (
    dispatch_freeness,
    freeness_full,
    freeness_normal,
    queue_aware_freeness,
)
from sim.instance.virtual_usage import headroom_usage, tier_headroom_blocks
from tests.reports import make_report

M = 851


def report(used=0, running=0, waiting=0, waiting_demand=0, head=0, headroom=0.0, reserved=0, draining=False):
    return make_report(
        instance_id=0,
        capacity_blocks=M,
        used_blocks=used,
        reserved_blocks=reserved,
        num_running=running,
        num_waiting=waiting,
        waiting_demand_blocks=waiting_demand,
        head_demand_blocks=head,
        headroom_blocks=headroom,
        draining=draining,
    )


def test_running_requests_use_their_blocks_and_reserved_blocks_count_as_used():
    assert freeness_full(report(used=300, running=4)) == (M - 300) / 4
    assert freeness_normal(report(used=300, running=4)) == (M - 300) / 4
    assert freeness_full(report(used=300, reserved=50, running=4)) == (M - 350) / 4
    assert report(used=300, reserved=50).free_blocks == M - 350


def test_a_tier_with_running_requests_charges_its_whole_headroom_once():
    headroom = [100.0, 40.0, 0.0]
    # headroom of tier p is shared by its n_p running requests: the sum over them is H_p
    assert headroom_usage([3, 0, 5], headroom) == 100.0
    assert headroom_usage([1, 2, 5], headroom) == 140.0
    assert headroom_usage([0, 0, 5], headroom) == 0.0
    loaded = report(used=300, running=8, headroom=headroom_usage([1, 2, 5], headroom))
    assert freeness_full(loaded) == (M - 300 - 140) / 8
    assert freeness_normal(loaded) == (M - 300) / 8  # the normal view ignores headroom


def test_head_of_line_request_inflates_usage_by_its_demand_and_others_count_zero():
    queued = report(used=300, running=4, waiting=3, waiting_demand=500, head=120)
    assert freeness_full(queued) == (M - 300 - 120) / 4  # only the head's 120, not all 500
    assert freeness_normal(queued) == (M - 300) / 4  # no queue inflation in the normal view


def test_draining_instance_carries_a_fake_request_of_infinite_usage():
    draining = report(used=300, running=4, draining=True)
    assert freeness_full(draining) == -math.inf
    assert freeness_normal(draining) == (M - 300) / 4  # auto-scaling must not see the fake request


def test_an_empty_batch_divides_by_one_so_an_idle_instance_is_the_freest():
    assert freeness_full(report()) == M
    assert freeness_full(report(waiting=1, waiting_demand=50, head=50)) == M - 50
    # a single running request using nothing still ranks below the idle instance
    one_running = report(running=1, used=1)
    assert freeness_full(report()) > freeness_full(one_running) == M - 1


def test_dispatch_freeness_counts_demand_dispatched_since_the_report():
    loaded = report(used=300, running=4)
    assert dispatch_freeness(loaded, 0) == freeness_full(loaded)
    assert dispatch_freeness(loaded, 40) == (M - 300) / 4 - 40 / 4


def test_queue_aware_freeness_counts_every_queued_request_and_its_demand():
    # 300 used by 4 running, 3 queued needing 200 blocks together: (851 - 300 - 200) / 7
    assert queue_aware_freeness(report(used=300, running=4, waiting=3, waiting_demand=200)) == (
        M - 300 - 200
    ) / 7
    assert queue_aware_freeness(report()) == M  # idle
    # F_normal calls this instance free although a 400-block queue waits on it
    blocked = report(used=400, running=2, waiting=1, waiting_demand=400, head=400)
    assert freeness_normal(blocked) > 200 and queue_aware_freeness(blocked) < 20


@pytest.mark.parametrize("tiers", range(1, 11))
def test_headroom_formula_for_k_tiers(tiers):
    cap = 0.3
    values = tier_headroom_blocks(M, tiers, h_max=0.2, decay=0.5, max_total=cap)
    assert len(values) == tiers
    assert sum(values) <= cap * M + 1e-9  # total reserved never exceeds the configured cap
    assert all(a >= b for a, b in zip(values, values[1:]))  # monotone: less for lower tiers
    assert values[-1] == 0.0  # the lowest tier gets none
    uncapped = tier_headroom_blocks(M, tiers, h_max=0.2, decay=0.5, max_total=1.0)
    expected = [M * 0.2 * math.exp(-0.5 * p) for p in range(tiers - 1)] + [0.0]
    assert uncapped == pytest.approx(expected)


def test_headroom_cap_scales_all_tiers_down_proportionally():
    uncapped = tier_headroom_blocks(M, 10, h_max=0.2, decay=0.1, max_total=1.0)
    capped = tier_headroom_blocks(M, 10, h_max=0.2, decay=0.1, max_total=0.3)
    assert sum(capped) == pytest.approx(0.3 * M)
    ratios = [c / u for c, u in zip(capped, uncapped) if u]
    assert max(ratios) == pytest.approx(min(ratios))


def test_paper_binary_scheme_is_k2_with_100_blocks_for_tier_0():
    assert tier_headroom_blocks(M, 2, explicit=[100, 0]) == [100.0, 0.0]
    assert tier_headroom_blocks(M, 1) == [0.0]  # one tier: Llumnix-base, no headroom
