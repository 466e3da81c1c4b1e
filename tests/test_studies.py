"""Committed studies know when they are stale (``llumsim studies``): a study records its
engines' canonical request hashes; a change to one of them — and only to one of its own
engines — lists it stale and marks every page quoting it; ``remake`` runs its commands and
clears the mark; the committed pages' marks are up to date."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from sim.cli.main import main
from sim.cli.studies import _verify
from sim.config import ConfigError
from sim.studies.catalog import Study, load_study
from sim.studies.fingerprint import CANONICAL_RUNS, RECORDED, engines_of, fingerprint, recorded_hashes

OLD_ENGINE = "vllm-0.1.2"


def tiny_study(tmp_path: Path, commands: list[str]) -> tuple[Path, Path, Path]:
    """A study recorded as made by this checkout, the hashes it was made with, and a page
    quoting it: (results, hashes, page)."""
    results, hashes = tmp_path / "results", tmp_path / "request_hashes.json"
    hashes.write_text(RECORDED.read_text())
    (results / "tiny").mkdir(parents=True)
    Study("tiny", commands, [OLD_ENGINE], fingerprint([OLD_ENGINE], recorded_hashes(hashes)), "2026-12-01", 3.0,
          ["tiny"], results / "tiny").write()
    page = tmp_path / "page.md"
    page.write_text("# Tiny\n\n<!-- stale:tiny --><!-- /stale:tiny -->\n\n<!-- tiny:begin -->\n| a |\n<!-- tiny:end -->\n")
    return results, hashes, page


def studies(action: str, results: Path, hashes: Path, page: Path, *more: str) -> int:
    return main(["studies", action, *more, "--results", str(results), "--hashes", str(hashes), "--pages", str(page)])


def move(hashes: Path, run: str) -> None:
    """As if a change to the physics moved ``run``'s request table (and the record followed)."""
    record = json.loads(hashes.read_text())
    record[run] = "0" * 64
    hashes.write_text(json.dumps(record))


def test_a_study_goes_stale_when_its_engines_physics_moves_and_its_page_is_marked(tmp_path, capsys):
    results, hashes, page = tiny_study(tmp_path, ["python -c pass"])
    assert studies("list", results, hashes, page) == 0
    assert "tiny: current" in capsys.readouterr().out
    assert studies("marks", results, hashes, page, "--check") == 0

    move(hashes, "v1-quickstart")  # only the other engine's code changed: still current
    assert studies("list", results, hashes, page) == 0
    assert "tiny: current" in capsys.readouterr().out

    move(hashes, "quickstart")
    assert studies("list", results, hashes, page) == 0
    out = capsys.readouterr().out
    assert "tiny: STALE (moved: quickstart)" in out and "1 studies, 1 stale" in out
    assert studies("marks", results, hashes, page, "--check") == 1  # the page lags: a test catches it
    assert studies("marks", results, hashes, page) == 0
    text = page.read_text()
    assert f"**Stale:** made on engine {OLD_ENGINE} @" in text and "(2026-12-01)" in text
    assert "llumsim studies remake tiny" in text and text.index("Stale") < text.index("<!-- tiny:begin -->")
    assert studies("marks", results, hashes, page, "--check") == 0


def test_a_page_showing_a_studys_block_without_its_mark_is_refused(tmp_path, capsys):
    results, hashes, page = tiny_study(tmp_path, ["python -c pass"])
    page.write_text("<!-- tiny:begin -->\n| a |\n<!-- tiny:end -->\n")
    assert studies("marks", results, hashes, page) == 2
    assert f"{page}: shows tiny without its <!-- stale:NAME --> mark" in capsys.readouterr().err
    page.write_text("<!-- stale:nosuch --><!-- /stale:nosuch -->\n")
    assert studies("marks", results, hashes, page) == 2
    assert "names no study" in capsys.readouterr().err


