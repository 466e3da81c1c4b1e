"""Every virtual-usage rule, both freeness views, and the K-tier headroom formula."""

from __future__ import annotations

import math

import pytest

from sim.instance.virtual_usage import (
    freeness,
    freeness_views,
    headroom_usage,
    queue_aware_freeness,
    tier_headroom_blocks,
    total_virtual_usage,
)

M = 851


def test_running_requests_use_their_blocks():
    assert total_virtual_usage(300, [4], [0.0], 0, False) == 300
    assert freeness_views(M, 300, 4) == ((M - 300) / 4, (M - 300) / 4)


def test_a_tier_with_running_requests_charges_its_whole_headroom_once():
    headroom = [100.0, 40.0, 0.0]
    # headroom of tier p is shared by its n_p running requests: the sum over them is H_p
    assert headroom_usage([3, 0, 5], headroom) == 100.0
    assert headroom_usage([1, 2, 5], headroom) == 140.0
    assert headroom_usage([0, 0, 5], headroom) == 0.0
    full, normal = freeness_views(M, 300, 8, [1, 2, 5], headroom)
    assert full == (M - 300 - 140) / 8
    assert normal == (M - 300) / 8  # the normal view ignores headroom


def test_head_of_line_request_inflates_usage_by_its_demand_and_others_count_zero():
    full, normal = freeness_views(M, 300, 4, head_demand_blocks=120)
    assert full == (M - 300 - 120) / 4
    assert normal == (M - 300) / 4  # no queue inflation in the normal view


def test_draining_instance_carries_a_fake_request_of_infinite_usage():
    full, normal = freeness_views(M, 300, 4, draining=True)
    assert full == -math.inf
    assert normal == (M - 300) / 4  # auto-scaling must not see the fake request


def test_freeness_with_an_empty_batch_divides_by_one():
    assert freeness(M, 0, 0) == M  # idle: the freest an instance can be
    assert freeness(M, 50, 0) == M - 50  # only a queued head-of-line request
    assert freeness(M, 0, 0) > freeness(M, 0, 1) - 1e-9


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


def test_queue_aware_freeness_counts_every_queued_request_and_its_demand():
    # 300 used by 4 running, 3 queued needing 200 blocks together: (851 - 300 - 200) / 7
    assert queue_aware_freeness(M, 300, 4, 3, 200) == (M - 300 - 200) / 7
    assert queue_aware_freeness(M, 0, 0, 0, 0) == M  # idle
    # F_normal would call this instance free although a 400-block queue waits on it
    full, normal = freeness_views(M, 400, 2, head_demand_blocks=400)
    assert normal > 200 and queue_aware_freeness(M, 400, 2, 1, 400) < 20
