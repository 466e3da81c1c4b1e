"""The prefix cache (``sim.instance.prefix_cache``) against hand-computed hits, reference
counts and evictions; conversations whose later turns compute only what is new; cache-aware
dispatch and transfers that copy only what the destination lacks."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.config import ConfigError
from sim.engine import Simulation
from sim.instance.content import Content
from sim.instance.errors import BlockLeakError
from sim.instance.limits import blocks_for
from sim.instance.prefix_cache import PrefixCachingLedger
from sim.instance.request import Request
from sim.workload.sessions import OPEN, Sharing
from tests.doubles import LinearTimer, make_config, make_transfer, make_workload

BLOCK = 4  # tokens per block in the ledger cases (hand-countable)


def request(rid: int, tokens: int, content: Content | None) -> Request:
    return Request(rid, 0.0, tokens, 10, content=content)


def test_a_second_request_shares_the_cached_full_blocks_of_the_first():
    ledger = PrefixCachingLedger(8, BLOCK)
    conversation = Content("c")
    first = request(0, 9, conversation)  # 9 tokens: blocks 0, 1 full, block 2 holds one token
    assert ledger.allocate(first, 3) == 0
    assert ledger.table(first) == (0, 1, 2)
    second = request(1, 10, conversation)  # the same first 8 tokens, then its own
    assert ledger.allocate(second, 3) == 8  # blocks 0 and 1 found; the partial block 2 is not shared
    assert ledger.table(second) == (0, 1, 3)
    assert ledger._refs[:4] == [2, 2, 1, 1]
    assert (ledger.free, ledger.allocated) == (4, 4)  # 4 distinct blocks held
    ledger.check([first, second])
    assert (ledger.hit_tokens, ledger.prompt_tokens, ledger.hit_blocks, ledger.prompt_blocks) == (8, 19, 2, 4)


def test_the_hit_stops_one_token_short_of_the_prompt_and_at_the_first_miss():
    ledger = PrefixCachingLedger(8, BLOCK)
    ledger.allocate(request(0, 9, Content("c")), 3)  # caches blocks 0 and 1 of "c"
    exact = request(1, 8, Content("c"))  # its 8 tokens are both cached blocks
    assert ledger.allocate(exact, 2) == 4  # vLLM recomputes the last token: only block 0 counts
    other = request(2, 9, Content("d"))
    assert ledger.allocate(other, 3) == 0


def test_freed_blocks_stay_cached_until_the_free_queue_hands_them_out_oldest_first():
    ledger = PrefixCachingLedger(6, BLOCK)
    kept = request(0, 8, Content("c"))  # blocks 0, 1: both full, cached at admission
    ledger.allocate(kept, 2)
    ledger.release(kept)  # free but still cached, joining the queue's tail last block first
    assert list(ledger._queue) == [2, 3, 4, 5, 1, 0] and ledger.free == 6
    fresh = request(1, 8, None)  # shares nothing: the queue's head, never used, 2 and 3
    ledger.allocate(fresh, 2)
    assert ledger.table(fresh) == (2, 3) and ledger.evictions == 0
    again = request(2, 9, Content("c"))  # finds blocks 0 and 1 (off the queue), takes 4
    assert ledger.allocate(again, 3) == 8 and ledger.table(again) == (0, 1, 4)
    ledger.check([fresh, again])
    ledger.release(fresh)
    ledger.release(again)
    assert list(ledger._queue) == [5, 3, 2, 4, 1, 0]
    evicting = request(3, 24, None)  # needs all six: the two cached blocks are evicted
    ledger.allocate(evicting, 6)
    assert ledger.evictions == 2 and not ledger._cached
    ledger.check([evicting])


def test_blocks_filled_by_decoding_are_cached_when_the_request_leaves():
    ledger = PrefixCachingLedger(8, BLOCK)
    conversation = Content("c")
    turn = request(0, 6, conversation)  # blocks 0 (full) and 1 (2 tokens)
    ledger.allocate(turn, 2)
    turn.generated = 7  # 13 tokens, the last one's KV not computed: 12 computed, blocks 0-2 full
    ledger.allocate(turn, 2)  # grown to 4 blocks
    ledger.release(turn)
    assert set(ledger._cached) == {("c", 0), ("c", 1), ("c", 2)}
    follow_up = request(1, 13 + 3, conversation)  # the history and a 3-token message
    assert ledger.allocate(follow_up, 4) == 12


def test_a_system_prompt_is_shared_by_streams_forked_from_it_and_no_further():
    system = Content("system")
    a, b = Content("a", system, 8), Content("b", system, 8)
    assert a.block_key(1, BLOCK) == b.block_key(1, BLOCK) == ("system", 1)
    assert a.block_key(2, BLOCK) != b.block_key(2, BLOCK)
    ledger = PrefixCachingLedger(8, BLOCK)
    ledger.allocate(request(0, 12, a), 3)
    assert ledger.allocate(request(1, 12, b), 3) == 8


def test_the_check_catches_a_reference_count_that_drifted():
    ledger = PrefixCachingLedger(4, BLOCK)
    held = request(0, 8, Content("c"))
    ledger.allocate(held, 2)
    ledger._refs[0] += 1
    with pytest.raises(BlockLeakError, match="holders but counts"):
        ledger.check([held])


def test_an_incoming_transfer_reserves_only_the_blocks_the_destination_lacks():
    destination = PrefixCachingLedger(8, BLOCK)
    conversation = Content("c")
    destination.allocate(request(0, 9, conversation), 3)  # caches blocks 0, 1 of "c"
    moving = request(1, 14, conversation)  # 4 blocks on its source
    assert destination.lacking("m", moving, 0, 3) == 1  # a first stage of 3: 2 cached
    assert destination.reserve("m", 3, moving, 0)
    assert destination.reserved == 1
    assert destination.lacking("m", moving, 3, 1) == 1  # block 3 is not cached
    assert destination.reserve("m", 1, moving, 3)
    destination.commit("m", moving)
    assert destination.table(moving)[:2] == (0, 1) and destination.reserved == 0
    assert (destination.transfer_blocks, destination.transfer_hits) == (4, 2)  # counted at commit
    destination.check([moving, *destination._tables])


def test_the_check_catches_a_cached_block_in_a_table_whose_tokens_differ():
    ledger = PrefixCachingLedger(8, BLOCK)
    mine, other = request(0, 8, Content("c")), request(1, 8, Content("d"))
    ledger.allocate(mine, 2)
    ledger.allocate(other, 2)
    ledger._tables[other][0] = ledger._tables[mine][0]  # "d" would read "c"'s first block
    ledger._refs = [2, 1, 0, 1, 0, 0, 0, 0]
    ledger._queue[2] = None
    ledger.free += 1
    ledger.allocated -= 1
    with pytest.raises(BlockLeakError, match="request 1's block 0 is block 0, cached as"):
        ledger.check([mine, other])


SHARED_OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["admit", "grow", "decode", "release", "reserve", "cancel", "commit"]),
        st.integers(0, 5),  # which request
        st.integers(1, 4),  # blocks (reserve), tokens decoded
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(SHARED_OPERATIONS, st.lists(st.integers(1, 40), min_size=6, max_size=6))
def test_every_block_is_counted_and_holds_its_holders_tokens_whatever_the_cache_is_asked(operations, prompts):
    """INV-1 with sharing: six requests on two conversations and a system prompt, admitted,
    grown, decoded, released and migrated in (reservations with hits) in any order."""
    ledger = PrefixCachingLedger(16, BLOCK)
    system = Content("system")
    streams = [Content("a", system, 8), Content("b", system, 8), Content("c")]
    requests = [Request(i, 0.0, prompts[i], 100, content=streams[i % 3]) for i in range(6)]
    for name, which, amount in operations:
        chosen, key = requests[which], ("migration", which)
        held = ledger.held(chosen)
        resident = held or key in ledger.reservations
        if name == "admit" and not resident and blocks_for(chosen.seq_len, BLOCK) <= ledger.free:
            found = ledger.allocate(chosen, blocks_for(chosen.seq_len, BLOCK))
            assert found % BLOCK == 0 and found < chosen.seq_len
        elif name == "grow" and held and ledger.free:
            ledger.grow_current([(chosen, chosen.epoch)], max_blocks=12)
        elif name == "decode" and held:  # tokens its blocks hold room for
            chosen.generated = min(chosen.generated + amount, held * BLOCK - chosen.prompt_tokens)
        elif name == "release":
            ledger.release(chosen)
        elif name == "reserve" and not held:
            first = len(ledger.reservations.get(key, []))
            lacking = ledger.lacking(key, chosen, first, amount)
            assert 0 <= lacking <= amount
            ledger.reserve(key, amount, chosen, first)
        elif name == "cancel":
            ledger.cancel(key)
        elif name == "commit" and key in ledger.reservations and not held:
            ledger.commit(key, chosen)
        ledger.check([r for r in requests if ledger.held(r)])
        assert ledger.free + ledger.allocated + ledger.reserved == ledger.capacity and ledger.free >= 0


# ---------------------------------------------------------------------- whole runs
PREFILL_PER_TOKEN = 0.0002  # LinearTimer's


def conversation_run(caching: bool, think: float = 1.0) -> Simulation:
    """One conversation of three turns on one instance: messages of 20, 7 and 5 tokens,
    answers of 13, 4 and 2 (prompts 20, 40, 49)."""
    config = make_config(cluster={"instances": 1, **({"ledger": "prefix-caching"} if caching else {})})
    workload = make_workload([0.0, 0.0, 0.0], [20, 20 + 13 + 7, 40 + 4 + 5], [13, 4, 2])
    sharing = Sharing([0, 0, 0], [1, 2, 3], [OPEN, 0, 1], [0.0, think, think], [-1, -1, -1], 0)
    simulation = Simulation(config, LinearTimer(), dataclasses.replace(workload, sharing=sharing))
    simulation.run()
    return simulation


def test_a_later_turn_computes_only_its_new_tokens_and_the_last_answer_token():
    simulation = conversation_run(caching=True)
    first, second, third = (simulation.request(i) for i in range(3))
    # turn 1 holds 20 + 13 tokens; the last answer token's KV is never computed, so 32 are:
    # two full 16-token blocks, cached when it finished
    assert first.cached_tokens == 0
    # turn 2 (prompt 40) finds them and computes 8: its 7 new tokens and that answer token
    assert second.cached_tokens == 32
    # turn 2 computed 40 + 4 - 1 = 43 tokens: still two full blocks; turn 3 (prompt 49)
    # computes 17: its 5 new tokens, turn 2's 4-token answer and the 8 tokens of block 2
    assert third.cached_tokens == 32
    # the closed loop: each later turn arrives its think time after the previous one finished
    assert second.arrival == pytest.approx(first.finish_time + 1.0)
    assert third.arrival == pytest.approx(second.finish_time + 1.0)


def test_the_prefill_time_counts_only_the_tokens_it_computes():
    cached = conversation_run(caching=True).request(1)
    blind = conversation_run(caching=False).request(1)
    assert blind.cached_tokens == 0
    # one request in its prefill on an empty instance: the first token after base + per token
    saved = (blind.first_token_time - blind.arrival) - (cached.first_token_time - cached.arrival)
    assert saved == pytest.approx(32 * PREFILL_PER_TOKEN)


def test_cache_aware_dispatch_sends_a_later_turn_where_its_history_is_cached():
    config = make_config(
        cluster={"instances": 2, "ledger": "prefix-caching"},
        scheduler={"name": "llumnix", "dispatch": "cache-aware"},
    )
    # conversation 0's two turns, and conversation 1's first turn between them
    workload = make_workload([0.0, 0.0, 0.0], [40, 100, 40 + 30 + 10], [30, 5, 3])
    sharing = Sharing([0, 1, 0], [1, 1, 2], [OPEN, OPEN, 0], [0.0, 0.0, 2.0], [-1, -1, -1], 0)
    simulation = Simulation(
        config, LinearTimer(), dataclasses.replace(workload, sharing=sharing), transfer=make_transfer()
    )
    simulation.run()
    first, later = simulation.request(0), simulation.request(2)
    assert later.instances[0] == first.instances[-1]
    assert later.cached_tokens == 64


def test_sessions_settings_without_conversations_are_refused():
    with pytest.raises(ConfigError, match="sessions: set, but source is"):
        make_config(workload={"sessions": {"think_time": 2.0}})


def test_the_token_budget_counts_only_what_the_prefills_compute():
    # two 90-token prompts repeat the first 64 tokens of an earlier one: 26 new tokens each,
    # so both fit one 100-token prefill (vLLM's v1 scheduler charges new tokens only)
    config = make_config(cluster={"instances": 1, "ledger": "prefix-caching", "max_batched_tokens": 100})
    workload = make_workload([0.0, 5.0, 5.0], [70, 90, 90], [2, 2, 2])
    sharing = Sharing.prefixes([-1, 0, 0], [0, 64, 64])
    simulation = Simulation(config, LinearTimer(), dataclasses.replace(workload, sharing=sharing))
    simulation.run()
    first, second, third = (simulation.request(i) for i in range(3))
    assert second.cached_tokens == third.cached_tokens == 64
    assert second.first_token_time == third.first_token_time  # one prefill iteration for both


def test_the_summary_counts_every_prefill_once_per_instance_and_once_per_tier():
    from sim.engine.prefix_result import PREFIX_CACHE
    from sim.metrics import request_table
    from sim.metrics.prefix import prefix_cache_summary

    config = make_config(
        cluster={"instances": 2, "ledger": "prefix-caching"},
        scheduler={"name": "llumnix", "dispatch": "cache-aware"},
        workload={"source": "sessions", "trace": "traces/sharegpt/sharegpt_v3_sessions.csv", "num_requests": 30,
                  "arrival": {"rate": 1.0}, "priority": {"tiers": 2}},
    )
    result = Simulation(config, LinearTimer(), transfer=make_transfer()).run()
    summary = prefix_cache_summary(result)
    counters = PREFIX_CACHE.of(result).values()
    assert summary["tokens"]["looked_up"] == sum(c["prompt_tokens"] for c in counters)
    assert sum(sum(c["by_tier"].get(t, (0,))[0] for c in counters) for t in (0, 1)) == summary["tokens"]["looked_up"]
    found = sum(c["hit_tokens"] for c in counters)
    assert found == summary["prefill_tokens_saved"] == request_table(result)["cached_tokens"].sum() > 0
    assert set(summary["by_tier"]) == {"0", "1"} and set(summary["by_instance"]) == {"0", "1"}
