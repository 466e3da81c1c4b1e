"""Run the Llumnix paper's experiments as its artifact ran them and check the paper's claims.

Exit status as ``llumsim sweep``'s (1: some runs failed; the claims use the others); a
``--readme`` without the claims markers, or that cannot be written, stops before the sweep.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sim.cli.sweep import (
    add_execution_arguments,
    add_quiet_argument,
    add_retry_argument,
    report_failures,
    sweep_or_stop,
)

REPO = Path(__file__).resolve().parents[2]
GRIDS = REPO / "experiments" / "grids"
README_BEGIN = "<!-- paper-claims:begin -->"
README_END = "<!-- paper-claims:end -->"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--smoke", action="store_true", help="the grid at smoke scale (~1 min): checks, not results")
    parser.add_argument("--only", action="append", default=[], metavar="PART", help="run only these parts (repeatable), e.g. serving-L-L")
    add_execution_arguments(parser)
    parser.add_argument("--out", type=Path, help="results folder (default: results/paper or results/paper_smoke)")
    parser.add_argument("--readme", type=Path, help=f"also rewrite the claims table between {README_BEGIN} and {README_END} in this file (docs/paper.md)")
    add_quiet_argument(parser)
    add_retry_argument(parser)


def run(args: argparse.Namespace) -> int:
    from sim.config import ConfigError
    from sim.config.loader import read_yaml
    from sim.files import atomic_write
    from sim.presentation.markdown import markdown
    from sim.presentation.plots import open_sweep, paper_serving_figure
    from sim.studies.paper import Runs, claims_table, grade_counts, runs_table
    from sim.sweep.grid import expand

    if args.readme:
        readme_text(args.readme)  # a README the table cannot go into fails now, not after the sweep
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
    outcome = sweep_or_stop(grid, out_dir, args)
    if outcome is None:
        return 130
    print(outcome.line())
    out_dir = outcome.out_dir
    sweep = open_sweep(out_dir.name, out_dir.parent)
    index = sweep.index[sweep.index["config_hash"].isin({run.key for run in grid.runs})]
    runs = runs_table(index)
    stored = Runs(
        index,
        table=lambda key, name: sweep.table(name, {"config_hash": key}),
        config=lambda key: read_yaml(out_dir / "runs" / key / "config.yaml"),
    )
    claims, points = claims_table(stored)
    runs_md, claims_md = markdown(runs), markdown(claims)
    for name, text in (("claims.md", claims_md + "\n"), ("runs.md", runs_md + "\n")):
        atomic_write(out_dir / name, lambda tmp, text=text: tmp.write_text(text))
    atomic_write(out_dir / "claims.csv", lambda tmp: claims.to_csv(tmp, index=False))
    atomic_write(out_dir / "claim_points.csv", lambda tmp: points.to_csv(tmp, index=False))
    cells = sweep.geometric[sweep.geometric["part"].isin(index["part"].unique())]
    figure = paper_serving_figure(cells, out_dir / "serving.png")
    print("\nRequests each run received (Table 1's statistics) and its mean KV occupancy:\n")
    print(runs_md)
    print("\nThe paper's claims:\n")
    print(claims_md)
    print(f"\nagreement over {len(claims)} rows: {grade_counts(claims)}")
    written = "claims.md, claims.csv, claim_points.csv, runs.md" + (", serving.png" if figure else "")
    print(f"\nwrote {written} to {out_dir}/")
    if args.readme:
        replace_block(args.readme, claims_md)
        print(f"rewrote the claims table in {args.readme}")
    return report_failures(outcome)


def readme_text(path: Path) -> str:
    """The text of the README the claims table goes into (``sim.files.marked_text``)."""
    from sim.files import marked_text

    return marked_text(path, README_BEGIN, README_END, f"--readme {path}")


def replace_block(path: Path, block: str) -> None:
    """Put ``block`` between the README's claims markers (``sim.files.replace_marked``)."""
    from sim.files import replace_marked

    replace_marked(path, README_BEGIN, README_END, block, f"--readme {path}")
