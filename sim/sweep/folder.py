"""A results folder (``sweep``, ``capacity``, ``paper``): checked, then created, before
anything runs — the same check ``run`` makes of its folder (``sim.files``), with the names
these commands write instead of a run's.
"""

from __future__ import annotations

from pathlib import Path

from sim.files import check_output_folder, make_folder

RESULTS_FOLDERS = frozenset({"runs", "tables"})  # the store (sim.sweep.store); a compact copy's kept tables (sim.presentation.compact)
RESULTS_FILES = frozenset(
    {
        "index.parquet",  # sim.sweep.index
        "index.csv",
        "aggregate.parquet",
        "aggregate.csv",
        "sweep.json",  # sim.sweep.runner
        "capacity.json",  # sim.sweep.capacity
        "capacity_grid.json",  # sim.sweep.capacity_grid
        "fleet.json",  # sim.sweep.fleet (and fleet-<contract>.json: a fleet study's searches)
        "searches.parquet",
        "searches.csv",
        "floor.parquet",  # its floor checks
        "floor.csv",
        "claims.md",  # sim.cli.paper
        "claims.csv",
        "claim_points.csv",
        "runs.md",
        "serving.png",
    }
)


def is_results_entry(entry: Path) -> bool:
    """Whether ``entry`` is a name these commands write (so a folder of them is theirs); in a
    committed study's folder (one with its record, ``study.json``) every entry is: the study's
    commands wrote them (plots and tables of its own names), and a remake writes there again."""
    if (entry.parent / "study.json").is_file():
        return True
    if entry.name in RESULTS_FOLDERS:
        return entry.is_dir() and not entry.is_symlink()
    fleet_report = entry.name.startswith("fleet-") and entry.suffix == ".json"
    return (entry.name in RESULTS_FILES or fleet_report) and entry.is_file()


def prepare_results_folder(out_dir: Path) -> Path:
    """The resolved ``out_dir``, created and proven writable; a ConfigError naming it when it
    is a file, under a file, a link loop, read-only, someone else's folder, or a root."""
    final = check_output_folder(out_dir, "results", is_results_entry)
    make_folder(final, f"output folder {out_dir}")
    return final
