"""Requests that share tokens: multi-turn conversations and shared system prompts.

A conversations trace (``traces/sharegpt/sharegpt_v3_sessions.csv``) has one row per turn:
``conversation,turn,new_tokens,output_tokens``. Turn n's prompt is the conversation so far —
every earlier message and answer — plus its new message (and the system prompt, if any), so
a prefix cache that kept turn n − 1's blocks computes only what is new. The loop is closed:
a conversation's first turn arrives by the arrival process, each later turn a think time
(exponential, mean ``sessions.think_time``) after the previous turn ended. What the engine
needs to run that is ``Sharing``: who follows whom, after how long, and which token streams
(``sim.instance.content``) each request's tokens belong to. A trace with prefix structure
(Mooncake's, ``traces/mooncake``) gives each request the earlier one it shares a prefix with.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from sim.config import SessionsConfig, SystemPromptConfig
from sim.instance.content import Content
from sim.workload.traces import TraceError, _nonempty, _read_csv, _require_columns, _tokens

SESSION_COLUMNS = ("conversation", "turn", "new_tokens", "output_tokens")
OPEN = -1  # a request that arrives at its own arrival time, following no other


@dataclass(frozen=True)
class Sharing:
    """Per request (index i): its conversation and turn, the request whose end it waits for
    and the think time after it, and its system prompt. Read-only arrays."""

    conversation: np.ndarray  # int64: which conversation of the run (-1: none)
    turn: np.ndarray  # int64: 1-based turn in it (0: not a conversation's)
    follows: np.ndarray  # int64: the request it follows (OPEN: arrives at its arrival)
    think: np.ndarray  # float64: seconds after that request's end
    system: np.ndarray  # int64: which system prompt it begins with (-1: none)
    system_tokens: int
    # a trace with prefix structure (Mooncake's): the earlier request whose first
    # ``shared[i]`` tokens request i repeats (-1: none); None: no such trace
    prefix_of: Optional[np.ndarray] = None
    shared: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        for name, dtype in (
            ("conversation", np.int64), ("turn", np.int64), ("follows", np.int64),
            ("think", np.float64), ("system", np.int64), ("prefix_of", np.int64), ("shared", np.int64),
        ):
            if getattr(self, name) is None:
                continue
            array = np.array(getattr(self, name), dtype=dtype)
            array.setflags(write=False)
            object.__setattr__(self, name, array)

    @classmethod
    def prefixes(cls, prefix_of: np.ndarray, shared: np.ndarray) -> Sharing:
        """Open requests of a trace with prefix structure (no conversations, no system prompt)."""
        n = len(prefix_of)
        return cls(np.full(n, -1), np.zeros(n), np.full(n, OPEN), np.zeros(n), np.full(n, -1), 0, prefix_of, shared)

    @classmethod
    def chained(cls, n: int, concurrency: int) -> Sharing:
        """``n`` requests sharing nothing, at most ``concurrency`` in flight: request i is sent
        the moment request i − concurrency ends (a client holding that many connections, as
        ``--max-concurrency`` does, when requests end in the order they were sent)."""
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        follows = np.array([OPEN if i < concurrency else i - concurrency for i in range(n)])
        return cls(np.full(n, -1), np.zeros(n), follows, np.zeros(n), np.full(n, -1), 0)

    @property
    def opening(self) -> np.ndarray:
        """Indices of the requests that arrive by the arrival process, in order."""
        return np.flatnonzero(self.follows == OPEN)

    def next_turns(self) -> dict[int, int]:
        """Request index -> the index of the turn that follows it."""
        followers = np.flatnonzero(self.follows != OPEN)
        return dict(zip(self.follows[followers].tolist(), followers.tolist()))

    def contents(self) -> list[Optional[Content]]:
        """Each request's token stream: its conversation's (all turns one stream), or its
        own forked from its system prompt, or None (it shares nothing)."""
        systems: dict[int, Content] = {}
        conversations: dict[int, Content] = {}
        shared = self.system_tokens

        def system(index: int) -> Optional[Content]:
            prompt = int(self.system[index])
            if prompt < 0 or not shared:
                return None
            if prompt not in systems:
                systems[prompt] = Content(("system", prompt))
            return systems[prompt]

        out: list[Optional[Content]] = []
        if self.prefix_of is not None and self.shared is not None:
            for index, (before, tokens) in enumerate(zip(self.prefix_of.tolist(), self.shared.tolist())):
                out.append(Content(("request", index), out[before], tokens) if before >= 0 else Content(("request", index)))
            return out
        for index, conversation in enumerate(self.conversation.tolist()):
            parent = system(index)
            if conversation >= 0:
                if conversation not in conversations:
                    conversations[conversation] = Content(
                        ("conversation", conversation), parent, shared if parent is not None else 0
                    )
                out.append(conversations[conversation])
            elif parent is not None:
                out.append(Content(("request", index), parent, shared))
            else:
                out.append(None)
        return out


def read_sessions(path: Path) -> pd.DataFrame:
    """A conversations trace, checked: whole token counts, turns 1, 2, ... in order within each
    conversation, a conversation's rows together."""
    frame = _read_csv(path)
    _require_columns(frame, path, SESSION_COLUMNS)
    table = pd.DataFrame(
        {
            "conversation": _tokens(frame, path, "conversation", 0),
            "turn": _tokens(frame, path, "turn", 1),
            "new_tokens": _tokens(frame, path, "new_tokens", 1),
            "output_tokens": _tokens(frame, path, "output_tokens", 1),
        }
    )
    starts = table["conversation"].ne(table["conversation"].shift())
    expected = table.groupby(starts.cumsum()).cumcount() + 1
    bad = table["turn"].ne(expected)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise TraceError(
            f"{path}: row {frame.index[row]}, column 'turn': {table['turn'].iloc[row]} where turn "
            f"{expected.iloc[row]} of conversation {table['conversation'].iloc[row]} was due (turns "
            "run 1, 2, ... and a conversation's rows are together)"
        )
    if starts.sum() != table["conversation"].nunique():
        raise TraceError(f"{path}: a conversation's rows are split apart (each conversation's turns must be together)")
    return _nonempty(table.reset_index(drop=True), path)


