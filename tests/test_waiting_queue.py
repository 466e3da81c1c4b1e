"""The waiting queue (``sim.instance.waiting``): per-tier lanes in order, and the totals a
load report reads from it."""

from __future__ import annotations

from sim.instance.request import Request, RequestState
from sim.instance.waiting import WaitingQueue


def test_the_waiting_queue_serves_tiers_in_order_and_keeps_its_totals():
    queue = WaitingQueue(lanes=2, tiers=2, block_size=16)
    low, high, preempted = Request(0, 0.0, 20, 5, tier=1), Request(1, 1.0, 16, 5, tier=0), Request(2, 2.0, 33, 5, tier=1)
    preempted.requeued = True
    for request in (low, high):
        queue.push(request)
    queue.push(preempted, front=True)
    assert all(r.state is RequestState.QUEUED for r in (low, high, preempted))
    assert queue.count == 3 and queue.tokens == 20 + 16 + 33
    assert queue.demand_blocks == 2 + 1 + 3 and queue.per_tier == [1, 2] and queue.preempted == 1
    assert [queue.pop_head().id for _ in range(3)] == [1, 2, 0]  # tier 0 first, then the preempted head
    assert queue.count == queue.tokens == queue.demand_blocks == queue.preempted == 0
    queue.push(low)
    queue.clear()
    assert not queue and list(queue) == [] and queue.per_tier == [0, 0] and queue.tokens == 0
