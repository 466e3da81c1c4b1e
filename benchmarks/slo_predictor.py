"""How far the SLO predictor's TTFT is from the simulated one (not a timed test).

    python benchmarks/slo_predictor.py [CONFIG] [--dispatch RULE ...] [--set key=value ...]

Runs CONFIG (default experiments/configs/slo_tiers.yaml) once per dispatch rule (default:
slo-aware and the artifact's load). At every dispatch it records the TTFT that
``sim.cluster.slo_predictor.predict`` gives on the instance the rule chose, from the same
report and pending demand the rule saw; after the run it compares each prediction with the
request's simulated TTFT (first token − arrival) and prints the median and P90 relative
error |predicted − simulated| / simulated, and the share of requests predicted too early.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from sim.cluster.slo_predictor import predict
from sim.config import load_config
from sim.engine import Simulation
from sim.instance.request import Request
from sim.metrics import request_table

REPO = Path(__file__).resolve().parents[1]


class _RecordingRule:
    """The scheduler's dispatch rule, with the prediction for each choice written down."""

    def __init__(self, rule: Any, predictions: list[float]) -> None:
        self._rule = rule
        self._predictions = predictions

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rule, name)

    def choose(self, view, request) -> int:
        target = self._rule.choose(view, request)
        predicted = predict(view.reports.get(target), view.pending.get(target, 0), request.tokens, view.models[target])
        self._predictions.append(predicted.ttft)
        return target


def _record_dispatches(simulation: Simulation) -> list[int]:
    """The id of each request the global scheduler dispatches, in order (dispatches and
    predictions pair in order): the run's dispatcher, wrapped."""
    dispatcher = simulation.dispatcher
    dispatch = dispatcher.dispatch
    dispatched: list[int] = []

    def recording(request: Request) -> None:
        if dispatcher.scheduler_up and simulation.scheduler.instances:
            dispatched.append(request.id)
        dispatch(request)

    dispatcher.dispatch = recording
    return dispatched


def predictor_error(config_path: Path, dispatch: str, overrides: list[str]) -> dict[str, float]:
    config = load_config(config_path, [*overrides, f"scheduler.dispatch={dispatch}"])
    simulation = Simulation(config, root=REPO)
    dispatched = _record_dispatches(simulation)
    predictions: list[float] = []
    simulation.scheduler.dispatch_rule = _RecordingRule(simulation.scheduler.dispatch_rule, predictions)
    requests = request_table(simulation.run()).set_index("id")
    simulated = requests.loc[dispatched, "prefill_latency"].to_numpy(dtype=float)
    predicted = np.array(predictions)
    seen = ~np.isnan(simulated)  # aborted before a first token: nothing to compare
    error = np.abs(predicted[seen] - simulated[seen]) / simulated[seen]
    return {
        "requests": int(seen.sum()),
        "median": float(np.median(error)),
        "p90": float(np.percentile(error, 90)),
        "early": float((predicted[seen] < simulated[seen]).mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", type=Path, default=REPO / "experiments/configs/slo_tiers.yaml")
    parser.add_argument("--dispatch", action="append", help="dispatch rules (default: slo-aware, load)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    print(f"{'dispatch':<12}{'requests':>10}{'median rel. error':>19}{'P90 rel. error':>16}{'predicted early':>17}")
    for dispatch in args.dispatch or ["slo-aware", "load"]:
        error = predictor_error(args.config, dispatch, args.overrides)
        print(
            f"{dispatch:<12}{error['requests']:>10}{error['median'] * 100:>18.1f}%{error['p90'] * 100:>15.1f}%"
            f"{error['early'] * 100:>16.1f}%"
        )


if __name__ == "__main__":
    main()
