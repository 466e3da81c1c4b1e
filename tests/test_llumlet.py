"""The llumlet's local scheduler, stepped by hand: vLLM block growth, admission, preemption."""

from __future__ import annotations

import math

from sim.instance.former_io import BatchEvents
from sim.instance.limits import LlumletLimits
from sim.instance.llumlet import Llumlet
from sim.instance.load import freeness_full, freeness_normal
from sim.instance.request import Request, RequestState
from tests.doubles import LinearTimer


class Clock:
    """Simulated time, advanced by ``step`` by each iteration's duration."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make_llumlet(capacity=100, **limits) -> tuple[Llumlet, list[Request]]:
    done: list[Request] = []
    llumlet = Llumlet(
        0, LlumletLimits(capacity_blocks=capacity, **limits), LinearTimer(), clock=Clock(),
        events=BatchEvents(done.append),
    )
    return llumlet, done


def step(llumlet: Llumlet):
    """One iteration, its duration on the llumlet's clock; blocks checked after it."""
    batch = llumlet.batches.next_batch()
    if batch is not None:
        llumlet.batches.clock.now += batch.seconds
        llumlet.batches.complete(batch)
        llumlet.check()
    return batch


def test_blocks_persist_and_grow_one_per_block_size_tokens():
    llumlet, done = make_llumlet()
    request = Request(0, 0.0, prompt_tokens=16, output_tokens=40)
    llumlet.enqueue(request)
    batch = llumlet.batches.next_batch()
    assert batch.is_prefill and batch.prefill_tokens == [16]
    assert llumlet.ledger.held(request) == 1  # the prompt's 16 tokens
    llumlet.batches.complete(batch)
    assert request.generated == 1 and request.first_token_time == 0.0  # the clock stood still
    while not request.done:
        batch = llumlet.batches.next_batch()
        # before every decode step the request holds blocks for prompt + generated tokens
        seq_len = request.prompt_tokens + llumlet.batches.progress(request)
        assert llumlet.ledger.held(request) == math.ceil(seq_len / 16)
        llumlet.batches.complete(batch)
        llumlet.check()
    assert request.state is RequestState.FINISHED and request.generated == 40
    assert done == [request]
    assert llumlet.ledger.free == 100 and llumlet.ledger.allocated == 0


def test_admission_respects_watermark_token_budget_and_batch_cap():
    llumlet, _ = make_llumlet(capacity=20, watermark_blocks=2, max_batched_tokens=100, max_batch_size=3)
    requests = [Request(i, 0.0, prompt_tokens=32, output_tokens=5) for i in range(5)]
    for request in requests:
        llumlet.enqueue(request)
    batch = llumlet.batches.next_batch()
    # token budget 100 admits three 32-token prompts; the fourth would exceed it
    assert [r.id for r in batch.requests] == [0, 1, 2]
    llumlet.batches.complete(batch)
    # the batch cap (3 running) now keeps the queue waiting: the next iteration decodes
    batch = llumlet.batches.next_batch()
    assert not batch.is_prefill and batch.num_decodes == 3
    report = llumlet.reporter.report()
    assert report.head_demand_blocks == 2 and report.waiting_demand_blocks == 4
    assert report.waiting_tokens == 64 and report.num_waiting == 2

    llumlet, _ = make_llumlet(capacity=10, watermark_blocks=2)
    big = Request(0, 0.0, prompt_tokens=16 * 9, output_tokens=3)  # 9 blocks > 10 - 2 watermark
    llumlet.enqueue(big)
    assert llumlet.batches.next_batch() is None
    assert big.state is RequestState.ABORTED and big.abort_reason == "exceeds_instance_limits"


def test_preemption_by_recompute_takes_the_most_recently_admitted_and_it_still_finishes():
    llumlet, done = make_llumlet(capacity=12)
    first = Request(0, 0.0, prompt_tokens=32, output_tokens=80)
    second = Request(1, 0.0, prompt_tokens=32, output_tokens=80)
    llumlet.enqueue(first)
    llumlet.enqueue(second)
    recompute_prefills = []
    while not (first.done and second.done):
        batch = step(llumlet)
        assert batch is not None
        if batch.is_prefill and second.preemptions and second in batch.requests:
            recompute_prefills.append(llumlet.batches.timer.batch_time([(q, q) for q in batch.prefill_tokens], 0, 0))
    assert first.preemptions == 0
    assert second.preemptions >= 1
    # the recompute prefill covered prompt + generated tokens, and the loss was recorded:
    # from the preemption until the recompute prefill ended, so at least that prefill
    assert second.generated == 80
    assert recompute_prefills and second.preemption_loss >= sum(recompute_prefills) > 0
    assert llumlet.batches.preemptions == second.preemptions
    assert [r.id for r in done] == [0, 1]
    assert llumlet.ledger.allocated == 0


def test_head_of_line_blocked_by_memory_is_visible_in_the_load_report():
    llumlet, _ = make_llumlet(capacity=10)
    runner = Request(0, 0.0, prompt_tokens=16 * 8, output_tokens=100)
    waiter = Request(1, 0.0, prompt_tokens=16 * 5, output_tokens=10)
    llumlet.enqueue(runner)
    step(llumlet)
    llumlet.enqueue(waiter)
    report = llumlet.reporter.report()
    assert report.head_demand_blocks == 5 and report.num_waiting == 1
    assert report.head_blocked
    assert report.used_blocks == 8 and report.free_blocks == 2
    # freeness: (M - used - head demand) / running = (10 - 8 - 5) / 1
    assert freeness_full(report) == -3.0 and freeness_normal(report) == 2.0


def test_a_sequence_longer_than_the_model_supports_is_aborted_not_run():
    llumlet, done = make_llumlet(capacity=100, max_seq_len=100)
    too_long_prompt = Request(0, 0.0, prompt_tokens=120, output_tokens=5)
    grows_too_long = Request(1, 0.0, prompt_tokens=50, output_tokens=100)
    llumlet.enqueue(too_long_prompt)
    llumlet.enqueue(grows_too_long)
    while len(done) < 2:
        step(llumlet)
    assert too_long_prompt.abort_reason == "exceeds_instance_limits"
    assert too_long_prompt.generated == 0
    assert grows_too_long.abort_reason == "exceeds_instance_limits"
    # stopped when it needed a 7th block: 96 tokens is the most that fits whole blocks of 16
    assert grows_too_long.prompt_tokens + grows_too_long.generated == 97
    assert llumlet.ledger.allocated == 0


def test_the_preemption_victim_is_the_latest_arrival_not_the_latest_admission():
    """vLLM keeps its running list in arrival order and preempts from the back: an older
    request admitted later (here queued after a newer one, as a migrated or re-dispatched
    request can be) is protected, and the newer arrival gives way."""
    llumlet, done = make_llumlet(capacity=12)
    newer = Request(0, 5.0, prompt_tokens=32, output_tokens=80)
    older = Request(1, 1.0, prompt_tokens=32, output_tokens=80)
    llumlet.enqueue(newer)
    step(llumlet)  # the newer request is admitted first
    llumlet.enqueue(older)
    while not (newer.done and older.done):
        assert step(llumlet) is not None
    assert older.preemptions == 0 and newer.preemptions >= 1
