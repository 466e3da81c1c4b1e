"""The Llumnix artifact's detokenizer on this host: the CPU time of one engine step's output
decoding, vLLM 0.1.2 as the artifact ran it, at a batch of sequences each holding some output
tokens, on the fast and the slow LLaMA tokenizer of transformers 4.31.0.

What runs. The artifact (AlibabaPAI/llumnix, osdi24ae at 92f6f9d) decodes every running
sequence after every step: ``vllm/engine/llm_engine.py`` lines 475-487 (``_decode_sequences``)
call ``detokenize_incrementally`` (``vllm/transformers_utils/tokenizer.py`` lines 70-119) with
the sequence's output tokens so far and the step's new token id; lines 84-95 check the id
against the special ids, turn it into a token and convert the whole output, old tokens and
new, back into text. ``detokenize_incrementally`` below is lines 84-95 as written (the
standards allow running the artifact's code as written for a measurement); lines 97-118 run
only for a tokenizer with added tokens, which neither LLaMA tokenizer has (checked). The step
loop is lines 477-484; the two assignments after the call (485-487) are left out, so that a
repeat finds the outputs as they were.

Which tokenizer. ``get_tokenizer`` (tokenizer.py lines 14-67) loads ``AutoTokenizer`` with
``use_fast`` left True unless ``--tokenizer-mode slow``; the artifact's launch scripts
(``artifact/*/llumnix_exp``: ``python -m vllm.entrypoints.api_server --model .../llama-7b/``)
pass no tokenizer mode and ``EngineArgs.tokenizer_mode`` defaults to ``'auto'``
(``vllm/engine/arg_utils.py`` line 15), so the artifact ran the fast tokenizer
(``LlamaTokenizerFast``, converted from ``tokenizer.model``). The slow one is measured beside it.

The tokenizer model. No hub: LLaMA's 32,000-piece SentencePiece vocabulary as llama.cpp ships
it for its tokenizer tests, ``models/ggml-vocab-llama-spm.gguf`` (converted from
meta-llama/Llama-2-7b-hf, whose tokenizer is LLaMA-1's), inside the pinned llama-cpp-python
0.3.16 sdist. Its pieces, scores and piece types are written into a SentencePiece model with
LLaMA's settings (BPE, byte fallback, digits split, identity normaliser, a dummy prefix), and
the result must encode the 47 test texts shipped beside it (``.inp``) to the token ids
recorded there from Hugging Face's LLaMA tokenizer (``.out``), by sentencepiece and by both
transformers tokenizers, or the benchmark stops.

The text. English documentation with code: the interpreter's own ``pydoc_data.topics``
(every topic, sorted by name), encoded once; sequence i of a batch holds a different window.

Figures. Per (path, batch, held tokens): the shortest step over repeats (at least 3 and 0.06
s of them in each of 5 passes over the grid), in the CPU time of the thread that runs it
(``time.thread_time``): this host is shared, and the time another process holds the core is
not the detokenizer's. Caches are warm from the repeat before; the artifact's steps run
between other work, so its cost is if anything higher.
"Held tokens" is what a sequence holds once the step's token is out: the step converts that
many tokens per sequence. The grid is batch {1, 16, 64, 256} x held {1, 128, 512, 2048}
(held 1: the per-sequence part alone); the growth with output length is held 1-2,048 at
batch 16. Runs in about two minutes on one core here (1 min 47 s, 2026-12-07).

The host: this machine's CPU (printed). The artifact's host CPU is not published, so there is
no transfer: the figures are this CPU's.

Environment (its own; the simulator's is not touched):
    python3.11 -m venv VENV && VENV/bin/pip install -r benchmarks/detokenizer-requirements.txt
    VENV/bin/python benchmarks/detokenizer.py [--cache DIR] [--csv sim/hardware/data/detokenizer_llama_transformers431.csv]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import json
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "traces"))
from pypi_files import fetch  # noqa: E402  (the traces' pinned-download helper)

LLAMA_CPP_SDIST = (
    "https://files.pythonhosted.org/packages/e4/b4/c8cd17629ced0b9644a71d399a91145aedef109c0333443"
    "bef015e45b704/llama_cpp_python-0.3.16.tar.gz",
    "34ed0f9bd9431af045bb63d9324ae620ad0536653740e9bb163a2e1fcb973be6",
)
VOCAB_MEMBER = "llama_cpp_python-0.3.16/vendor/llama.cpp/models/ggml-vocab-llama-spm.gguf"
TEST_SEPARATOR = "\n__ggml_vocab_test__\n"  # between the texts of the .inp file
BATCHES = (1, 16, 64, 256)
HELD = (1, 128, 512, 2048)
GROWTH_BATCH = 16
GROWTH_HELD = tuple(2**k for k in range(12))  # 1 .. 2,048
PATHS = ("fast", "slow")
PASSES = 5  # over the whole grid, so that a burst of the other tenants' load spoils one pass of a point
MIN_REPEATS, MIN_SECONDS, MAX_REPEATS = 3, 0.06, 600  # a point's repeats in one pass
PACKAGES = ("transformers", "tokenizers", "sentencepiece", "protobuf", "gguf")


def llama_tokenizer_dir(cache: Path, directory: Path) -> Path:
    """A tokenizer folder (``tokenizer.model``, ``tokenizer_config.json``) as a LLaMA-7B
    checkpoint holds one, built from the pinned sdist's vocabulary and checked against its
    recorded encodings."""
    import gguf
    from sentencepiece import SentencePieceProcessor
    from sentencepiece import sentencepiece_model_pb2 as pb

    with tarfile.open(fetch(*LLAMA_CPP_SDIST, cache)) as sdist:
        members = {
            suffix: sdist.extractfile(VOCAB_MEMBER + suffix).read() for suffix in ("", ".inp", ".out")
        }
    vocab = directory / "ggml-vocab-llama-spm.gguf"
    vocab.write_bytes(members[""])
    fields = gguf.GGUFReader(vocab).fields
    proto = pb.ModelProto()
    pieces = zip(*(fields[f"tokenizer.ggml.{key}"].contents() for key in ("tokens", "scores", "token_type")))
    for piece, score, kind in pieces:  # llama.cpp's token types are SentencePiece's piece types
        proto.pieces.add(piece=piece, score=score, type=kind)
    trainer = proto.trainer_spec
    trainer.model_type = pb.TrainerSpec.BPE
    trainer.vocab_size = len(proto.pieces)
    trainer.byte_fallback = trainer.split_digits = True
    trainer.unk_id, trainer.bos_id, trainer.eos_id, trainer.pad_id = 0, 1, 2, -1
    normalizer = proto.normalizer_spec
    normalizer.name, normalizer.add_dummy_prefix, normalizer.remove_extra_whitespaces = "identity", True, False
    model = directory / "tokenizer.model"
    model.write_bytes(proto.SerializeToString())
    (directory / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LlamaTokenizer"}))

    texts = members[".inp"].decode("utf-8").split(TEST_SEPARATOR)
    expected = [[int(i) for i in line.split()] for line in members[".out"].decode().split("\n")]
    encoders = {"sentencepiece": SentencePieceProcessor(model_file=str(model)).encode}
    for path in PATHS:
        encoders[path] = lambda text, tok=load(directory, path): tok.encode(text, add_special_tokens=False)
    for name, encode in encoders.items():
        wrong = sum(encode(text) != ids for text, ids in zip(texts, expected, strict=True))
        if wrong:
            raise SystemExit(f"{name}: {wrong} of {len(texts)} llama.cpp test texts encode differently")
    print(f"tokenizer: {len(proto.pieces)} pieces; {len(texts)} recorded encodings reproduced by {', '.join(encoders)}")
    return directory


def load(directory: Path, path: str):
    """The artifact's ``get_tokenizer`` (tokenizer.py lines 22-39): ``AutoTokenizer`` with
    ``use_fast`` unless the slow mode is asked for."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(directory), use_fast=path == "fast")
    expected = "LlamaTokenizerFast" if path == "fast" else "LlamaTokenizer"
    if type(tokenizer).__name__ != expected:
        raise SystemExit(f"{path} path loaded {type(tokenizer).__name__}, not {expected}")
    if getattr(tokenizer, "added_tokens_encoder", {}):
        raise SystemExit(f"{path} tokenizer has added tokens: tokenizer.py lines 97-118 would run")
    return tokenizer


