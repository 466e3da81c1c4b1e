"""Profiles of a GPU whose token operators Vidur measured: its ``mlp.csv``, with attention from
the performance model.

    python -m sim.hardware.operator_profiles <device> <Vidur's mlp.csv> [--model <model>] --source "..."

For a device entry with ``profiles == VIDUR_OPERATORS`` (``skus``). Writes, for each catalog
model on the device (``--model``: only those; default: every one whose shape the file holds),
under ``sim/hardware/data/profiles/compute/<device>/<model>/`` — one folder per model, holding
the rows of each of its tensor-parallel layouts:

* ``mlp.csv.xz`` — Vidur's measured token operators (medians) of the rows of the layout's shape
  (heads, KV heads, hidden size, MLP width) and tensor parallelism, as measured up to 16,384
  tokens (rows past that count, which no lookup reads, are left out). Past the last measured
  count the operators are compute-bound GEMMs and activation-sized element-wise kernels, so each
  is continued in proportion to tokens from its last measured row (what the measured rows
  themselves do: 2,048 -> 4,096 tokens doubles them within a few percent). Vidur's ``emb`` row
  is left out, as the built GA102 profiles leave it out.
* ``attention.csv.xz`` — the performance model's attention (``build_profiles.attention_profile``)
  on this device's datasheet figures, with the constants fitted on the A10 (``a10_fit.json``):
  decode attention is the artifact's PagedAttention V1 streaming the KV cache at the fitted
  fraction of this device's bandwidth, prefill attention its fitted fraction of this device's
  FP16 peak. Vidur's measured attention of these GPUs is FlashAttention's, another kernel
  (``llumsim calibrate`` shows the A10's against it).
* ``config.json`` and ``PROVENANCE.md``: what was read and how.

A file measured on another GPU is carried over (``--measured-on``) by the performance model's
ratio of each operator between the two datasheets, or, with ``--ratio-of``, by the measured
ratio of each operator at each token count between two of Vidur's files of a reference model
(the same model measured on both GPUs).

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
OPERATOR_COLUMNS = [f"time_stats.{op}.median" for op in TOKEN_OPS]


def operator_layouts(device: str, layouts: tuple[Layout, ...] = LAYOUTS) -> tuple[Layout, ...]:
    """The layouts of ``device``; refused unless its entry says its operators are Vidur's."""
    chosen = tuple(layout for layout in layouts if layout.device == device)
    if not chosen:
        raise ValueError(f"no layout uses device {device!r}; add one to sim/hardware/catalog.py::LAYOUTS")
    if chosen[0].device_sku.profiles != VIDUR_OPERATORS:
        raise ValueError(f"device {device!r} does not take Vidur's measured operators (its entry's profiles)")
    return chosen


