"""Bad input exits with code 2 and one line naming the key or file; never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sim.cli.main import main

QUICKSTART = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "quickstart.yaml"


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["cluster.instancs=4"], "cluster.instancs"),
        (["scheduler.name=fifo"], "scheduler.name"),
        (["workload.arrival.rate=-1"], "workload.arrival.rate"),
        (["workload.trace=traces/nope.csv"], "traces/nope.csv"),
        (["cluster.model=gpt-9"], "gpt-9"),
        (["cluster.max_batch_size=400"], "cluster.max_batch_size"),
        (["cluster.max_batched_tokens=20000"], "max_batched_tokens"),
        (["faults=[{kind: instance_failure, at: 1, instance: 99}]"], "faults[0].instance"),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_the_problem(overrides, named, capsys, tmp_path):
    args = ["run", str(QUICKSTART), "--quiet", "--out", str(tmp_path)]
    for override in overrides:
        args += ["--set", override]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and named in err, err


def test_missing_config_file_is_named(capsys):
    assert main(["run", "no/such/config.yaml"]) == 2
    assert "no/such/config.yaml" in capsys.readouterr().err


def test_python_dash_m_sim_prints_no_traceback_on_bad_input():
    done = subprocess.run(
        [sys.executable, "-m", "sim", "run", str(QUICKSTART), "--set", "workload.arrival.rate=-1"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("llumsim: error:")


HEAVY = ("matplotlib", "numpy", "pandas", "ray", "scipy", "sklearn", "vidur")
IMPORTED = """
import sys
from sim.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["sweep", "--help"], ["capacity", "--help"], ["paper", "--help"], ["run", "--help"], ["run", "bad"]],
    ids=lambda argv: " ".join(argv),
)
def test_help_and_a_config_error_import_none_of_the_heavy_libraries(argv, tmp_path):
    """What makes ``--help`` and a config error return at once: scipy, matplotlib, pandas,
    Vidur, Ray and scikit-learn are imported only by the code that uses them."""
    if argv == ["run", "bad"]:
        bad = tmp_path / "bad.yaml"
        bad.write_text("workload: {bogus: 1}\n")
        argv = ["run", str(bad)]
    done = subprocess.run([sys.executable, "-c", IMPORTED, *argv], capture_output=True, text=True, check=True)
    imported = set(done.stdout.split())
    assert "sim" in imported and not imported & set(HEAVY), imported & set(HEAVY)
