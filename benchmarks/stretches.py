"""Decode stretches against stepping every decode step as its own event: events per request,
CPU seconds and CPU milliseconds per simulated minute, on the same requests, with the request
tables compared (they must be identical: the fast path is exact or it is a bug).

Two sets of runs, each path in this process one after the other (the replica model warm for
both; ``time.process_time``, so a second job on the machine slows both alike):

* ``--light`` (default): benchmark (e) of ``throughput.py`` — 64 LLaMA-7B instances on A10,
  ShareGPT lengths shaped to the paper's Table 1, Poisson at 1 req/s for ``--hours`` — with
  INFaaS++ (no migration: stretches run) and Llumnix (its pairing cadence reads every
  instance every ``pairing_every`` x instances step ends: stretches stay off, so both paths
  are the same loop; shown so the figure is not read as Llumnix's).
* ``--probes``: the K map's probes (``experiments/grids/k_map.yaml``'s settings: 16 instances,
  5,000 requests) at 1, 1.76, 3 and 5 req/s for each of its schemes.

Usage (from the repository root, with the compiled engine built: ``llumsim native build``):
    .venv/bin/python benchmarks/stretches.py [--light] [--probes] [--hours 0.25]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from throughput import base_config  # noqa: E402  (the benchmark's own set-ups)

from sim.config import load_config  # noqa: E402
from sim.engine import Simulation  # noqa: E402
from sim.metrics import request_table  # noqa: E402
from sim.sweep import cell  # noqa: E402

K_MAP = Path("experiments/configs/slo_tiers.yaml")
K_MAP_SETTINGS = [
    "cluster.instances=16",
    "workload.num_requests=5000",
    "workload.priority.sampler=enterprise",
    "workload.priority.tiers=4",
    "scheduler.dispatch=load",
    "slo.ladder=null",
    "slo.contract={ttft: [1.0, 32.0], tpot: [0.1, 0.8], classes: 3}",
]
K_MAP_SCHEMES = {
    "infaas++": ["scheduler.name=infaas++"],
    "llumnix": ["scheduler.name=llumnix"],
    "llumnix-headroom": ["scheduler.name=llumnix", "scheduler.priority.mode=headroom"],
}


def run(config, stretches: bool) -> dict:
    """One run on one path: CPU seconds of its event loop, events, and its table's hash."""
    simulation = Simulation(config, load_pool_model=cell.replica_model, decode_stretches=stretches)
    started = time.process_time()
    result = simulation.run()
    cpu = time.process_time() - started
    table = request_table(result).to_csv(index=False).encode()
    return {
        "cpu": cpu,
        "events": next(simulation.env._eid),  # simpy events scheduled (ids are a counter)
        "requests": len(result.requests),
        "minutes": result.end_time / 60,
        "stretches": simulation.steps.stretches,
        "table": hashlib.sha256(table).hexdigest()[:16],
    }


def compare(label: str, config) -> tuple[float, float]:
    stepped, stretched = run(config, False), run(config, True)
    same = "same" if stepped["table"] == stretched["table"] else "DIFFERENT"
    for path, r in (("stepped", stepped), ("stretched", stretched)):
        print(
            f"  {label:24s} {path:9s} events/request {r['events'] / r['requests']:7.1f}  CPU {r['cpu']:6.2f} s"
            f"  {1000 * r['cpu'] / r['minutes']:7.1f} ms per simulated minute"
            + (f"  (stretches {'on' if r['stretches'] else 'off'}: table {same})" if path == "stretched" else "")
        )
    return stepped["cpu"], stretched["cpu"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--light", action="store_true", help="64 instances at 1 req/s (default)")
    parser.add_argument("--probes", action="store_true", help="the K map's probes")
    parser.add_argument("--hours", type=float, default=0.25, help="simulated span of the light runs")
    args = parser.parse_args()
    light = args.light or not args.probes
    print(f"$ {' '.join([Path(sys.executable).name, *sys.argv])}")
    if light:
        print(f"64 instances at 1 req/s for {args.hours} h (throughput.py's (e)):")
        for scheduler in ("infaas++", "llumnix"):
            config = load_config(None, base=base_config(int(3600 * args.hours), 64, 1.0, scheduler))
            compare(scheduler, config)
    if args.probes:
        print("the K map's probes (16 instances, 5,000 requests):")
        total = [0.0, 0.0]
        for scheme, settings in K_MAP_SCHEMES.items():
            for rate in (1.0, 1.76, 3.0, 5.0):
                config = load_config(K_MAP, K_MAP_SETTINGS + settings + [f"workload.arrival.rate={rate}"])
                stepped, stretched = compare(f"{scheme} {rate} req/s", config)
                total[0] += stepped
                total[1] += stretched
        print(f"  all probes: CPU {total[0]:.1f} s stepped, {total[1]:.1f} s stretched ({total[0] / total[1]:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
