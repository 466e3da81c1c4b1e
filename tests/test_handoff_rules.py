"""Prefill/decode disaggregation's rules (``sim.cluster.handoff``) on hand-built views, without a
simulation: where a held request goes under each pairing, when it decodes where it is, which
instances take new requests, and adaptive PD's moves — each answer worked out by hand."""

from __future__ import annotations

from sim.cluster.handoff import AdaptivePd, Handoff, HeldRequest, Immediate, LlumnixPairing, Move
from sim.cluster.view import ClusterView
from sim.config.schema import PdConfig
from tests.reports import make_report

BLOCK = 16


def report(instance_id, free, running=0, preempted=0, capacity=100):
    """An instance of ``capacity`` blocks with ``free`` free, ``running`` requests and
    ``preempted`` queued again."""
    return make_report(
        instance_id=instance_id,
        capacity_blocks=capacity,
        used_blocks=capacity - free,
        num_running=running,
        num_preempted=preempted,
    )


def view(roles, reports=()):
    """Instances 0.. with ``roles`` (p, d, m), all taking dispatches, and ``reports``."""
    names = {"p": "prefill", "d": "decode", "m": "mixed"}
    cluster = ClusterView()
    for instance_id, role in enumerate(roles):
        cluster.add(instance_id, pool=names[role], role=names[role])
    for r in reports:
        cluster.reports[r.instance_id] = r
    return cluster


class Chooser:
    """A dispatch rule stand-in: the last instance offered, and what it was offered."""

    def __init__(self):
        self.offered = []

    def __call__(self, request, among):
        self.offered.append((request.demand_blocks, list(among)))
        return among[-1]


def held(request_id, instance, blocks, tokens=None, moving=False):
    return HeldRequest(request_id, instance, 0, tokens or blocks * BLOCK, blocks, moving)


def test_immediate_offers_the_dispatch_rule_only_decode_instances_with_room_for_the_blocks():
    chooser = Chooser()
    rule = Immediate(PdConfig(pairing="immediate"), chooser, BLOCK)
    # decode 1 has 3 free blocks, decode 2 has 20, decode 3 has not reported (room assumed)
    cluster = view("pddd", [report(1, 3), report(2, 20)])
    assert rule.at_first_token(cluster, held(7, 0, 4, tokens=60), room=99) == [Handoff(7, 3)]
    assert chooser.offered == [(4, [2, 3])]  # 60 tokens: 4 blocks of demand


def test_immediate_leaves_a_request_held_while_no_decode_instance_has_room():
    rule = Immediate(PdConfig(pairing="immediate"), Chooser(), BLOCK)
    cluster = view("pd", [report(1, 2)])
    assert rule.at_first_token(cluster, held(7, 0, 4), room=99) == []  # waits for a later tick


def test_a_request_no_decode_instance_could_ever_hold_decodes_where_it_is():
    rule = Immediate(PdConfig(pairing="immediate"), Chooser(), BLOCK)
    cluster = view("pd", [report(1, 90)])
    # room 50: the largest empty decode instance could never take its 60 blocks
    assert rule.on_tick(cluster, [held(7, 0, 60)], busy=set(), room=50) == [Handoff(7, None)]
    # a request moving already is left to its migration
    assert rule.on_tick(cluster, [held(8, 0, 4, moving=True)], busy=set(), room=50) == []


def test_llumnix_pairs_the_fewest_remaining_steps_with_the_most_one_hand_off_per_instance():
    rule = LlumnixPairing(PdConfig(pairing="llumnix"), Chooser(), BLOCK)
    cluster = view(
        "ppddd",
        [
            report(0, 20, running=4),  # 5 remaining steps
            report(1, 10, running=5),  # 2: the most loaded source goes first
            report(2, 40, running=2),  # 20 steps
            report(3, 90, running=1, preempted=1),  # 90 steps, but a preempted request: no destination
            report(4, 60, running=1),  # 60 steps: the freest destination
        ],
    )
    waiting = [held(10, 0, 2), held(11, 0, 2), held(12, 1, 2)]  # 10 before 11 on instance 0
    assert rule.on_tick(cluster, waiting, busy=set(), room=99) == [Handoff(12, 4), Handoff(10, 2)]
    # instance 4 busy with a hand-off already: source 1 pairs with 2, and 0 gets none
    assert rule.on_tick(cluster, waiting, busy={4}, room=99) == [Handoff(12, 2)]


