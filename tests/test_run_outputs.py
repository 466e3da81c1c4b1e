"""A run folder holds one whole run: written atomically, replaced whole, never mixed with
another run or left half-written by kill -9; SIGTERM stops a run as Ctrl-C does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sim.cli.main import main
from sim.engine import Simulation

REPO = Path(__file__).resolve().parents[1]
CONFIG = """\
name: small
cluster: {instances: 2}
scheduler: {name: llumnix}
workload: {source: synthetic, num_requests: 300, arrival: {rate: 5.0}}
"""


@pytest.fixture
def config(tmp_path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(CONFIG)
    return path


def run(config: Path, out: Path, *flags: str) -> int:
    return main(["run", str(config), "--quiet", "--out", str(out), *flags])


def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_rerun_replaces_the_whole_folder(config, tmp_path, capsys):
    out = tmp_path / "out"
    assert run(config, out, "--set", "output.timeline=true") == 0
    assert {"timeline.json", "latency.png"} <= set(os.listdir(out))
    assert run(config, out, "--no-plots", "--set", "workload.num_requests=100") == 0
    assert "(replacing the previous run there)" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(os.listdir(out)) == sorted(summary["files"])  # no stale plots or timeline
    assert summary["requests"]["total"] == 100
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # nothing left over


def test_a_folder_with_other_files_is_refused_before_the_run(config, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert run(config, out) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "notes.txt" in err and "not a llumsim run folder" in err
    assert os.listdir(out) == ["notes.txt"]


KILLED_WHILE_WRITING = """\
import os, signal, sys
import sim.metrics.plots as plots

def die(*args, **kwargs):  # the CSVs, config.yaml and summary are staged by now
    os.kill(os.getpid(), signal.SIGKILL)

plots.plot_latency_cdfs = die
from sim.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def killed_while_writing(config: Path, out: Path, *flags: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WHILE_WRITING, "run", str(config), "--quiet", "--out", str(out), *flags],
        cwd=REPO,
        capture_output=True,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()


def test_kill_9_while_writing_leaves_the_previous_complete_run_or_nothing(config, tmp_path):
    fresh = tmp_path / "fresh"
    killed_while_writing(config, fresh)
    assert not fresh.exists()  # no run folder at all, not a smaller-looking one
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    assert leftovers and (leftovers[0] / "requests.csv").exists()  # it was killed mid-writing

    kept = tmp_path / "kept"
    assert run(config, kept, "--set", "workload.num_requests=100") == 0
    before = contents(kept)
    killed_while_writing(config, kept)  # a 300-request run dies replacing the 100-request one
    assert contents(kept) == before

    # the next run into a folder clears what killed writers of that folder left
    assert run(config, fresh, "--no-plots") == 0
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith("-fresh")] == []


def interrupting_at(seconds: float, signum: int):
    """``simulate`` as the CLI calls it, but the process gets ``signum`` at simulated time
    ``seconds`` (so two runs stop at the same event)."""

    def simulate(config, show_progress=False):
        simulation = Simulation(config)
        simulation.at(seconds, lambda: os.kill(os.getpid(), signum))
        return simulation.run()

    return simulate


def test_sigterm_writes_what_ctrl_c_writes(config, tmp_path, monkeypatch):
    written = {}
    for signum, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        monkeypatch.setattr("sim.engine.simulate", interrupting_at(20.0, signum))  # run imports it from there
        out = tmp_path / signum.name
        assert run(config, out, "--no-plots") == code
        written[signum] = contents(out)
    ctrl_c, term = written[signal.SIGINT], written[signal.SIGTERM]
    assert ctrl_c.keys() == term.keys()
    assert ctrl_c["requests.csv"] == term["requests.csv"]
    summary = json.loads(term["summary.json"])
    assert summary["interrupted"] is True
    requests = summary["requests"]
    assert requests["unfinished"] > 0 and requests["not_arrived"] > 0
    assert requests["total"] + requests["not_arrived"] == 300  # every request is counted
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is put back
