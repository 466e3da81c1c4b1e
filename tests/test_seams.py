"""The seams a new serving engine or PD scheme goes in through, proved by parts defined here
and nowhere in ``sim/``: a hand-off rule of one's own run on a disaggregated cluster, and
batch formers of one's own run as a pool's prefill role and as its decode role, learning the
role from the former's interface (``sim.instance.former_io.Role``)."""

from __future__ import annotations

import pytest

from sim.cluster.handoff import HANDOFF_RULES, Handoff, HandoffRule
from sim.engine import Simulation
from sim.engine.migrations import MIGRATIONS
from sim.instance.batching import BatchFormer
from sim.instance.parts import BATCH_FORMERS
from tests.doubles import ConstantTimer, make_config, make_transfer, make_workload


class HighestDecode(HandoffRule):
    """A toy hand-off rule: every held request to the highest-numbered decode instance, at
    its first token and at every tick while it waits."""

    decides_at_first_token = True

    def at_first_token(self, view, request, room):
        return [Handoff(request.id, max(self.decode_instances(view)))]

    def place(self, view, movable, busy):
        return [Handoff(request.id, max(self.decode_instances(view))) for request in movable]


class RecordingFormer(BatchFormer):
    """vLLM's former, recording whether each iteration it forms is a prefill."""

    expected_role = "mixed"

    def __init__(self, *args) -> None:
        super().__init__(*args)
        if self.role.name != self.expected_role:
            raise AssertionError(f"a {self.expected_role} former built for a {self.role.name} pool")
        self.prefills: list[bool] = []

    def next_batch(self):
        batch = super().next_batch()
        if batch is not None:
            self.prefills.append(batch.is_prefill)
        return batch


class PrefillFormer(RecordingFormer):
    expected_role = "prefill"


class DecodeFormer(RecordingFormer):
    expected_role = "decode"


@pytest.fixture
def toy_parts():
    HANDOFF_RULES.register("highest-decode")(HighestDecode)
    BATCH_FORMERS.register("toy-prefill")(PrefillFormer)
    BATCH_FORMERS.register("toy-decode")(DecodeFormer)
    yield
    HANDOFF_RULES.unregister("highest-decode")
    BATCH_FORMERS.unregister("toy-prefill")
    BATCH_FORMERS.unregister("toy-decode")


def disaggregated(prefill, decode, pd, prefill_former="vllm", decode_former="vllm"):
    return make_config(
        pools=[
            {"name": "p", "instances": prefill, "role": "prefill", "batch_former": prefill_former},
            {"name": "d", "instances": decode, "role": "decode", "batch_former": decode_former},
        ],
        pd=pd,
        scheduler={"name": "infaas++"},
        migration={"colocated_slowdown": 0.0},
    )


def run(config, requests):
    workload = make_workload([0.05 * i for i in range(requests)], [64] * requests, [5] * requests)
    simulation = Simulation(config, ConstantTimer(0.1, 0.01, 10_000), workload, transfer=make_transfer(), check_every_step=True)
    return simulation, simulation.run()


def test_a_hand_off_rule_of_ones_own_decides_where_every_held_request_goes(toy_parts):
    _, result = run(disaggregated(1, 3, {"pairing": "highest-decode"}), 6)
    assert all(request.state == "finished" for request in result.requests)
    handoffs = [record for record in MIGRATIONS.of(result) if record.kind == "handoff"]
    assert len(handoffs) == 6 and {record.destination for record in handoffs} == {3}
    # the same cluster under the shipped rule spreads them (INFaaS++'s freeness)
    _, shipped = run(disaggregated(1, 3, {"pairing": "immediate"}), 6)
    assert len({record.destination for record in MIGRATIONS.of(shipped)}) > 1


def test_batch_formers_of_ones_own_run_as_the_prefill_role_and_as_the_decode_role(toy_parts):
    config = disaggregated(2, 2, {"pairing": "immediate", "copy": "blocking"}, "toy-prefill", "toy-decode")
    simulation, result = run(config, 8)
    assert all(request.state == "finished" for request in result.requests) and result.leaked_blocks == 0
    formers = [simulation.llumlet(i).batches for i in range(4)]
    assert [type(former) for former in formers] == [PrefillFormer, PrefillFormer, DecodeFormer, DecodeFormer]
    # a blocking hand-off holds every prefilled request: prefill instances only prefill, and
    # decode instances only decode what was handed to them
    assert all(formers[0].prefills + formers[1].prefills) and formers[0].prefills
    assert not any(formers[2].prefills + formers[3].prefills) and formers[2].prefills + formers[3].prefills
    assert len([record for record in MIGRATIONS.of(result) if record.kind == "handoff"]) == 8


def test_a_former_built_for_another_role_is_refused(toy_parts):
    # the role reaches the former through its constructor: a decode former in a prefill pool knows
    with pytest.raises(AssertionError, match="a decode former built for a prefill pool"):
        run(disaggregated(1, 1, {"pairing": "immediate"}, "toy-decode", "toy-decode"), 1)
