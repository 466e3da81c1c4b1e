"""Workloads whose requests share tokens: conversations (closed-loop turns whose prompts are
their history), system prompts, and the shipped Mooncake trace whose prefix structure the
caching ledger must reproduce."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sim.config import ConfigError, load_config
from sim.instance.prefix_cache import PrefixCachingLedger
from sim.instance.request import Request
from sim.workload.build import build_workload
from sim.workload.sessions import OPEN
from sim.workload.traces import TraceError, read_trace

SESSIONS = "traces/sharegpt/sharegpt_v3_sessions.csv"
MOONCAKE = "traces/mooncake/mooncake_conversation.csv"


def workload(**section):
    return build_workload(load_config(base={"name": "t", "workload": section}).workload, seed=3)


def test_a_turns_prompt_is_its_conversations_history_and_its_new_message():
    built = workload(source="sessions", trace=SESSIONS, num_requests=40, sessions={"think_time": 2.0})
    table = pd.read_csv(SESSIONS)
    sharing = built.sharing
    for index in np.flatnonzero(sharing.follows != OPEN)[:50]:
        before = sharing.follows[index]
        assert sharing.conversation[before] == sharing.conversation[index]
        assert sharing.turn[index] == sharing.turn[before] + 1
        new = built.prompt_tokens[index] - built.prompt_tokens[before] - built.output_tokens[before]
        assert new >= 1 and new in set(table["new_tokens"])
    assert (sharing.think[sharing.follows == OPEN] == 0).all() and sharing.think.mean() > 0
    assert len(np.unique(sharing.conversation)) == 40
    assert set(built.to_frame().columns) >= {"conversation", "turn"}


def test_a_system_prompt_lengthens_every_prompt_and_is_drawn_among_the_configured_ones():
    plain = workload(num_requests=200)
    prompted = workload(num_requests=200, system_prompt={"tokens": 300, "prompts": 4})
    assert (prompted.prompt_tokens == plain.prompt_tokens + 300).all()
    assert set(prompted.sharing.system) == {0, 1, 2, 3}
    contents = prompted.sharing.contents()
    same = [c for c, s in zip(contents, prompted.sharing.system) if s == 0]
    assert same[0].block_key(0, 16) == same[1].block_key(0, 16) and same[0].block_key(20, 16) != same[1].block_key(20, 16)


def test_a_conversations_trace_with_turns_out_of_order_is_refused(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("conversation,turn,new_tokens,output_tokens\n0,1,5,5\n0,3,5,5\n")
    with pytest.raises(TraceError, match="row 3, column 'turn': 3 where turn 2"):
        workload(source="sessions", trace=str(path), num_requests=1)


def test_conversations_cannot_be_reshaped():
    with pytest.raises(ConfigError, match="conversations cannot be reshaped"):
        workload(source="sessions", trace=SESSIONS, num_requests=5, shape={"preset": "sharegpt-gpt4"})


def test_a_prefix_trace_naming_a_later_request_is_refused(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("timestamp,input_length,output_length,prefix_of,shared_blocks\n0,600,5,1,1\n1,600,5,0,1\n")
    with pytest.raises(TraceError, match="column 'prefix_of': 1 is not -1 or the number of an earlier request"):
        read_trace(path)


def test_the_ledger_finds_exactly_the_prefixes_mooncakes_hash_ids_share():
    """Known answer: replayed through one ledger that never evicts, the first 2,000 requests
    of the shipped Mooncake trace find cached what their chained hash ids share with an
    earlier request — min(shared blocks x MOONCAKE_BLOCK_TOKENS, both prompts), in whole
    16-token blocks, and never the last token (vLLM's cap) — counted here from the CSV alone."""
    table = read_trace(MOONCAKE).head(2000)
    built = workload(source="timestamped", trace=MOONCAKE, num_requests=2000, arrival={"process": "trace", "rate": None})
    contents = built.sharing.contents()
    ledger = PrefixCachingLedger(capacity=3_000_000, block_size=16)
    found = 0
    for index, content in enumerate(contents):
        request = Request(index, 0.0, int(built.prompt_tokens[index]), 1, content=content)
        found += ledger.allocate(request, -(-request.prompt_tokens // 16))
        ledger.release(request)
    expected = np.minimum(table["shared_tokens"], table["prompt_tokens"] - 1) // 16 * 16
    assert found == int(expected.sum()) > 0


def test_a_prefix_trace_out_of_time_order_is_refused(tmp_path):
    path = tmp_path / "unsorted.csv"
    path.write_text("timestamp,input_length,output_length,prefix_of,shared_blocks\n5,600,5,-1,0\n1,600,5,0,1\n")
    with pytest.raises(TraceError, match="row 3, column 'timestamp': 1 s is earlier than a row above it"):
        read_trace(path)


def test_a_system_prompt_cannot_be_put_before_the_artifact_clients_requests():
    with pytest.raises(ConfigError, match="system_prompt: client 'artifact' replays"):
        load_config(base={"name": "t", "workload": {
            "source": "synthetic", "client": "artifact", "num_requests": 10, "system_prompt": {"tokens": 300}}})