# -- the artifact's code: vllm/transformers_utils/tokenizer.py lines 84-95 (osdi24ae, 92f6f9d) --
def detokenize_incrementally(tokenizer, prev_output_tokens, new_token_id, skip_special_tokens):
    if skip_special_tokens and (new_token_id in tokenizer.all_special_ids):
        return None, prev_output_tokens
    new_token = tokenizer.convert_ids_to_tokens(
        new_token_id, skip_special_tokens=skip_special_tokens)
    output_tokens = prev_output_tokens + [new_token]

    # Convert the tokens to a string.
    # Optimization: If the tokenizer does not have `added_tokens_encoder`,
    # then we can directly use `convert_tokens_to_string`.
    if not getattr(tokenizer, "added_tokens_encoder", {}):
        output_text = tokenizer.convert_tokens_to_string(output_tokens)
        return new_token, output_text
    raise AssertionError("lines 97-118: not measured (checked in load)")
# -- end of the artifact's code --


def output_ids(tokenizer) -> list[int]:
    """The text every sequence's output is cut from, as token ids."""
    import pydoc_data.topics

    text = "\n".join(pydoc_data.topics.topics[name] for name in sorted(pydoc_data.topics.topics))
    return tokenizer.encode(text, add_special_tokens=False)


def step_seconds(tokenizer, ids: list[int], batch: int, held: int) -> list[float]:
    """CPU times of ``_decode_sequences`` over a batch whose sequences hold ``held`` output
    tokens after this step, one per repeat."""
    stride = (len(ids) - held) // batch
    sequences = []
    for i in range(batch):
        window = ids[i * stride : i * stride + held]
        sequences.append((tokenizer.convert_ids_to_tokens(window[:-1]), window[-1]))
    times: list[float] = []
    while len(times) < MAX_REPEATS and (len(times) < MIN_REPEATS or sum(times) < MIN_SECONDS):
        start = time.thread_time()
        for output_tokens, last_token_id in sequences:  # llm_engine.py lines 477-484
            detokenize_incrementally(tokenizer, output_tokens, last_token_id, skip_special_tokens=True)
        times.append(time.thread_time() - start)
    return times


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown"
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    keys = ("Vendor ID", "Model name", "CPU family", "Model", "Stepping")
    return "; ".join(f"{key} {fields[key].strip()}" for key in keys if key in fields)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, help="keep the downloaded sdist here")
    parser.add_argument("--csv", type=Path, help="also write the rows here, with their provenance")
    args = parser.parse_args()
    command = "python " + " ".join(["benchmarks/detokenizer.py", *sys.argv[1:]])
    versions = "; ".join(f"{name} {metadata.version(name)}" for name in PACKAGES)
    versions += f"; Python {platform.python_version()}"
    load_before = os.getloadavg()[0]
    provenance = {
        "cpu": cpu_model(),
        "versions": versions,
        "date": datetime.date.today().isoformat(),
        "command": command,
    }
    print(f"cpu: {provenance['cpu']}\nversions: {versions}")
    with tempfile.TemporaryDirectory() as scratch:
        cache = args.cache or Path(scratch)
        cache.mkdir(parents=True, exist_ok=True)
        folder = Path(scratch) / "llama-7b-tokenizer"
        folder.mkdir()
        directory = llama_tokenizer_dir(cache, folder)
        tokenizers = {path: load(directory, path) for path in PATHS}
        texts = {path: output_ids(tokenizer) for path, tokenizer in tokenizers.items()}
        points = sorted({(b, h) for b in BATCHES for h in HELD} | {(GROWTH_BATCH, h) for h in GROWTH_HELD})
        times: dict[tuple[str, int, int], list[float]] = {}
        for _ in range(PASSES):
            for path, tokenizer in tokenizers.items():
                for batch, held in points:
                    steps = step_seconds(tokenizer, texts[path], batch, held)
                    times.setdefault((path, batch, held), []).extend(steps)
    # the host's 1-minute load average, this run included: the other tenants' share of the cores
    provenance["load"] = f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} CPUs"
    print(f"\nload average: {provenance['load']}")
    rows = []
    for path, tokenizer in tokenizers.items():
        print(f"\n{path} path ({type(tokenizer).__name__}), {len(texts[path]):,} tokens of text")
        print(f"{'batch':>5} {'held':>5} {'step ms':>9} {'µs/seq':>8} {'µs/held token':>14} {'repeats':>7}")
        for batch, held in points:
            repeats = times[path, batch, held]
            ms = min(repeats) * 1e3
            rows.append({"path": path, "batch": batch, "held_tokens": held, "step_ms": f"{ms:.5g}", "repeats": len(repeats)})
            print(
                f"{batch:>5} {held:>5} {ms:>9.3f} {1e3 * ms / batch:>8.2f} "
                f"{1e3 * ms / (batch * held):>14.4f} {len(repeats):>7}"
            )
    if args.csv:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=[*rows[0], *provenance])
            writer.writeheader()
            writer.writerows({**row, **provenance} for row in rows)
        print(f"\nwrote {args.csv}")
    print(f"\ncommand: {command}")


if __name__ == "__main__":
    main()
