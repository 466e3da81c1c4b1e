"""A KV transfer between two instances (``sim.instance.kv_transfer``): reserve, copy over
the link, commit or cancel."""

from __future__ import annotations

import pytest
import simpy

from sim.instance.kv_transfer import KvTransfer
from sim.instance.request import Request
from tests.instance_support import make_parts


class Link:
    """A link that takes 10 ms plus 1 ms per block."""

    stage_latency = 0.01

    def stage_time(self, blocks: int) -> float:
        return self.stage_latency + 0.001 * blocks


def test_a_kv_transfer_reserves_copies_over_the_link_and_commits_or_cancels():
    env = simpy.Environment()
    _, _, _, source, _ = make_parts(capacity=100)
    _, _, destination_batches, destination, _ = make_parts(capacity=30, watermark=3)
    transfer = KvTransfer(env, source, destination, ("handoff", 7), Link())
    request = Request(7, 0.0, 320, 10)
    assert transfer.reserve(request, 28) is None and destination.ledger.reserved == 0  # it would cut into the watermark
    assert transfer.reserve(request, 20) == 20 and destination.ledger.reserved == 20  # no cache: every block crosses
    slowed = []
    env.process(transfer.copy(20))
    env.run(until=0.005)
    slowed.append((source.batches.copying, destination_batches.copying))  # both ends copy meanwhile
    env.run()
    assert env.now == pytest.approx(0.03) and slowed == [(1, 1)] and destination_batches.copying == 0
    transfer.accept(20)
    transfer.commit(request)
    assert transfer.copied == 20 and destination.ledger.held(request) == 20 and destination.ledger.reserved == 0
    again = KvTransfer(env, source, destination, ("handoff", 8), Link())
    assert again.reserve(Request(8, 0.0, 64, 1), 5) == 5 and again.cancel() == 5 and destination.ledger.free == 10