def vidur_rows(vidur_mlp: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """Vidur's rows of ``layout``'s shape and tensor parallelism up to ``MAX_TOKENS`` tokens,
    in the built profiles' schema, carrying the layout's own vocabulary."""
    model = layout.replica_config().model_config
    # vocab_size is not matched: no token operator reads it (only ``emb``, left out), and
    # Vidur's LLaMA-2 rows carry 32,768 (padded) where LLaMA-1 and -2 have 32,000; the rows
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
    missing = [c for c in OPERATOR_COLUMNS if c not in rows]
    if missing:
        raise ValueError(f"Vidur's mlp.csv lacks {', '.join(missing)}")
    # a count profiled twice keeps its first row, as the GA102 measurement files do
    rows = rows.drop_duplicates("num_tokens").sort_values("num_tokens")
    rows = rows[rows["num_tokens"] <= settings.MAX_TOKENS]
    return rows[[*SHAPE_COLUMNS, "num_tokens", "num_tensor_parallel_workers", *OPERATOR_COLUMNS]].assign(
        vocab_size=model.vocab_size
    ).reset_index(drop=True)


def continued(measured: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """``measured`` continued in proportion to tokens past its last count up to ``MAX_TOKENS``
    on the profile grid; and that last count."""
    last = measured.iloc[-1]
    beyond = np.array([t for t in settings.TOKEN_GRID if t > last["num_tokens"]])
    extra = pd.DataFrame({c: last[c] for c in (*SHAPE_COLUMNS, "num_tensor_parallel_workers")}, index=range(len(beyond)))
    extra["num_tokens"] = beyond
    for c in OPERATOR_COLUMNS:
        extra[c] = last[c] * beyond / last["num_tokens"]
    return pd.concat([measured, extra[measured.columns]], ignore_index=True), int(last["num_tokens"])


def measured_operators(vidur_mlp: pd.DataFrame, layout: Layout) -> tuple[pd.DataFrame, int]:
    """Vidur's rows of ``layout``'s shape and tensor parallelism, in the built profiles' schema,
    continued in proportion to tokens past the last measured count up to ``MAX_TOKENS``; and
    that count."""
    return continued(vidur_rows(vidur_mlp, layout))


def reference_ratio(measured_on: pd.DataFrame, here: pd.DataFrame, tensor_parallel: int) -> pd.DataFrame:
    """Each operator's time on this GPU over its time on the other, per token count: one
    reference model's rows (Vidur's file of it on each GPU) at ``tensor_parallel``."""
    frames = []
    for vidur in (measured_on, here):
        rows = vidur[vidur["num_tensor_parallel_workers"] == tensor_parallel]
        shapes = rows[["n_head", "n_kv_head", "n_embd", "n_expanded_embd"]].drop_duplicates()
        if len(shapes) != 1:
            raise ValueError(f"a reference file must hold one model at tensor parallelism {tensor_parallel}; found {len(shapes)}")
        frames.append(rows.drop_duplicates("num_tokens").set_index("num_tokens")[OPERATOR_COLUMNS])
    other, this = frames
    common = other.index.intersection(this.index)
    return this.loc[common] / other.loc[common]


def ratio_transferred(measured: pd.DataFrame, ratio: pd.DataFrame) -> pd.DataFrame:
    """``measured`` (rows of another GPU) times the reference ratio, at the token counts where
    both are measured; the continuation then starts from the last of them."""
    rows = measured[measured["num_tokens"].isin(ratio.index)].reset_index(drop=True)
    if rows.empty:
        raise ValueError("the reference files measure none of the file's token counts")
    factors = ratio.loc[rows["num_tokens"]].to_numpy()
    rows[OPERATOR_COLUMNS] = rows[OPERATOR_COLUMNS].to_numpy() * factors
    return rows


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
    device: str,
    vidur_mlp_csv: Path,
    source: str,
    profiles_dir: Path = PROFILES_DIR,
    measured_on: str | None = None,
    models: list[str] | None = None,
    ratio_of: tuple[Path, Path] | None = None,
    ratio_source: tuple[str, str] = ("", ""),
    note: str = "",
) -> list[Path]:
    """Write every profile file of ``device``'s layouts of ``models`` (None: every model whose
    shape the file holds) from one of Vidur's ``mlp.csv`` (``source``: where the file is from,
    for the provenance note; ``measured_on``: the catalog device Vidur measured the file on,
    when not ``device`` itself; ``ratio_of``: a reference model's files on ``measured_on``'s GPU
    and on this one, whose measured ratio carries the rows over instead of the datasheets';
    ``ratio_source``: where those two come from; ``note``: a sentence for the provenance
    note); returns the folders written."""
    vidur_mlp = pd.read_csv(vidur_mlp_csv)
    constants = Constants(**json.loads(FIT_JSON.read_text())["constants"])
    digest = hashlib.sha256(Path(vidur_mlp_csv).read_bytes()).hexdigest()
    carried = measured_on is not None and measured_on != device
    if ratio_of is not None and not carried:
        raise ValueError("--ratio-of carries rows measured on another GPU: name it with --measured-on")
    references = [pd.read_csv(path) for path in ratio_of] if ratio_of is not None else None
    ratio_files = (
        [(where, hashlib.sha256(Path(path).read_bytes()).hexdigest()) for where, path in zip(ratio_source, ratio_of)]
        if ratio_of is not None
        else None
    )
    layouts = operator_layouts(device)
    if models is None:
        models = [m for m in dict.fromkeys(layout.model for layout in layouts) if holds_shape(vidur_mlp, layouts, m)]
        if not models:
            raise ValueError(f"Vidur's mlp.csv holds the shape of no model on {device}")
    written = []
    for model in models:
        chosen = [layout for layout in layouts if layout.model == model]
        if not chosen:
            raise ValueError(f"no layout of {model!r} on {device}; add one to sim/hardware/catalog.py::LAYOUTS")
        folder = profiles_dir / chosen[0].compute_dir.relative_to(PROFILES_DIR)
        folder.mkdir(parents=True, exist_ok=True)
        mlp, attention, lasts = [], [], []
        for layout in chosen:
            if references is not None:
                ratio = reference_ratio(*references, layout.tensor_parallel)
                operators, last = continued(ratio_transferred(vidur_rows(vidur_mlp, layout), ratio))
            else:
                operators, last = measured_operators(vidur_mlp, layout)
                if carried:
                    other = find_layout(layout.model, measured_on, layout.tensor_parallel)
                    operators = transferred(operators, layout, other, constants)
            mlp.append(operators)
            attention.append(attention_profile(LayoutModel.of(layout), constants))
            lasts.append(last)
        pd.concat(mlp, ignore_index=True).to_csv(
            folder / "mlp.csv.xz", index=False, float_format=FLOAT_FORMAT, compression="xz"
        )
        pd.concat(attention, ignore_index=True).to_csv(
            folder / "attention.csv.xz", index=False, float_format=FLOAT_FORMAT, compression="xz"
        )
        (folder / "config.json").write_text(
            json.dumps({"model": chosen[0].vidur_model, "device_sku": device}, indent=2) + "\n"
        )
        (folder / "PROVENANCE.md").write_text(
            provenance(device, chosen, source, digest, lasts, measured_on if carried else None, ratio_files, note)
        )
        written.append(folder)
    return written


def holds_shape(vidur_mlp: pd.DataFrame, layouts: list[Layout] | tuple[Layout, ...], model: str) -> bool:
    """Whether the file has rows of every layout of ``model`` among ``layouts``."""
    try:
        for layout in layouts:
            if layout.model == model:
                vidur_rows(vidur_mlp, layout)
    except ValueError:
        return False
    return True


def provenance(
    device: str,
    layouts: list[Layout],
    source: str,
    sha256: str,
    lasts: list[int],
    measured_on: str | None,
    ratio_files: list[tuple[str, str]] | None,
    note: str,
) -> str:
    """The note beside one model's profiles on ``device``: what was read and how."""
    model = layouts[0].replica_config().model_config
    tps = ", ".join(str(layout.tensor_parallel) for layout in layouts)
    options = f" --model {layouts[0].model}"
    if measured_on is not None:
        options += f" --measured-on {measured_on}"
    if ratio_files is not None:
        options += " --ratio-of <reference on " + measured_on + "> <reference on " + device + ">"
    last = max(lasts)
    if last >= settings.MAX_TOKENS:
        extent = f"measured through {settings.MAX_TOKENS} tokens (rows past it are left out)"
    else:
        extent = f"past {last} tokens each\n  operator is continued in proportion to tokens from its last measured row"
    text = PROVENANCE.format(
        device=device,
        model=layouts[0].model,
        shape=f"{model.num_q_heads} heads, {model.num_kv_heads} KV heads, hidden {model.embedding_dim}, "
        f"MLP {model.mlp_hidden_dim}",
        tps=tps,
        source=source,
        sha256=sha256,
        options=options,
        extent=extent,
        fit=FIT_JSON.name,
    )
    if ratio_files is not None:
        (other, other_sha), (here, here_sha) = ratio_files
        text += RATIO_NOTE.format(
            measured_on=measured_on, device=device, other=other, other_sha=other_sha, here=here, here_sha=here_sha
        )
    elif measured_on is not None:
        text += TRANSFER_NOTE.format(measured_on=measured_on, device=device)
    if note:
        text += f"- {note}\n"
    return text


PROVENANCE = """# Profiles of {model} on {device}

- `mlp.csv.xz`: Vidur's measured token operators, the rows of {model}'s shape
  ({shape}) at tensor parallelism {tps}, medians in ms, from {source} (sha256 `{sha256}`), written by
  `python -m sim.hardware.operator_profiles {device} <that file>{options} --source "..."`; {extent}.
- `attention.csv.xz`: the performance model (`sim/hardware/perf_model.py`) on this device's
  datasheet figures (`sim/hardware/skus.py`) with the constants fitted on the A10 (`{fit}`):
  the artifact's kernels at the fraction of this GPU's peaks they reach on the A10.
"""


TRANSFER_NOTE = """- Measured on {measured_on}, not on {device}: each operator at each token count is carried
  over by the performance model's ratio of it between the two datasheets (bandwidth where it
  streams memory, FLOP/s where it computes); no measurement on {device} itself was used.
"""


RATIO_NOTE = """- Measured on {measured_on}, not on {device}: each operator at each token count is carried
  over by the ratio of that operator at that count between Vidur's measurements of a reference
  model on the two GPUs (`--ratio-of`), at the token counts both measure, at the same tensor
  parallelism: on {measured_on} {other} (sha256 `{other_sha}`), on {device} {here} (sha256
  `{here_sha}`). The continuation starts from the last of those counts.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("device", help="a device entry whose profiles are Vidur's measured operators")
    parser.add_argument("vidur_mlp", type=Path, help="Vidur's data/profiling/compute/<gpu>/<org>/<model>/mlp.csv")
    parser.add_argument("--source", required=True, help="where the file comes from (repository, commit, path), for PROVENANCE.md")
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        help="a catalog model whose layouts on the device are written (repeatable; default: every "
        "model whose shape the file holds)",
    )
    parser.add_argument(
        "--measured-on",
        help="the catalog device Vidur measured the file on, when it is another GPU: the rows are "
        "carried over by the performance model's ratio between the two datasheets",
    )
    parser.add_argument(
        "--ratio-of",
        nargs=2,
        type=Path,
        metavar=("ON_MEASURED_ON", "ON_DEVICE"),
        help="with --measured-on: Vidur's mlp.csv of one reference model on that GPU and on this "
        "one; each operator is carried over by their measured ratio at each token count instead",
    )
    parser.add_argument(
        "--ratio-source",
        nargs=2,
        default=("", ""),
        metavar=("SOURCE_ON_MEASURED_ON", "SOURCE_ON_DEVICE"),
        help="where the two --ratio-of files come from (repository, commit, path), for PROVENANCE.md",
    )
    parser.add_argument("--note", default="", help="a sentence for PROVENANCE.md (why these rows)")
    args = parser.parse_args(argv)
    for path in (args.vidur_mlp, *(args.ratio_of or ())):
        if not path.is_file():
            parser.error(f"no such file: {path}")
    for folder in write(
        args.device,
        args.vidur_mlp,
        args.source,
        measured_on=args.measured_on,
        models=args.models,
        ratio_of=tuple(args.ratio_of) if args.ratio_of else None,
        ratio_source=tuple(args.ratio_source),
        note=args.note,
    ):
        print(f"wrote {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
