"""The all-reduce profile of a node whose collectives Vidur measured: its ``all_reduce.csv``.

    python -m sim.hardware.network_profiles <node> <Vidur's all_reduce.csv> --source "..."

For a node entry (``skus``) whose layouts take Vidur's measured operators (``VIDUR_OPERATORS``)
with tensor parallelism. Writes, under ``sim/hardware/data/profiles/network/<node>/``:

* ``all_reduce.csv.xz`` — Vidur's measured all-reduce times (medians, ms) of the node's
  tensor-parallel degrees, each within one node (``num_workers == devices_per_node``, the rows
  Vidur's predictor reads), as measured. Past the largest measured size (64 MiB in Vidur's
  files: 4,096 tokens of a hidden size of 8,192) the collective is bandwidth-bound, so it is
  continued in proportion to bytes from its last measured row, on the measured grid's last step,
  up to ``ALL_REDUCE_MAX_SIZE`` (16,384 tokens of that hidden size); without it Vidur's forest
  would hold the 64 MiB time for every larger batch. Statistics other than the median, which no
  lookup reads, are left out.
* ``config.json`` and ``PROVENANCE.md``: what was read and how.

Deterministic: the same inputs write the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

import sim.hardware.predictor_settings as settings
from sim.hardware.build_profiles import FLOAT_FORMAT
from sim.hardware.catalog import LAYOUTS, PROFILES_DIR, Layout
from sim.hardware.skus import VIDUR_OPERATORS

COLUMNS = ["rank", "num_workers", "size", "collective", "devices_per_node", "max_devices_per_node"]
TIME = "time_stats.all_reduce.median"


def node_degrees(node: str, layouts: tuple[Layout, ...] = LAYOUTS) -> list[int]:
    """The tensor-parallel degrees of ``node``'s layouts; refused unless they take Vidur's
    measured operators and share the node's GPUs."""
    degrees = sorted({layout.tensor_parallel for layout in layouts if layout.node == node})
    if not degrees:
        raise ValueError(f"no layout uses node {node!r}; add one to sim/hardware/catalog.py::LAYOUTS")
    chosen = [layout for layout in layouts if layout.node == node]
    if any(layout.device_sku.profiles != VIDUR_OPERATORS for layout in chosen):
        raise ValueError(f"node {node!r} hosts a device that does not take Vidur's measured operators")
    if degrees == [1]:
        raise ValueError(f"node {node!r} has no tensor parallelism: it needs no all-reduce profile")
    return [d for d in degrees if d > 1]


def measured_all_reduce(vidur: pd.DataFrame, degree: int) -> tuple[pd.DataFrame, int]:
    """Vidur's all-reduce rows of ``degree`` GPUs within one node, one per size, continued in
    proportion to bytes past the largest measured size up to ``ALL_REDUCE_MAX_SIZE``; and that
    size."""
    missing = [c for c in (*COLUMNS, TIME) if c not in vidur]
    if missing:
        raise ValueError(f"Vidur's all_reduce.csv lacks {', '.join(missing)}")
    rows = vidur[
        (vidur["collective"] == "all_reduce")
        & (vidur["num_workers"] == degree)
        & (vidur["devices_per_node"] == degree)
    ]
    if rows.empty:
        raise ValueError(f"Vidur's all_reduce.csv has no all-reduce of {degree} GPUs within one node")
    # a size profiled twice keeps its first row, as the operator files do
    rows = rows.drop_duplicates("size").sort_values("size")[[*COLUMNS, TIME]].reset_index(drop=True)
    sizes = rows["size"].to_numpy()
    step = int(sizes[-1] - sizes[-2])
    beyond = np.arange(sizes[-1] + step, settings.ALL_REDUCE_MAX_SIZE + 1, step)
    last = rows.iloc[-1]
    extra = pd.DataFrame({c: last[c] for c in COLUMNS}, index=range(len(beyond)))
    extra["size"] = beyond
    extra[TIME] = last[TIME] * beyond / last["size"]
    return pd.concat([rows, extra], ignore_index=True), int(sizes[-1])


def write(node: str, vidur_csv: Path, source: str, profiles_dir: Path = PROFILES_DIR) -> Path:
    """Write ``node``'s all-reduce profile from Vidur's file (``source``: where it is from)."""
    vidur = pd.read_csv(vidur_csv)
    degrees = node_degrees(node)
    frames, lasts = zip(*(measured_all_reduce(vidur, degree) for degree in degrees))
    folder = profiles_dir / "network" / node
    folder.mkdir(parents=True, exist_ok=True)
    pd.concat(frames, ignore_index=True).to_csv(
        folder / "all_reduce.csv.xz", index=False, float_format=FLOAT_FORMAT, compression="xz"
    )
    (folder / "config.json").write_text(json.dumps({"sku": node}, indent=2) + "\n")
    (folder / "PROVENANCE.md").write_text(
        PROVENANCE.format(
            node=node,
            degrees=", ".join(map(str, degrees)),
            source=source,
            sha256=hashlib.sha256(Path(vidur_csv).read_bytes()).hexdigest(),
            largest=max(lasts),
            max_size=settings.ALL_REDUCE_MAX_SIZE,
        )
    )
    return folder


PROVENANCE = """# All-reduce profile of {node}

- `all_reduce.csv.xz`: Vidur's measured all-reduce times of {degrees} GPUs within one node
  (`num_workers == devices_per_node`), medians in ms, from {source} (sha256 `{sha256}`),
  written by `python -m sim.hardware.network_profiles {node} <that file> --source "..."`; past
  {largest} bytes each degree is continued in proportion to bytes from its last measured row,
  on the measured grid's last step, up to {max_size} bytes.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("node", help="a node entry whose layouts take Vidur's measured operators")
    parser.add_argument("vidur_all_reduce", type=Path, help="Vidur's data/profiling/network/<node>/all_reduce.csv")
    parser.add_argument("--source", required=True, help="where the file comes from (repository, commit, path), for PROVENANCE.md")
    args = parser.parse_args(argv)
    if not args.vidur_all_reduce.is_file():
        parser.error(f"no such file: {args.vidur_all_reduce}")
    print(f"wrote {write(args.node, args.vidur_all_reduce, args.source)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
