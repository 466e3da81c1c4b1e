"""Profiles of a GPU whose token operators Vidur measured: its ``mlp.csv``, with attention from
the performance model.

    python -m sim.hardware.operator_profiles <device> <Vidur's mlp.csv of LLaMA-2-7B on it>

For a device entry with ``profiles == VIDUR_OPERATORS`` (``skus``). Writes, under
``sim/hardware/data/profiles/compute/<device>/<model>/``:

* ``mlp.csv.xz`` — Vidur's measured token operators (medians, tensor parallelism 1, LLaMA-2-7B:
  LLaMA-7B's shape, so its rows are LLaMA-7B's), as measured from 1 to 4,096 tokens. Past the
  last measured count the operators are compute-bound GEMMs and activation-sized element-wise
  kernels, so each is continued in proportion to tokens from its last measured row (what the
  measured rows themselves do: 2,048 -> 4,096 tokens doubles them within a few percent).
  Vidur's ``emb`` row is left out, as the built GA102 profiles leave it out.
* ``attention.csv.xz`` — the performance model's attention (``build_profiles.attention_profile``)
  on this device's datasheet figures, with the constants fitted on the A10 (``a10_fit.json``):
  decode attention is the artifact's PagedAttention V1 streaming the KV cache at the fitted
  fraction of this device's bandwidth, prefill attention its fitted fraction of this device's
  FP16 peak. Vidur's measured attention of these GPUs is FlashAttention's, another kernel
  (``llumsim calibrate`` shows the A10's against it).
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
from sim.hardware.build_profiles import FLOAT_FORMAT, LayoutModel, attention_profile
from sim.hardware.catalog import FIT_JSON, LAYOUTS, PROFILES_DIR, Layout, find_layout
from sim.hardware.perf_model import Constants, PerfModel
from sim.hardware.skus import VIDUR_OPERATORS
from sim.hardware.timing import TOKEN_OPS

SHAPE_COLUMNS = ("n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp")


def operator_layouts(device: str, layouts: tuple[Layout, ...] = LAYOUTS) -> tuple[Layout, ...]:
    """The layouts of ``device``; refused unless its entry says its operators are Vidur's."""
    chosen = tuple(layout for layout in layouts if layout.device == device)
    if not chosen:
        raise ValueError(f"no layout uses device {device!r}; add one to sim/hardware/catalog.py::LAYOUTS")
    if chosen[0].device_sku.profiles != VIDUR_OPERATORS:
        raise ValueError(f"device {device!r} does not take Vidur's measured operators (its entry's profiles)")
    return chosen


def measured_operators(vidur_mlp: pd.DataFrame, layout: Layout) -> tuple[pd.DataFrame, int]:
    """Vidur's rows of ``layout``'s shape and tensor parallelism, in the built profiles' schema,
    continued in proportion to tokens past the last measured count up to ``MAX_TOKENS``; and
    that count."""
    model = layout.replica_config().model_config
    # vocab_size is not matched: no token operator reads it (only ``emb``, left out), and
    # Vidur's LLaMA-2-7B rows carry 32,768 (padded) where LLaMA-1 has 32,000; the rows
    # written carry the layout's own, which the predictor looks them up by
    want = {
        "n_head": model.num_q_heads,
        "n_kv_head": model.num_kv_heads,
        "n_embd": model.embedding_dim,
        "n_expanded_embd": model.mlp_hidden_dim,
        "num_tensor_parallel_workers": layout.tensor_parallel,
    }
    rows = vidur_mlp
    for column, value in want.items():
        if column not in rows:
            raise ValueError(f"Vidur's mlp.csv has no column {column!r}")
        rows = rows[rows[column] == value]
    if rows.empty:
        raise ValueError(f"Vidur's mlp.csv has no rows of {layout.model}'s shape at tensor parallelism {layout.tensor_parallel}")
    columns = [f"time_stats.{op}.median" for op in TOKEN_OPS]
    missing = [c for c in columns if c not in rows]
    if missing:
        raise ValueError(f"Vidur's mlp.csv lacks {', '.join(missing)}")
    # a count profiled twice keeps its first row, as the GA102 measurement files do
    rows = rows.drop_duplicates("num_tokens").sort_values("num_tokens")
    measured = rows[[*SHAPE_COLUMNS, "num_tokens", "num_tensor_parallel_workers", *columns]].assign(
        vocab_size=model.vocab_size
    )
    last = measured.iloc[-1]
    beyond = np.array([t for t in settings.TOKEN_GRID if t > last["num_tokens"]])
    continued = pd.DataFrame({c: last[c] for c in (*SHAPE_COLUMNS, "num_tensor_parallel_workers")}, index=range(len(beyond)))
    continued["num_tokens"] = beyond
    for c in columns:
        continued[c] = last[c] * beyond / last["num_tokens"]
    return pd.concat([measured, continued[measured.columns]], ignore_index=True), int(last["num_tokens"])


