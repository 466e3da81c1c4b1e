"""The block ledger (``sim.instance.blocks``): every block free, held or reserved, with
identity, whatever it is asked (INV-1 blocks)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.instance.blocks import BlockLedger
from sim.instance.errors import BlockLeakError
from sim.instance.request import Request


def test_the_ledger_accounts_for_every_block_through_reserve_commit_cancel_and_clear():
    ledger = BlockLedger(10)
    resident, migrated = Request(0, 0.0, 16, 5), Request(1, 0.0, 16, 5)
    ledger.allocate(resident, 4)
    assert ledger.reserve("m", 3) and not ledger.reserve("n", 4)  # 3 free: refused (ABORT)
    assert ledger.free == 3
    ledger.commit("m", migrated)
    ledger.check([resident, migrated])
    with pytest.raises(BlockLeakError):
        ledger.check([resident])  # the migrated request's 3 blocks claimed by no one
    ledger.reserve("n", 2)
    assert ledger.cancel("n") == 2 and ledger.release(resident) == 4
    ledger.clear()
    assert ledger.free == 10 and ledger.reservations == {}


def test_a_decode_steps_growth_skips_stale_entries_and_keeps_the_grown_ones_in_order():
    ledger = BlockLedger(10)
    requests = [Request(i, 0.0, 16, 5) for i in range(4)]
    for request in requests:
        ledger.allocate(request, 1)
    stale = (requests[1], requests[1].epoch - 1)  # put on the calendar in an earlier epoch
    due = [(requests[3], requests[3].epoch), stale, (requests[0], requests[0].epoch)]
    ledger.allocate(requests[2], 1)  # requests[2] now holds 2 blocks: at a limit of 2
    due.append((requests[2], requests[2].epoch))
    assert ledger.grow_current(due, max_blocks=2) == [requests[2]]
    assert due == [(requests[3], requests[3].epoch), (requests[0], requests[0].epoch)]
    assert [ledger.held(r) for r in requests] == [2, 1, 2, 2] and ledger.allocated == 7
    ledger.check(requests)


def test_a_free_count_that_disagrees_with_the_free_list_is_a_leak():
    ledger = BlockLedger(6)
    request = Request(0, 0.0, 16, 5)
    ledger.allocate(request, 2)
    ledger.check([request])
    ledger.free += 1  # as a change of the free list that forgot its count would leave it
    with pytest.raises(BlockLeakError, match="free 5"):
        ledger.check([request])


def test_blocks_have_identity_a_commit_hands_over_the_reserved_blocks_and_freed_ones_come_back():
    ledger = BlockLedger(6)
    first, second = Request(0, 0.0, 16, 5), Request(1, 0.0, 16, 5)
    ledger.allocate(first, 2)
    due = [(first, first.epoch)]
    assert ledger.grow_current(due, max_blocks=3) is None and due == [(first, first.epoch)]
    assert ledger.grow_current(due, max_blocks=3) == [first] and due == []  # at its limit
    assert ledger.table(first) == (0, 1, 2) and ledger.held(first) == 3
    assert ledger.reserve("m", 2)
    reserved = ledger.reservations["m"]
    ledger.commit("m", second)
    assert ledger.table(second) == tuple(reserved) and not set(reserved) & set(ledger.table(first))
    freed = set(ledger.table(first))
    assert ledger.release(first) == 3 and ledger.held(first) == 0
    third = Request(2, 0.0, 16, 5)
    ledger.allocate(third, 3)  # the freed blocks are the ones handed out again
    assert set(ledger.table(third)) == freed and ledger.free == 1
    ledger.check([second, third])


def test_the_conservation_check_counts_references_so_a_block_in_two_tables_is_caught():
    ledger = BlockLedger(4)
    first, second = Request(0, 0.0, 16, 5), Request(1, 0.0, 16, 5)
    ledger.allocate(first, 1)
    ledger.allocate(second, 1)
    ledger.check([first, second])
    ledger._tables[second][0] = ledger._tables[first][0]  # one block in two tables: this ledger shares none
    with pytest.raises(BlockLeakError, match="references"):
        ledger.check([first, second])


OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["allocate", "grow", "release", "reserve", "cancel", "commit"]),
              st.integers(0, 3), st.integers(1, 5)),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(OPERATIONS)
def test_every_block_is_free_held_or_reserved_whatever_the_ledger_is_asked(operations):
    ledger = BlockLedger(12)
    requests = [Request(i, 0.0, 16, 5) for i in range(4)]
    for name, which, blocks in operations:
        request, key = requests[which], ("migration", which)
        if name == "allocate" and blocks <= ledger.free:
            ledger.allocate(request, blocks)
        elif name == "grow" and ledger.held(request) and ledger.free:
            ledger.grow_current([(request, request.epoch)], max_blocks=8)
        elif name == "release":
            ledger.release(request)
        elif name == "reserve":
            room = ledger.free
            assert ledger.reserve(key, blocks) == (blocks <= room)  # ACK, or ABORT with no room
        elif name == "cancel":
            ledger.cancel(key)
        elif name == "commit" and key in ledger.reservations:
            ledger.commit(key, request)
        ledger.check([r for r in requests if ledger.held(r)])
        assert ledger.free + ledger.allocated + ledger.reserved == ledger.capacity and ledger.free >= 0
