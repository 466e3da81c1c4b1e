"""Build traces/mooncake/mooncake_conversation.csv: Mooncake's FAST'25 conversation trace.

Input: ``FAST25-release/traces/conversation_trace.jsonl`` of the Mooncake repository
(kvcache-ai/Mooncake, Apache-2.0), pinned by commit and SHA-256 below. One JSON object a line:
``timestamp`` (ms from the start), ``input_length``, ``output_length`` (tokens) and
``hash_ids``, "remapped prefix block hashes" of the prompt's 512-token blocks: a block's id
hashes that block *and all blocks before it*, so equal ids mean equal whole prefixes.

Output: one row per request, in file order,
``timestamp,input_length,output_length,prefix_of,shared_blocks``:
timestamp in seconds (the file's ms / 1000, exact: at most 3 decimals); for request r
(0-based row), shared_blocks = k = the longest common prefix, in blocks, of r's hash_ids with
those of any earlier request, and prefix_of = the latest earlier request that shares those k
blocks; k = 0 and prefix_of = -1 when no earlier request has r's first block.

Why this loses nothing about prefix sharing (checked, not assumed, over the whole file):

1. *Chaining*: every id has one predecessor in the whole file (the id before it, or none at
   position 0), so by induction an id fixes its whole prefix of ids. Checked.
2. *Only the first k ids of r were seen before r*: if an id of r at position j >= k had
   appeared in an earlier request p, then by (1) p would hold r's first j + 1 ids and share
   j + 1 > k blocks with r, contradicting k's maximality. Checked: each of r's ids after the
   first k is new at r.
3. Hence r's hash_ids = the first k ids of request prefix_of, then len(hash_ids) - k new ids;
   and len(hash_ids) = ceil(input_length / 512) in this file (checked). The CSV therefore
   determines every request's hash_ids up to renaming the ids, which is all the ids mean
   ("remapped"). Checked: the ids rebuilt from the CSV, and the file's ids, both renumbered
   in order of first appearance, are identical lists for every request.

How k and prefix_of are found: a dict from id to (latest request containing it, its
position). k = the number of r's leading ids already in the dict (by (2) the first unseen id
ends the match); prefix_of = the latest request containing r's id at position k - 1: by (1)
it holds r's whole first k ids, and by (2) no request shares more, so it is the latest one
sharing k. Checked independently with a trie of id sequences, which assumes no chaining: for
every request it gives the same k and prefix_of.

Run: ``python traces/build_mooncake.py [conversation_trace.jsonl]`` — without a path the file
is read with ``git show`` from the local mirror of the Mooncake repository (MIRROR) at the
pinned commit; either way its SHA-256 must match. ``--summary`` prints the statistics of the
shipped CSV (see traces/PROVENANCE.md) and reads nothing else. Deterministic.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

MIRROR = Path("/work/.mirror/kvcache-ai+Mooncake/repo")
COMMIT = "3b5a594133958449a1feaf1c9e0fc1b553e34a28"
SOURCE_PATH = "FAST25-release/traces/conversation_trace.jsonl"
SOURCE_BLOB = "5a371794b81d7fc7487ec8a02a2c631bcc7fbdf8"  # git blob id, for the record
SOURCE_SHA256 = "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df"

BLOCK = 512  # tokens per hash id (FAST25-release/README.md; paper appendix A.2)
VLLM_BLOCK = 16  # vLLM's default KV block size, for the capped reuse figure
OUT = Path(__file__).resolve().parent / "mooncake" / "mooncake_conversation.csv"
COLUMNS = ["timestamp", "input_length", "output_length", "prefix_of", "shared_blocks"]

# Published figures for the conversation trace (quoted, not computed): Mooncake FAST'25 paper
# (FAST25-release/Mooncake-FAST25.pdf), Table 2 "Workload Statistics".
PUBLISHED = {"requests": 12031, "input_mean": 12035, "output_mean": 343, "cache_ratio": 0.40}


def read_source(path: str | None) -> bytes:
    """The trace's bytes, from ``path`` or the mirror at COMMIT; checked against SOURCE_SHA256."""
    if path is None:
        data = subprocess.run(
            ["git", "-C", str(MIRROR), "show", f"{COMMIT}:{SOURCE_PATH}"],
            check=True, capture_output=True,
        ).stdout
    else:
        data = Path(path).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SOURCE_SHA256:
        sys.exit(f"SHA-256 mismatch: got {digest}, pinned {SOURCE_SHA256}")
    return data


