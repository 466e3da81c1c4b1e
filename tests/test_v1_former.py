"""vLLM V1's batch former (``sim.instance.v1_batching``), step by step against hand-computed
schedules: the token budget split between decodes and a prompt chunk, a prompt continued over
three steps, running requests before waiting ones, ``max_num_seqs``, preemption of the
running tail, and a cached prefix shortening a chunk."""

from __future__ import annotations

from sim.instance.blocks import BlockLedger
from sim.instance.content import Content
from sim.instance.former_io import BatchEvents
from sim.instance.limits import LlumletLimits
from sim.instance.prefix_cache import PrefixCachingLedger
from sim.instance.request import Request, RequestState
from sim.instance.v1_batching import V1BatchFormer
from sim.instance.waiting import WaitingQueue
from tests.doubles import LinearTimer

BLOCK = 4  # tokens per KV block: small, so blocks can be counted by hand


def former(budget=16, seats=8, capacity=100, ledger=None):
    limits = LlumletLimits(capacity_blocks=capacity, block_size=BLOCK, max_batched_tokens=budget, max_batch_size=seats)
    waiting = WaitingQueue(1, 1, BLOCK)
    ended: list[Request] = []
    batches = V1BatchFormer(
        0, limits, LinearTimer(), lambda: 0.0, waiting, ledger or BlockLedger(capacity, BLOCK), BatchEvents(ended.append)
    )
    return batches, waiting, ended


def step(batches):
    """One step: formed, checked, applied; returns (prompt tokens per piece, decodes)."""
    batch = batches.next_batch()
    assert batch is not None
    batches.complete(batch)
    batches.check()
    return (batch.prefill_tokens if batch.is_prefill else []), batch.num_decodes


def arrive(waiting, *requests):
    for request in requests:
        waiting.push(request)


def test_decodes_take_the_budget_first_and_a_prompt_continues_over_three_steps():
    batches, waiting, _ = former(budget=16)
    short = [Request(i, 0.0, 4, 10) for i in range(3)]
    arrive(waiting, *short)
    assert step(batches) == ([4, 4, 4], 0)  # three whole prompts: 12 of 16 tokens
    long = Request(3, 0.0, 39, 5)
    arrive(waiting, long)
    # three decodes take 3 tokens; the 39-token prompt gets the 13 left, three steps running
    assert step(batches) == ([13], 3) and batches.partial is long and long.first_token_time is None
    assert step(batches) == ([13], 3) and long.generated == 0
    assert step(batches) == ([13], 3)
    assert batches.partial is None and long.generated == 1 and long in batches.running  # its first token
    assert step(batches) == ([], 4)  # every running request decodes
    assert [batches.progress(r) for r in short] == [5, 5, 5]  # a prefill token and four decodes
    assert batches.ledger.held(long) == 10  # its 39 + 1 tokens: blocks allocated chunk by chunk


def test_a_waiting_prompt_gets_only_what_the_running_requests_leave():
    batches, waiting, _ = former(budget=10)
    arrive(waiting, *[Request(i, 0.0, 2, 20) for i in range(6)])
    assert step(batches) == ([2, 2, 2, 2, 2], 0)  # five 2-token prompts fill the budget; one waits
    arrive(waiting, Request(6, 0.0, 10, 20))
    # five decodes first; of the 5 tokens left, the waiting 2-token prompt, then 3 of the next
    assert step(batches) == ([2, 3], 5)
    assert batches.partial is not None and batches.partial.id == 6 and batches.partial_computed == 3


def test_max_num_seqs_caps_the_running_requests_not_the_tokens():
    batches, waiting, _ = former(budget=16, seats=2)
    arrive(waiting, *[Request(i, 0.0, 4, 10) for i in range(3)])
    assert step(batches) == ([4, 4], 0)  # 8 tokens left, but two requests run already
    assert step(batches) == ([], 2) and len(waiting) == 1


def test_a_request_short_of_a_block_preempts_the_last_admitted_and_nobody_is_admitted():
    # 6 blocks of 4 tokens: three prompts of 8, 8 and 7 tokens fill them
    batches, waiting, _ = former(budget=32, capacity=6)
    first, second, third = Request(0, 0.0, 8, 20), Request(1, 0.0, 8, 20), Request(2, 0.0, 7, 20)
    arrive(waiting, first, second, third)
    assert step(batches) == ([8, 8, 7], 0) and batches.ledger.free == 0
    # the first two need a third block for their 9th token; none is free: the running tail (the
    # third, admitted last) is preempted by recompute and goes back to the head of the queue
    arrive(waiting, Request(3, 0.0, 1, 1))
    assert step(batches) == ([], 2)
    assert third.state is RequestState.QUEUED and third.preemptions == 1 and waiting.head() is third
    assert batches.ledger.held(third) == 0 and batches.ledger.held(first) == batches.ledger.held(second) == 3
    # no free block for its 8 tokens (7 + the token it had): it waits at the head, nobody else passes it
    assert step(batches) == ([], 2) and waiting.head() is third and len(waiting) == 2


def test_a_prompt_that_cannot_get_its_chunks_blocks_preempts_itself():
    batches, waiting, _ = former(budget=8, capacity=6)
    running, long = Request(0, 0.0, 4, 30), Request(1, 0.0, 20, 5)
    arrive(waiting, running, long)
    assert step(batches) == ([4, 4], 0)  # the long prompt's first 4 tokens: a block each
    # the decode's 5th token takes a 2nd block; the prompt 7 more tokens (11: 3 blocks); 1 free
    assert step(batches) == ([7], 1) and batches.ledger.free == 1
    # its next 7 tokens (18: 5 blocks) need 2 more; it is the running tail: it preempts itself,
    # and the decode still runs
    assert step(batches) == ([], 1)
    assert long.state is RequestState.QUEUED and long.preemptions == 1 and batches.partial is None
    assert batches.ledger.held(long) == 0 and waiting.head() is long
    # the next step admits it again, from its first token: 7 tokens, 2 of the 4 free blocks
    assert step(batches) == ([7], 1) and batches.partial is long and batches.partial_computed == 7


def test_a_cached_prefix_shortens_the_chunk_to_the_tokens_not_found():
    ledger = PrefixCachingLedger(100, BLOCK)
    batches, waiting, ended = former(budget=12, ledger=ledger)
    earlier = Request(0, 0.0, 16, 1, content=Content("c"))
    arrive(waiting, earlier)
    assert step(batches) == ([12], 0)  # 12 of its 16 tokens
    assert step(batches) == ([4], 0) and ended == [earlier]  # its one token: finished, blocks cached
    later = Request(1, 0.0, 20, 3, content=Content("c"))  # the same 16 tokens, then 4 more
    arrive(waiting, later)
    # 16 tokens found cached: the budget counts the 4 computed, and the prompt is done in one step
    assert step(batches) == ([4], 0) and later.cached_tokens == 16 and later.generated == 1
    # without the cache the same prompt takes 12 tokens now and 8 next step
    plain, waiting2, _ = former(budget=12)
    arrive(waiting2, Request(1, 0.0, 20, 3))
    assert step(plain) == ([12], 0) and step(plain) == ([8], 0)