def test_remake_runs_a_stale_studys_commands_resumably_and_clears_its_mark(tmp_path, capsys):
    write = "import pathlib, sys; p = pathlib.Path(sys.argv[1]); p.mkdir(parents=True, exist_ok=True); (p / 'made').touch()"
    failing = f"python -c {shlex.quote('raise SystemExit(3)')}"
    results, hashes, page = tiny_study(tmp_path, [f"python -c {shlex.quote(write)} {{store}}", failing])
    move(hashes, "quickstart")
    assert studies("marks", results, hashes, page) == 0

    # a step fails: the study stays stale (its record untouched) and the message says how to resume
    assert studies("remake", results, hashes, page, "--stale", "--trust-record") == 1
    assert "rerun `llumsim studies remake tiny` to resume" in capsys.readouterr().err
    assert (results / ".stores" / "tiny" / "made").is_file()  # the first step ran, into its store
    assert load_study(results / "tiny").moved(recorded_hashes(hashes)) == ["quickstart"]

    study = load_study(results / "tiny")
    study.commands = study.commands[:1]
    study.write()
    assert studies("remake", results, hashes, page, "--stale", "--trust-record") == 0
    out = capsys.readouterr().out
    assert "[1/1] tiny step 1/1: $ python -c" in out
    made = load_study(results / "tiny")
    assert made.moved(recorded_hashes(hashes)) == [] and made.fingerprint["quickstart"] == "0" * 64
    assert made.made != "2026-12-01" and made.seconds is not None
    assert "Stale" not in page.read_text()  # the mark cleared
    assert studies("remake", results, hashes, page, "--stale") == 0
    assert "nothing to re-make" in capsys.readouterr().out


def test_remake_refuses_a_record_that_does_not_describe_the_checkout(tmp_path):
    hashes = recorded_hashes(RECORDED)
    hashes["v1-quickstart"] = "0" * 64
    with pytest.raises(ConfigError, match="v1-quickstart hashes .* recorded 000000000000; re-record it"):
        _verify(["vllm-v1"], hashes, tmp_path / "request_hashes.json")


def test_every_canonical_run_is_recorded_and_each_engine_has_runs():
    assert set(recorded_hashes(RECORDED)) == set(CANONICAL_RUNS)
    engines = set().union(*(engines_of(run) for run in CANONICAL_RUNS))
    assert {"vllm-0.1.2", "vllm-v1"} <= engines


def test_the_committed_pages_show_every_stale_study_marked(capsys):
    # a physics change re-records benchmarks/request_hashes.json; then this fails until
    # `llumsim studies marks` marks the studies it staled on every page that quotes them
    assert main(["studies", "marks", "--check"]) == 0, capsys.readouterr().out


def test_every_committed_study_has_a_record(capsys):
    # the committed studies are the folders .gitignore lets into the repository
    repo = Path(__file__).resolve().parents[1]
    committed = set(re.findall(r"^!results/([\w-]+)/$", (repo / ".gitignore").read_text(), re.M))
    recorded = {path.parent.name for path in (repo / "results").glob("*/study.json")}
    assert committed and committed == recorded
    assert main(["studies"]) == 0
    assert f"{len(recorded)} studies" in capsys.readouterr().out


def test_a_study_folder_with_its_record_is_still_a_results_folder(tmp_path):
    # a remake compacts into the committed folder, which holds the study's record beside the
    # results: the record must not make the folder look like someone else's
    from sim.studies.catalog import MANIFEST
    from sim.sweep.folder import prepare_results_folder

    (tmp_path / "index.parquet").write_bytes(b"")
    (tmp_path / "pd_ratio.png").write_bytes(b"")  # a study's own plot beside its results
    with pytest.raises(ConfigError, match="not a llumsim results folder"):
        prepare_results_folder(tmp_path)
    (tmp_path / MANIFEST).write_text("{}")
    assert prepare_results_folder(tmp_path) == tmp_path.resolve()
