"""The batch former (``sim.instance.batching``) on its own: lazy accounting exact, cleared
on failure."""

from __future__ import annotations

import pytest

from sim.instance.former_io import BatchEvents
from sim.instance.batching import BatchFormer
from sim.instance.blocks import BlockLedger
from sim.instance.limits import LlumletLimits
from sim.instance.request import Request, RequestState
from sim.instance.waiting import WaitingQueue
from tests.doubles import LinearTimer
from tests.instance_support import make_parts, run_prefill


def test_the_batch_former_keeps_its_lazy_accounting_exact_and_clears_on_failure():
    _, waiting, batches, _, _ = make_parts()
    short, long = Request(0, 0.0, 16, 3), Request(1, 0.0, 40, 50)
    run_prefill(batches, waiting, short, long)
    for _ in range(2):  # the short request's last two tokens
        batches.complete(batches.next_batch())
    batches.check()
    assert short.state is RequestState.FINISHED and list(batches.running) == [long]
    assert batches.progress(long) == 3 and batches.seq_sum == 43
    batches.clear()
    assert batches.holds_nothing and batches.seq_sum == 0 and batches.next_batch() is None


def test_each_step_pays_the_detokenizer_for_every_output_token_its_requests_hold():
    """vLLM 0.1.2 converts each running request's whole output back into text at every step:
    with a timer that states a cost per output token, a step costs that much more per token
    the batch's requests have output so far, plus this step's; the prefill pays for the first."""
    timer = LinearTimer()
    timer.overhead_per_output_token = 1e-4
    limits = LlumletLimits(capacity_blocks=100)
    waiting = WaitingQueue(1, 1, limits.block_size)
    done: list[Request] = []
    batches = BatchFormer(0, limits, timer, lambda: 0.0, waiting, BlockLedger(100), BatchEvents(done.append))
    first, second = Request(0, 0.0, 20, 6), Request(1, 0.0, 30, 6)
    waiting.push(first)
    waiting.push(second)
    prefill = batches.next_batch()
    assert prefill.seconds == pytest.approx(timer.batch_time([(20, 20), (30, 30)], 0, 0) + 2 * 1e-4)
    batches.complete(prefill)
    for step in range(1, 5):  # each request holds `step` output tokens, and gets one more
        batch = batches.next_batch()
        plain = timer.batch_time((), 2, batches.seq_sum)
        assert batch.seconds == pytest.approx(plain + 1e-4 * 2 * (step + 1))
        batches.complete(batch)
        batches.check()
