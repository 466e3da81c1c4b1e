"""Run the Llumnix paper's experiments as its artifact ran them and check the paper's claims."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sim.cli.sweep import add_execution_arguments, show_progress

REPO = Path(__file__).resolve().parents[2]
GRIDS = REPO / "experiments" / "grids"
README_BEGIN = "<!-- paper-claims:begin -->"
README_END = "<!-- paper-claims:end -->"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--smoke", action="store_true", help="the grid at smoke scale (~1 min): checks, not results")
    parser.add_argument("--only", action="append", default=[], metavar="PART", help="run only these parts (repeatable), e.g. serving-L-L")
    add_execution_arguments(parser)
    parser.add_argument("--out", type=Path, help="results folder (default: results/paper or results/paper_smoke)")
    parser.add_argument("--readme", type=Path, help=f"also rewrite the claims table between {README_BEGIN} and {README_END} in this file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from sim.config import ConfigError
    from sim.config.loader import read_yaml
    from sim.sweep import run_sweep
    from sim.sweep.grid import expand
    from sim.sweep.paper import claims_table, markdown, runs_table
    from sim.sweep.plots import open_sweep, paper_serving_figure

    path = GRIDS / ("paper_smoke.yaml" if args.smoke else "paper.yaml")
    spec = read_yaml(path)
    if args.only:
        known = [part["name"] for part in spec["parts"]]
        unknown = [name for name in args.only if name not in known]
        if unknown:
            raise ConfigError(f"--only: unknown part(s) {', '.join(unknown)} (known: {', '.join(known)})")
        spec["parts"] = [part for part in spec["parts"] if part["name"] in args.only]
    grid = expand(spec, str(path), path.parent)
    out_dir = args.out or REPO / "results" / grid.name
    try:
        outcome = run_sweep(
            grid, out_dir, args.jobs, args.backend, args.address, show_progress(args), args.recompute_stale
        )
    except KeyboardInterrupt:
        print(f"{grid.name}: interrupted; finished runs are kept, run the same command to resume", file=sys.stderr)
        return 130
    print(outcome.line())
    sweep = open_sweep(out_dir.name, out_dir.parent)
    index = sweep.index[sweep.index["config_hash"].isin({run.key for run in grid.runs})]
    runs = runs_table(index)
    claims = claims_table(index, lambda key, name: sweep.table(name, {"config_hash": key}))
    runs_md, claims_md = markdown(runs), markdown(claims)
    (out_dir / "claims.md").write_text(claims_md + "\n")
    (out_dir / "runs.md").write_text(runs_md + "\n")
    claims.to_csv(out_dir / "claims.csv", index=False)
    cells = sweep.aggregate[sweep.aggregate["part"].isin(index["part"].unique())]
    figure = paper_serving_figure(cells, out_dir / "serving.png")
    print("\nRequests each run received (Table 1's statistics) and its mean KV occupancy:\n")
    print(runs_md)
    print("\nThe paper's claims:\n")
    print(claims_md)
    written = "claims.md, claims.csv, runs.md" + (", serving.png" if figure else "")
    print(f"\nwrote {written} to {out_dir}/")
    if args.readme:
        replace_block(args.readme, claims_md)
        print(f"rewrote the claims table in {args.readme}")
    return 0


def replace_block(path: Path, block: str) -> None:
    """Put ``block`` between the README markers (which must exist)."""
    from sim.config import ConfigError

    text = path.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise ConfigError(f"{path}: no {README_BEGIN} ... {README_END} markers")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    path.write_text(f"{head}{README_BEGIN}\n{block}\n{README_END}{tail}")
