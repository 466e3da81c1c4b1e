"""The fleet study (issue 33): the cheapest fleet of each kind under contracts of growing
tightness, with and without migration.

    python -m sim.studies.fleet experiments/grids/fleet.yaml --out results/fleet [--jobs 2] [--readme docs/fleet.md]

A fleet grid names a base config, the pools a fleet may use (one SKU each), the fleets (each
a set of pools with the largest count tried), the
schedulers and the contracts, loosest first. For every (fleet, scheduler) the study runs
``sim.sweep.fleet.search_fleet`` (exact: every fleet within the bounds is a candidate,
simulated cheapest first) once per contract on one results store, so a tighter contract
reuses every fleet a looser one simulated. It writes ``fleet.csv`` (one row per fleet,
scheduler and contract: the cheapest counts and their hourly bill, or none within the
bounds), ``fleet.png`` (the bill against the contract, a line per fleet and scheduler) and,
with ``--readme``, the table between the page's fleet markers (docs/fleet.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sim.config import ConfigError, from_dict, SimulationConfig
from sim.config.loader import apply_overrides, read_yaml
from sim.files import atomic_write
from sim.presentation.study_cli import publish
from sim.sweep.capacity import Slo, parse_slo
from sim.sweep.execution import Execution
from sim.sweep.fleet import at_bound, search_fleet

README_BEGIN, README_END = "<!-- fleet:begin -->", "<!-- fleet:end -->"
KEYS = {"name", "description", "base", "set", "seeds", "pools", "fleets", "schedulers", "contracts"}


@dataclass
class FleetGrid:
    name: str
    base: dict
    seeds: int
    pools: dict[str, dict]
    fleets: dict[str, dict[str, int]]
    schedulers: dict[str, dict]
    contracts: dict[str, list[Slo]]

    def config(self, fleet: str, scheduler: str) -> SimulationConfig:
        """The base with the fleet's pools (one instance each: the search sets the counts)
        and the scheduler's keys."""
        data = json.loads(json.dumps(self.base))
        data.pop("cluster", None)
        data["pools"] = [{"name": pool, **self.pools[pool], "instances": 1} for pool in self.fleets[fleet]]
        data["name"] = f"{self.name}-{fleet}-{scheduler}".replace("+", "-")
        overrides = [f"{key}={json.dumps(value)}" for key, value in self.schedulers[scheduler].items()]
        try:
            return from_dict(SimulationConfig, apply_overrides(data, overrides))
        except ConfigError as exc:
            raise ConfigError(f"fleet {fleet}, scheduler {scheduler}: {exc}") from None


def _mapping(value, where: str) -> dict:
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{where}: a mapping with at least one entry")
    return value


def load_fleet_grid(path: Path) -> FleetGrid:
    """A fleet grid from YAML, every key checked, naming the bad one."""
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a fleet grid is a mapping")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]} (known: {', '.join(sorted(KEYS))})")
    missing = sorted({"name", "base", "pools", "fleets", "schedulers", "contracts"} - set(data))
    if missing:
        raise ConfigError(f"{path}: {missing[0]}: required key missing")
    base = read_yaml((path.parent / data["base"]).resolve())
    base = apply_overrides(base, [f"{k}={json.dumps(v)}" for k, v in (data.get("set") or {}).items()])
    pools = _mapping(data["pools"], f"{path}: pools")
    for name, spec in pools.items():
        if "name" in _mapping(spec, f"{path}: pools.{name}"):
            raise ConfigError(f"{path}: pools.{name}.name: a pool is named by its key; leave name out")
    fleets = {}
    for name, bounds in _mapping(data["fleets"], f"{path}: fleets").items():
        if name.replace("+", "-") in {other.replace("+", "-") for other in fleets}:
            raise ConfigError(f"{path}: fleets.{name}: its results folder is another fleet's (+ is written -)")
        for pool, most in _mapping(bounds, f"{path}: fleets.{name}").items():
            if pool not in pools:
                raise ConfigError(f"{path}: fleets.{name}.{pool}: no such pool (pools: {', '.join(pools)})")
            if isinstance(most, bool) or not isinstance(most, int) or not 1 <= most <= 64:
                raise ConfigError(f"{path}: fleets.{name}.{pool}: the largest count must be a whole number in 1..64")
        fleets[name] = dict(bounds)
    contracts = {}
    for name, texts in _mapping(data["contracts"], f"{path}: contracts").items():
        if not isinstance(texts, list) or not texts:
            raise ConfigError(f"{path}: contracts.{name}: a list of SLOs, e.g. [prefill_latency.p99<=2]")
        contracts[name] = [parse_slo(text) for text in texts]
    seeds = data.get("seeds", 1)
    if not isinstance(seeds, int) or not 1 <= seeds <= 20:
        raise ConfigError(f"{path}: seeds: a whole number in 1..20")
    return FleetGrid(str(data["name"]), base, seeds, pools, fleets,
                     _mapping(data["schedulers"], f"{path}: schedulers"), contracts)