def transferred(operators: pd.DataFrame, layout: Layout, measured_on: Layout, constants: Constants) -> pd.DataFrame:
    """Operators measured on ``measured_on``'s GPU, carried to ``layout``'s: each operator at
    each token count times the performance model's ratio of it between the two datasheets —
    the bandwidth ratio where it streams memory, the FLOP ratio where it computes, and the
    smooth mix of the two in between (the stated transfer of a measurement to another GPU)."""
    tokens = operators["num_tokens"].to_numpy()
    to = PerfModel(LayoutModel.of(layout).device, LayoutModel.of(layout).shape, constants).token_ops(tokens)
    source = LayoutModel.of(measured_on)
    frm = PerfModel(source.device, source.shape, constants).token_ops(tokens)
    carried = operators.copy()
    for op in TOKEN_OPS:
        carried[f"time_stats.{op}.median"] = operators[f"time_stats.{op}.median"] * to[op] / frm[op]
    return carried


def write(
    device: str, vidur_mlp_csv: Path, source: str, profiles_dir: Path = PROFILES_DIR, measured_on: str | None = None
) -> list[Path]:
    """Write every profile file of ``device``'s layouts (``source``: where the file is from,
    for the provenance note; ``measured_on``: the catalog device Vidur measured the file on,
    when not ``device`` itself); returns the folders written."""
    vidur_mlp = pd.read_csv(vidur_mlp_csv)
    constants = Constants(**json.loads(FIT_JSON.read_text())["constants"])
    digest = hashlib.sha256(Path(vidur_mlp_csv).read_bytes()).hexdigest()
    written = []
    for layout in operator_layouts(device):
        folder = profiles_dir / layout.compute_dir.relative_to(PROFILES_DIR)
        folder.mkdir(parents=True, exist_ok=True)
        operators, last = measured_operators(vidur_mlp, layout)
        transfer = ""
        if measured_on is not None and measured_on != device:
            other = find_layout(layout.model, measured_on, layout.tensor_parallel)
            operators = transferred(operators, layout, other, constants)
            transfer = TRANSFER_NOTE.format(measured_on=measured_on, device=device)
        operators.to_csv(folder / "mlp.csv.xz", index=False, float_format=FLOAT_FORMAT, compression="xz")
        attention = attention_profile(LayoutModel.of(layout), constants)
        attention.to_csv(folder / "attention.csv.xz", index=False, float_format=FLOAT_FORMAT, compression="xz")
        (folder / "config.json").write_text(
            json.dumps({"model": layout.vidur_model, "device_sku": layout.device}, indent=2) + "\n"
        )
        (folder / "PROVENANCE.md").write_text(
            PROVENANCE.format(
                device=device,
                model=layout.model,
                source=source,
                sha256=digest,
                last=last,
                fit=FIT_JSON.name,
                measured_on=f" --measured-on {measured_on}" if transfer else "",
            )
            + transfer
        )
        written.append(folder)
    return written


PROVENANCE = """# Profiles of {model} on {device}

- `mlp.csv.xz`: Vidur's measured token operators of LLaMA-2-7B (LLaMA-7B's shape) at tensor
  parallelism 1, medians in ms, from {source} (sha256 `{sha256}`), written by
  `python -m sim.hardware.operator_profiles {device} <that file> --source "..."{measured_on}`; past {last} tokens each
  operator is continued in proportion to tokens from its last measured row.
- `attention.csv.xz`: the performance model (`sim/hardware/perf_model.py`) on this device's
  datasheet figures (`sim/hardware/skus.py`) with the constants fitted on the A10 (`{fit}`):
  the artifact's kernels at the fraction of this GPU's peaks they reach on the A10.
"""


TRANSFER_NOTE = """- Measured on {measured_on}, not on {device}: each operator at each token count is carried
  over by the performance model's ratio of it between the two datasheets (bandwidth where it
  streams memory, FLOP/s where it computes); no measurement on {device} itself was used.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("device", help="a device entry whose profiles are Vidur's measured operators")
    parser.add_argument("vidur_mlp", type=Path, help="Vidur's data/profiling/compute/<gpu>/meta-llama/Llama-2-7b-hf/mlp.csv")
    parser.add_argument("--source", required=True, help="where the file comes from (repository, commit, path), for PROVENANCE.md")
    parser.add_argument(
        "--measured-on",
        help="the catalog device Vidur measured the file on, when it is another GPU: the rows are "
        "carried over by the performance model's ratio between the two datasheets",
    )
    args = parser.parse_args(argv)
    if not args.vidur_mlp.is_file():
        parser.error(f"no such file: {args.vidur_mlp}")
    for folder in write(args.device, args.vidur_mlp, args.source, measured_on=args.measured_on):
        print(f"wrote {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