def parse(data: bytes) -> list[dict]:
    rows = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    for row in rows:
        assert set(row) == {"timestamp", "input_length", "output_length", "hash_ids"}, row
        assert all(isinstance(row[key], int) for key in COLUMNS[:3]), row
        assert row["input_length"] >= 1 and row["output_length"] >= 1, row
        assert len(row["hash_ids"]) == math.ceil(row["input_length"] / BLOCK), row
    stamps = [row["timestamp"] for row in rows]
    assert stamps[0] >= 0 and all(a <= b for a, b in zip(stamps, stamps[1:])), "timestamps decrease"
    return rows


def check_chaining(ids: list[list[int]]) -> None:
    """(1): each id has one predecessor (None at position 0) wherever it appears."""
    predecessor: dict[int, int | None] = {}
    for hash_ids in ids:
        assert len(set(hash_ids)) == len(hash_ids), "an id repeats within a request"
        for j, h in enumerate(hash_ids):
            before = hash_ids[j - 1] if j else None
            assert predecessor.setdefault(h, before) == before, f"id {h}: two predecessors"


def prefix_links(ids: list[list[int]]) -> list[tuple[int, int]]:
    """(prefix_of, shared_blocks) per request, by the id dict; asserts (2)."""
    latest: dict[int, tuple[int, int]] = {}  # id -> (latest request containing it, position)
    links = []
    for r, hash_ids in enumerate(ids):
        k = 0
        while k < len(hash_ids) and hash_ids[k] in latest:
            k += 1
        assert not any(h in latest for h in hash_ids[k:]), f"request {r}: a seen id after the match"
        if k:
            p, position = latest[hash_ids[k - 1]]
            assert position == k - 1, f"request {r}: id at position {k - 1} seen at {position}"
            assert ids[p][:k] == hash_ids[:k]
            links.append((p, k))
        else:
            links.append((-1, 0))
        for j, h in enumerate(hash_ids):
            latest[h] = (r, j)
    return links


def prefix_links_trie(ids: list[list[int]]) -> list[tuple[int, int]]:
    """The same by brute structure, no chaining assumed: a trie of id sequences whose nodes
    remember the latest request through them."""
    root: dict = {}  # id -> [latest request, children]
    links = []
    for r, hash_ids in enumerate(ids):
        node, k, p = root, 0, -1
        while k < len(hash_ids) and hash_ids[k] in node:
            p, node = node[hash_ids[k]]
            k += 1
        links.append((p, k))
        node = root
        for h in hash_ids:
            entry = node.setdefault(h, [r, {}])
            entry[0] = r
            node = entry[1]
    return links


def canonical(ids: list[list[int]]) -> list[list[int]]:
    """Ids renumbered 0, 1, … in order of first appearance."""
    names: dict[int, int] = {}
    return [[names.setdefault(h, len(names)) for h in hash_ids] for hash_ids in ids]


def rebuild_ids(table: pd.DataFrame) -> list[list[int]]:
    """Hash ids implied by the CSV: prefix_of's first shared_blocks ids, then new ones."""
    ids: list[list[int]] = []
    fresh = 0
    for length, p, k in zip(table.input_length, table.prefix_of, table.shared_blocks):
        n = math.ceil(length / BLOCK)
        shared = ids[p][:k] if p >= 0 else []
        assert len(shared) == k <= n
        ids.append(shared + list(range(fresh, fresh + n - k)))
        fresh += n - k
    return ids


def seconds(ms: int) -> str:
    """ms / 1000 written exactly (the file's stamps are whole milliseconds)."""
    whole, rest = divmod(ms, 1000)
    return f"{whole}" if rest == 0 else f"{whole}.{rest:03d}".rstrip("0")


def write(rows: list[dict], links: list[tuple[int, int]]) -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    lines = [",".join(COLUMNS)]
    for row, (p, k) in zip(rows, links):
        stamp, length, output = seconds(row["timestamp"]), row["input_length"], row["output_length"]
        lines.append(f"{stamp},{length},{output},{p},{k}")
    OUT.write_text("\n".join(lines) + "\n")


def read_csv() -> pd.DataFrame:
    table = pd.read_csv(OUT)
    assert list(table.columns) == COLUMNS
    return table


