"""The batch former (``sim.instance.batching``) on its own: lazy accounting exact, cleared
on failure."""

from __future__ import annotations

from sim.instance.request import Request, RequestState
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