def run_study(grid: FleetGrid, out_dir: Path, execution: Execution) -> pd.DataFrame:
    rows = []
    for fleet, bounds in grid.fleets.items():
        for scheduler in grid.schedulers:
            config = grid.config(fleet, scheduler)
            folder = out_dir / f"{fleet}__{scheduler}".replace("+", "-")
            for contract, slos in grid.contracts.items():
                result = search_fleet(config, slos, bounds, folder, grid.seeds, execution, report=f"fleet-{contract}.json")
                best = result.best
                rows.append({
                    "fleet": fleet,
                    "scheduler": scheduler,
                    "contract": contract,
                    "slos": " & ".join(slo.text for slo in result.slos),
                    "counts": "" if best is None else " + ".join(f"{n} {p.name}" for p, n in zip(result.pools, best) if n),
                    "hourly_cost": None if best is None else round(result.cost(best), 4),
                    # pools the answer uses at their bound: no larger fleet there confirmed it
                    "at_bound": "" if best is None else " ".join(at_bound(result.pools, best)),
                    "fleets_simulated": len(result.evaluated),
                    "fleets_skipped": len(result.skipped),  # could not exist (sim.sweep.fleet)
                    "seeds": grid.seeds,
                })
                if execution.progress:
                    print(f"{fleet} {scheduler} {contract}: {rows[-1]['counts'] or 'none'}", file=sys.stderr)
    table = pd.DataFrame(rows)
    text = table.to_csv(index=False)
    atomic_write(out_dir / "fleet.csv", lambda tmp: tmp.write_text(text))
    return table


def markdown(table: pd.DataFrame, contracts: dict[str, list[Slo]]) -> str:
    """The page's table: a row per fleet and scheduler, a column per contract (loosest first)."""
    names = list(contracts)
    lines = [
        "| fleet | scheduler | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for (fleet, scheduler), rows in table.groupby(["fleet", "scheduler"], sort=False):
        cells = []
        for name in names:
            row = rows[rows["contract"] == name].iloc[0]
            bound = " at its bound" if row.get("at_bound") else ""
            cells.append("none within the bounds" if not row["counts"] else f"${row['hourly_cost']:.2f}/h ({row['counts']}{bound})")
        lines.append(f"| {fleet} | {scheduler} | " + " | ".join(cells) + " |")
    legend = "; ".join(f"**{name}**: " + " & ".join(f"`{slo.text}`" for slo in slos) for name, slos in contracts.items())
    return "\n".join(lines) + f"\n\nContracts, loosest first: {legend}."


def plot(table: pd.DataFrame, contracts: dict[str, list[Slo]], path: Path) -> None:
    """The cheapest bill against the contract's tightness, a line per fleet and scheduler."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(contracts)
    fleets = list(dict.fromkeys(table["fleet"]))
    schedulers = list(dict.fromkeys(table["scheduler"]))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for (fleet, scheduler), rows in table.groupby(["fleet", "scheduler"], sort=False):
        costs = [rows[rows["contract"] == n]["hourly_cost"].iloc[0] for n in names]
        k = schedulers.index(scheduler)
        # a colour per fleet, a line style and a small sideways shift per scheduler: equal bills stay visible
        shift = 0.08 * (k - (len(schedulers) - 1) / 2)
        ax.plot([i + shift for i in range(len(names))], costs, ("-", "--", ":")[k % 3], marker="os^"[k % 3],
                color=f"C{fleets.index(fleet)}", label=f"{fleet}, {scheduler}")
    ax.set_xticks(range(len(names)), names)
    ax.set_xlabel("contract (loosest → tightest)")
    ax.set_ylabel("cheapest fleet, $ per hour (list prices)")
    ax.set_title("Cheapest fleet meeting each contract (a gap: none within the bounds)")
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grid", type=Path, help="a fleet grid (experiments/grids/fleet.yaml)")
    parser.add_argument("--out", type=Path, default=Path("results/fleet"))
    parser.add_argument("--jobs", type=int, help="runs in parallel (default: one per core)")
    parser.add_argument("--readme", type=Path, help=f"also rewrite the table between {README_BEGIN} and {README_END}")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args(argv)

    def work() -> tuple[str, str]:
        grid = load_fleet_grid(args.grid)
        table = run_study(grid, args.out, Execution(args.jobs, progress=not args.quiet))
        plot(table, grid.contracts, args.out / "fleet.png")
        return markdown(table, grid.contracts), f"wrote fleet.csv and fleet.png to {args.out}/"

    return publish("fleet", work, args.readme, (README_BEGIN, README_END))


if __name__ == "__main__":
    raise SystemExit(main())