def test_llumnix_with_no_destination_keeps_requests_held_and_adaptive_pd_decodes_them_in_place():
    cluster = view("pd", [report(0, 20, running=1), report(1, 50, running=1, preempted=1)])
    waiting = [held(10, 0, 2)]
    plain = LlumnixPairing(PdConfig(pairing="llumnix"), Chooser(), BLOCK)
    assert plain.on_tick(cluster, waiting, busy=set(), room=99) == []
    adaptive = LlumnixPairing(PdConfig(pairing="llumnix", adaptive=True), Chooser(), BLOCK)
    assert adaptive.on_tick(cluster, waiting, busy=set(), room=99) == [Handoff(10, None)]


def test_new_requests_go_to_prefill_and_mixed_instances_and_adaptive_pd_relieves_them():
    plain = Immediate(PdConfig(), Chooser(), BLOCK)
    adaptive = Immediate(PdConfig(adaptive=True), Chooser(), BLOCK)
    # prefill 0's KV load is full (100 of 100 blocks used), mixed 2's too; decode 1 and 3 are not
    full = view("pdmd", [report(0, 0), report(1, 50), report(2, 0), report(3, 100)])
    assert plain.entry(full) == ([0, 2], False)
    assert adaptive.entry(full) == ([1, 3], True)
    # one taker with room: no relief
    eased = view("pdmd", [report(0, 10), report(1, 50), report(2, 0)])
    assert adaptive.entry(eased) == ([0, 2], False)
    # no prefill or mixed instance left: every instance takes them
    assert plain.entry(view("dd")) == ([0, 1], False)
    assert plain.balancing(full) == [1, 2, 3]


def test_adaptive_pd_packs_decoding_prefill_instances_and_eases_busy_decode_instances():
    moves = AdaptivePd().moves
    # decode 4 has 5 remaining steps (busy), decode 5 has 8: none has steps to spare.
    # prefill 0..3 decode 2, 0, 3, 1 requests: 0, 2 and 3 are decoding (1 runs nothing)
    cluster = view(
        "ppppdd",
        [
            report(0, 50, running=2),
            report(1, 50, running=0),
            report(2, 50, running=3),
            report(3, 50, running=1),
            report(4, 10, running=2),
            report(5, 16, running=2),
        ],
    )
    # packing: the lowest half of the decoding ones to the highest (0 -> 3); easing: the
    # busiest decode instance first (4, then 5) to prefill instances running nothing (1)
    assert moves(cluster, busy=set()) == [Move(0, 3, "aggregated_on_prefill"), Move(4, 1, "eased_to_prefill")]
    # an instance with a move in flight takes part in none
    assert moves(cluster, busy={1, 3}) == [Move(0, 2, "aggregated_on_prefill")]
    # a decode instance with steps to spare: no packing, and it sheds nothing
    cluster.reports[5] = report(5, 90, running=2)
    assert moves(cluster, busy=set()) == [Move(4, 1, "eased_to_prefill")]


def test_adaptive_pd_offers_hand_offs_only_to_decode_instances_with_steps_to_spare():
    chooser = Chooser()
    rule = Immediate(PdConfig(adaptive=True), chooser, BLOCK)
    cluster = view("pdd", [report(1, 12, running=2), report(2, 80, running=2)])  # 6 and 40 steps
    assert rule.decode_instances(cluster) == [2]
    assert rule.at_first_token(cluster, held(7, 0, 4), room=99) == [Handoff(7, 2)]
    cluster.reports[2] = report(2, 12, running=2)  # both busy: it decodes on its prefill instance
    assert rule.at_first_token(cluster, held(7, 0, 4), room=99) == [Handoff(7, None)]
    assert AdaptivePd().spare(view("pd"), [1]) == [1]  # not reported yet: not busy