def conversations(
    table: pd.DataFrame, count: int, rng: np.random.Generator, sessions: SessionsConfig
) -> list[pd.DataFrame]:
    """``count`` conversations drawn from the trace (without replacement while they last),
    each cut to ``sessions.max_turns``."""
    groups = [group for _, group in table.groupby("conversation", sort=False)]
    chosen = rng.choice(len(groups), size=count, replace=count > len(groups))
    cut = sessions.max_turns
    return [groups[i] if cut is None else groups[i].head(cut) for i in chosen]


def turns(
    chosen: list[pd.DataFrame],
    starts: np.ndarray,
    conversation_tiers: np.ndarray,
    think_rng: np.random.Generator,
    sessions: SessionsConfig,
    system_tokens: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Sharing]:
    """The requests of the drawn conversations, a conversation's turns together in order:
    arrival (a later turn's is its conversation's start: its real one depends on the run),
    prompt (system prompt + history + new message), output, tier, and their ``Sharing``
    (system prompts filled in by ``with_system_prompts``)."""
    arrival, prompt, output, tier, conversation, turn, follows = [], [], [], [], [], [], []
    for number, (group, start) in enumerate(zip(chosen, starts.tolist())):
        history = system_tokens
        for position, (new, answer) in enumerate(zip(group["new_tokens"].tolist(), group["output_tokens"].tolist())):
            follows.append(OPEN if position == 0 else len(prompt) - 1)
            arrival.append(start)
            prompt.append(history + new)
            output.append(answer)
            tier.append(int(conversation_tiers[number]))
            conversation.append(number)
            turn.append(position + 1)
            history += new + answer
    n = len(prompt)
    think = think_rng.exponential(sessions.think_time, size=n) if sessions.think_time else np.zeros(n)
    think[np.asarray(follows) == OPEN] = 0.0
    sharing = Sharing(
        np.array(conversation), np.array(turn), np.array(follows), think, np.full(n, -1), system_tokens
    )
    return np.array(arrival), np.array(prompt), np.array(output), np.array(tier), sharing


def with_system_prompts(
    sharing: Optional[Sharing], n: int, rng: np.random.Generator, config: SystemPromptConfig, per: Optional[np.ndarray] = None
) -> Sharing:
    """``sharing`` (or none: ``n`` open requests) with a system prompt drawn for each request —
    or, given ``per`` (each request's conversation), for each conversation."""
    if sharing is None:
        sharing = Sharing(np.full(n, -1), np.zeros(n), np.full(n, OPEN), np.zeros(n), np.full(n, -1), config.tokens)
    groups = per if per is not None else np.arange(n)
    drawn = rng.integers(0, config.prompts, size=int(groups.max()) + 1 if n else 0)
    return Sharing(
        sharing.conversation, sharing.turn, sharing.follows, sharing.think, drawn[groups], config.tokens
    )
