"""benchmarks/against_revision.py runs its children on whichever revision it checks out, with
the calls written into them: those calls must run on this checkout too, or the benchmark
breaks on the first revision after a change of API, where it is needed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import against_revision  # noqa: E402

QUICKSTART = "experiments/configs/quickstart.yaml"


def run_child(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, QUICKSTART, *args], cwd=ROOT, env=against_revision._environment(ROOT, True),
        capture_output=True, text=True, timeout=300,
    )


def test_the_timed_child_prints_one_positive_event_loop_time():
    done = run_child(against_revision.CHILD, "infaas++", "40", "2")
    assert done.returncode == 0, done.stderr[-2000:]
    assert float(done.stdout.strip().splitlines()[-1]) > 0


def test_the_counted_child_enters_the_event_loop_through_operator_call_once():
    """callgrind counts what runs inside ``operator.call``: exactly one event loop must."""
    code = (
        "import operator\n"
        "real = operator.call\n"
        "operator.call = lambda f, *a: (print('entered', f.__qualname__), real(f, *a))[1]\n"
        + against_revision.COUNTED_CHILD
    )
    done = run_child(code, "infaas++", "40")
    assert done.returncode == 0, done.stderr[-2000:]
    calls = [line for line in done.stdout.splitlines() if line.startswith("entered")]
    assert calls == ["entered Simulation.run"]


def test_callgrinds_collected_line_is_read_by_event_name():
    plain = "==1== Events    : Ir\n==1== Collected : 2174434172\n==1==\n"
    assert against_revision.collected_events(plain) == {"Ir": 2174434172}
    simulated = "==2== Collected : 2172511711 647204392 376669535 66685663 15957609 4883759 147 0 48833\n"
    events = against_revision.collected_events(simulated)
    assert (events["Ir"], events["I1mr"], events["D1mr"], events["D1mw"]) == (2172511711, 66685663, 15957609, 4883759)
    assert against_revision.collected_events("==3== valgrind: failed to start\n") == {}