def statistics(table: pd.DataFrame) -> dict[str, float]:
    inputs = table.input_length.to_numpy(np.int64)
    outputs = table.output_length.to_numpy(np.int64)
    k = table.shared_blocks.to_numpy(np.int64)
    stamps = table.timestamp.to_numpy(float)
    duration = stamps[-1] - stamps[0]
    gaps = np.diff(stamps)
    ms = np.round(stamps * 1000).astype(np.int64)
    hit = np.minimum(k * BLOCK, inputs)  # tokens an infinite 512-token-block cache holds
    hit_vllm = np.minimum(k * BLOCK, inputs - 1) // VLLM_BLOCK * VLLM_BLOCK
    blocks = -(-inputs // BLOCK)
    return {
        "rows": len(table),
        "duration_s": duration,
        "rate": (len(table) - 1) / duration,
        "gap_cv": gaps.std() / gaps.mean(),
        "distinct_stamps": len(np.unique(stamps)),
        "stamps_whole_s": (ms % 1000 == 0).sum(),
        "stamps_999": (ms % 1000 == 999).sum(),
        "input_mean": inputs.mean(),
        "input_p50": np.percentile(inputs, 50),
        "input_p95": np.percentile(inputs, 95),
        "input_max": inputs.max(),
        "output_mean": outputs.mean(),
        "output_p50": np.percentile(outputs, 50),
        "output_p95": np.percentile(outputs, 95),
        "output_max": outputs.max(),
        "share_prefixed": (table.prefix_of >= 0).mean(),
        "share_two_blocks": (k >= 2).mean(),
        "share_whole_prompt": (k == blocks).mean(),
        "input_tokens": inputs.sum(),
        "hit_tokens": hit.sum(),
        "hit_tokens_vllm": hit_vllm.sum(),
        "reuse_tokens": hit.sum() / inputs.sum(),
        "reuse_vllm": hit_vllm.sum() / inputs.sum(),
        "reuse_blocks": k.sum() / blocks.sum(),
        "reuse_request_mean": (hit / inputs).mean(),
    }


def summary(table: pd.DataFrame) -> list[str]:
    s = statistics(table)
    pub = PUBLISHED
    return [
        f"rows {s['rows']}, duration {s['duration_s']:.1f} s, rate {s['rate']:.3f} req/s, "
        f"gap CV {s['gap_cv']:.3f}",
        f"timestamps: {s['distinct_stamps']} distinct; {s['stamps_whole_s']} whole seconds, "
        f"{s['stamps_999']} at .999 s, {s['rows'] - s['stamps_whole_s'] - s['stamps_999']} other",
        f"input  mean {s['input_mean']:.1f}  P50 {s['input_p50']:.1f}  P95 {s['input_p95']:.1f}  "
        f"max {s['input_max']}",
        f"output mean {s['output_mean']:.1f}  P50 {s['output_p50']:.1f}  "
        f"P95 {s['output_p95']:.1f}  "
        f"max {s['output_max']}",
        f"requests with an earlier shared prefix (prefix_of >= 0): {s['share_prefixed']:.2%}; "
        f"sharing >= 2 blocks: {s['share_two_blocks']:.2%}; whole prompt shared: "
        f"{s['share_whole_prompt']:.2%}",
        "infinite-cache prefix reuse (sum of hits / sum of input tokens):",
        f"  512-token blocks, hit = min(shared_blocks*512, input_length): {s['reuse_tokens']:.3%} "
        f"({s['hit_tokens']} / {s['input_tokens']})",
        "  vLLM-style, hit = floor(min(shared_blocks*512, input_length-1)/16)*16: "
        f"{s['reuse_vllm']:.3%} "
        f"({s['hit_tokens_vllm']} / {s['input_tokens']})",
        f"  (in blocks: sum shared_blocks / sum ceil(input/512): {s['reuse_blocks']:.3%}; "
        f"mean of per-request hit/input: {s['reuse_request_mean']:.3%})",
        f"published (paper Table 2, conversation): requests {pub['requests']}, avg input "
        f"{pub['input_mean']}, avg output {pub['output_mean']}, "
        f"cache ratio {pub['cache_ratio']:.0%}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jsonl", nargs="?", help="conversation_trace.jsonl (default: the mirror)")
    parser.add_argument("--summary", action="store_true", help="statistics of the shipped CSV only")
    args = parser.parse_args()
    if args.summary:
        print("\n".join(summary(read_csv())))
        return

    rows = parse(read_source(args.jsonl))
    ids = [row["hash_ids"] for row in rows]
    check_chaining(ids)
    links = prefix_links(ids)
    assert links == prefix_links_trie(ids), "id dict and trie disagree"
    write(rows, links)

    table = read_csv()  # check the shipped bytes, not the in-memory rows
    stamps = [seconds(round(t * 1000)) for t in table.timestamp]
    assert stamps == [seconds(row["timestamp"]) for row in rows]
    for column in ("input_length", "output_length"):
        assert table[column].tolist() == [row[column] for row in rows]
    assert canonical(rebuild_ids(table)) == canonical(ids), "CSV does not determine the hash ids"

    print(f"read {len(rows)} requests ({SOURCE_PATH} @ {COMMIT[:12]}, "
          f"SHA-256 {SOURCE_SHA256[:12]}…)")
    print(f"distinct hash ids {len({h for i in ids for h in i})}, total ids {sum(map(len, ids))}; "
          "chaining, dict = trie, and lossless rebuild checked")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
    print("\n".join(summary(table)))


if __name__ == "__main__":
    main()
