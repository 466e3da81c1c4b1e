"""A compact copy of a finished sweep to commit under ``results/``: the index cut to its
coordinates, seed and the columns the findings and notebooks read, plus ``sweep.json``.
A fresh clone then opens it with ``sim.sweep.plots.open_sweep`` without re-running (the
aggregate is recomputed from the index on opening; per-run tables and run folders stay
behind, so ``Sweep.table`` needs the full sweep).

    python -m sim.sweep.compact /path/to/results/k_study results/k_study
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import pandas as pd

from sim.files import atomic_write
from sim.sweep.index import KEY_COLUMNS, OK, ok_rows

# what the K-tier findings and the notebooks read: latency mean/P50/P99 overall and per tier,
# cost, preemptions and migrations, SLO attainment and per-GPU capacity where a study has them
KEPT = tuple(
    re.compile(pattern)
    for pattern in (
        r"latency(_by_tier\.\d+)?\.(prefill_latency|decode_latency_per_token|e2e_latency)\.(mean|p50|p99)",
        r"cost\.(cost_per_request|cost_per_latency|gpu_hours|average_instances)",
        r"requests\.(finished|preempted|migrations)",
        r"migration\.committed",
        r"slo\.(overall|by_tier\.\d+)\.attainment",
        r"slo\.tiers_met",
        r"capacity\.[a-z_]+",
    )
)


def compact_index(index: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The runs with results, keeping the coordinate ``columns``, the key columns and the
    ``KEPT`` metrics (values untouched: findings from the copy match the full sweep's)."""
    runs = ok_rows(index)
    metrics = [c for c in runs.columns if any(p.fullmatch(c) for p in KEPT)]
    return runs[[*columns, *KEY_COLUMNS, *metrics]].reset_index(drop=True)


def write_compact(source: Path, dest: Path) -> Path:
    """``dest``/index.parquet and sweep.json from the sweep in ``source`` (which must be
    complete: a partial sweep would commit a partial study)."""
    meta = json.loads((source / "sweep.json").read_text())
    if not meta.get("complete"):
        raise ValueError(f"{source}/sweep.json: the sweep is not complete ({meta.get('runs_done')}/{meta.get('runs')} runs)")
    index = pd.read_parquet(source / "index.parquet")
    frame = compact_index(index, list(meta["columns"]))
    dest.mkdir(parents=True, exist_ok=True)
    atomic_write(dest / "index.parquet", lambda tmp: frame.to_parquet(tmp, index=False, compression="zstd"))
    meta = {
        **meta,
        "source": f"experiments/grids/{meta['name']}.yaml",  # the shipped grid of that name
        "tables": [],
        "compact": {
            "runs": len(frame),
            "failed": int((index["status"] != OK).sum()) if "status" in index else 0,
            "metrics": len(frame.columns) - len(meta["columns"]) - len(KEY_COLUMNS),
        },
    }
    (dest / "sweep.json").write_text(json.dumps(meta, indent=1) + "\n")
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a finished sweep's results folder")
    parser.add_argument("dest", type=Path, help="where the compact copy goes (e.g. results/k_study)")
    args = parser.parse_args(argv)
    try:
        dest = write_compact(args.source, args.dest)
    except (OSError, ValueError, KeyError) as error:
        print(f"llumsim: error: {error}", file=sys.stderr)
        return 2
    size = (dest / "index.parquet").stat().st_size
    print(f"wrote {dest}/index.parquet ({size / 1e6:.2f} MB) and sweep.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
