"""The paper's claims table: each computation on a hand-built index, and the command end to
end on two smoke parts."""

from __future__ import annotations

import pandas as pd
import pytest

from sim.cli.main import main
from sim.sweep.paper import (
    mean_reduction,
    points,
    range_agreement,
    ratio_agreement,
    saving_at_equal_tail,
    up_to,
)


def index(rows):
    return pd.DataFrame(rows)


def serving(part, scheduler, rate, p99, loss=0.0):
    return {
        "part": part,
        "scheduler": scheduler,
        "workload.arrival.rate": rate,
        "latency.prefill_latency.p99": p99,
        "latency.preemption_loss.mean": loss,
    }


def test_ratios_are_baseline_over_llumnix_at_the_same_point_and_up_to_takes_the_maximum():
    rows = [
        serving("serving-M-M", "infaas++", 7.4, 6.0, loss=1.0),
        serving("serving-M-M", "llumnix", 7.4, 2.0, loss=0.5),
        serving("serving-M-M", "infaas++", 7.8, 30.0, loss=2.0),
        serving("serving-M-M", "llumnix", 7.8, 2.0, loss=0.0),
        serving("serving-L-L", "infaas++", 2.6, 4.0),  # no Llumnix point: ignored
    ]
    table = points(index(rows), ["serving-M-M", "serving-L-L"], "latency.prefill_latency.p99", "infaas++")
    assert list(table["ratio"]) == [3.0, 15.0]
    found = up_to(index(rows), ["serving-M-M"], "latency.prefill_latency.p99", "infaas++", 14.8)
    assert found.value == "15×" and found.where == "serving-M-M at 7.8" and found.agreement == "close"
    # mean over points of 1 - L/B: (0.5 + 1.0) / 2
    reduction = mean_reduction(index(rows), ["serving-M-M"], "latency.preemption_loss.mean", "infaas++", 0.704)
    assert reduction.value == "−75%" and reduction.agreement == "close"


def test_agreement_classes():
    assert ratio_agreement(10.0, 14.8) == "close" and ratio_agreement(3.0, 14.8) == "direction"
    assert ratio_agreement(1.0, 2.0) == "no"
    assert range_agreement(1.1, 1.6, (1.2, 1.5)) == "close"
    assert range_agreement(0.5, 10.0, (2.9, 8.6)) == "direction"  # a loss at some CV


def test_cost_saving_is_read_at_equal_p99_prefill_on_the_llumnix_line():
    rows = []
    for t, (p99, cost) in {5: (20.0, 8.0), 45: (5.0, 10.0)}.items():
        rows.append({"part": "autoscaling", "scheduler": "llumnix", "autoscale.low": t,
                     "latency.prefill_latency.p99": p99, "cost.average_instances": cost})
    rows.append({"part": "autoscaling", "scheduler": "infaas++", "autoscale.low": 45,
                 "latency.prefill_latency.p99": 12.5, "cost.average_instances": 15.0})
    found = saving_at_equal_tail(index(rows), 0.36)
    assert found.value == "40%"  # Llumnix at P99 12.5 s: 9 instances, against 15


def test_the_command_runs_parts_and_rewrites_the_readme_block(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("before\n<!-- paper-claims:begin -->\nSTALE TABLE\n<!-- paper-claims:end -->\nafter\n")
    args = ["paper", "--smoke", "--only", "serving-S-S", "--jobs", "1", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "paper_smoke"), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "STALE TABLE" not in text
    assert "| C20 | 11 |" in text and "not run" in text  # priorities etc. were not run
    runs = (tmp_path / "paper_smoke" / "runs.md").read_text()
    assert runs.count("serving-S-S") == 2
    assert (tmp_path / "paper_smoke" / "serving.png").stat().st_size > 10_000  # a drawn panel
    with pytest.raises(SystemExit):
        main(["paper", "--only"])
    assert main(["paper", "--smoke", "--only", "nope"]) == 2
