"""List the committed studies (current or stale), re-make them, or refresh the pages' stale marks.

    llumsim studies                        # each study: current/stale, engine, when, how long, its commands
    llumsim studies remake [--stale] [NAME ...]   # re-make them with their own commands (resumable)
    llumsim studies marks [--check]        # rewrite (or check) the stale marks in README.md and docs/

A study is stale when a canonical run of its engines hashes differently from when it was made
(``sim.studies.fingerprint``). ``remake`` first re-computes those hashes, and refuses if the
record (benchmarks/request_hashes.json) does not describe this checkout; then it runs each
study's commands in order, printing its progress. The commands keep their runs in sweep
stores, so an interrupted remake resumes where it stopped: rerun it. A study's record is
rewritten only once all its commands have finished.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from sim.config import ConfigError
from sim.studies.catalog import PAGES, Study, load_study, render_marks, studies, unmarked_blocks
from sim.studies.fingerprint import CANONICAL_RUNS, RECORDED, REPO, engines_of, fingerprint, recorded_hashes, request_hash, short


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=["list", "remake", "marks"], default="list",
                        help="list (default), remake, or marks")
    parser.add_argument("names", nargs="*", metavar="NAME", help="remake: these studies only")
    parser.add_argument("--stale", action="store_true", help="remake: the stale studies only")
    parser.add_argument("--check", action="store_true", help="marks: change nothing; exit 1 if a page's marks are out of date")
    parser.add_argument("--results", type=Path, default=REPO / "results", help="the studies' folder (default: results/)")
    parser.add_argument("--hashes", type=Path, default=RECORDED,
                        help="the canonical runs' recorded hashes (default: benchmarks/request_hashes.json)")
    parser.add_argument("--pages", type=Path, nargs="+", default=PAGES, help="pages with stale marks (default: README.md, docs/*.md)")
    parser.add_argument("--trust-record", action="store_true",
                        help="remake: stamp studies with the recorded hashes without re-computing them first")


def run(args: argparse.Namespace) -> int:
    hashes = _read_hashes(args.hashes)
    found = studies(args.results)
    if args.action == "list":
        return _list(found, hashes)
    if args.action == "marks":
        return _marks(found, hashes, args.pages, check=args.check)
    unknown = sorted(set(args.names) - {s.name for s in found})
    if unknown:
        raise ConfigError(f"no study named {', '.join(unknown)} under {args.results} (llumsim studies lists them)")
    chosen = [s for s in found if (not args.names or s.name in args.names) and (not args.stale or s.moved(hashes))]
    if not chosen:
        print("nothing to re-make: every study chosen is current")
        return 0
    if not args.trust_record:
        _verify(sorted({e for s in chosen for e in s.engines}), hashes, args.hashes)
    for number, study in enumerate(chosen, 1):
        code = _remake(study, hashes, f"[{number}/{len(chosen)}]", args.results)
        if code:
            return code
    return _marks(studies(args.results), hashes, args.pages, check=False)


def _read_hashes(path: Path) -> dict[str, str]:
    try:
        return recorded_hashes(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--hashes {path}: cannot be read as the recorded hashes ({exc})") from None


def _took(seconds: float | None) -> str:
    return "not measured" if seconds is None else f"{seconds:,.0f} s"


def _list(found: list[Study], hashes: dict[str, str]) -> int:
    stale = [s for s in found if s.moved(hashes)]
    for study in found:
        runs = study.moved(hashes)
        status = f"STALE (moved: {', '.join(runs)})" if runs else "current"
        print(f"{study.name}: {status}")
        print(f"  made {study.made} on {'+'.join(study.engines)} @ {short(study.fingerprint)} in {_took(study.seconds)}")
        for command in study.commands:
            print(f"  $ {command}")
    known = [s.seconds for s in stale if s.seconds is not None]
    print(f"{len(found)} studies, {len(stale)} stale" + (
        f": llumsim studies remake --stale (as last made: {sum(known):,.0f} s"
        f"{f', {len(stale) - len(known)} not measured' if len(known) < len(stale) else ''})" if stale else ""))
    return 0


def _marks(found: list[Study], hashes: dict[str, str], pages: list[Path], check: bool) -> int:
    known = {s.name: s for s in found}
    rewritten = {}
    for page in pages:  # every page checked before any is written
        text = page.read_text(encoding="utf-8")
        missing = unmarked_blocks(text, known)
        if missing:
            raise ConfigError(f"{page}: shows {', '.join(missing)} without its <!-- stale:NAME --> mark")
        new = render_marks(text, known, hashes, str(page))
        if new != text:
            rewritten[page] = new
    behind = list(rewritten)
    for page, new in rewritten.items():
        if not check:
            page.write_text(new, encoding="utf-8")
    verb = "out of date" if check else "rewrote"
    print(f"stale marks: {verb} in {', '.join(map(str, behind))}" if behind else "stale marks: every page up to date")
    return 1 if check and behind else 0


def _verify(engines: list[str], hashes: dict[str, str], record: Path) -> None:
    """Recompute the canonical runs of ``engines``; the record must match this checkout."""
    runs = [run for run in CANONICAL_RUNS if engines_of(run) & set(engines)]
    for number, run in enumerate(runs, 1):
        digest, wall = request_hash(*CANONICAL_RUNS[run])
        print(f"checking the record [{number}/{len(runs)}] {run}: {wall:.1f} s", flush=True)
        if hashes.get(run) != digest:
            raise ConfigError(
                f"{record}: {run} hashes {digest[:12]} in this checkout, recorded {str(hashes.get(run))[:12]}; re-record "
                f"it (python benchmarks/request_hashes.py --write {record}) before re-making studies")


def _argv(command: str, store: Path) -> list[str]:
    """A study's command as this interpreter runs it: ``llumsim`` and ``python`` are this
    environment's, ``{store}`` the study's sweep store."""
    argv = shlex.split(command.replace("{store}", str(store)))
    if argv[0] == "llumsim":
        return [sys.executable, "-m", "sim", *argv[1:]]
    if argv[0] == "python":
        return [sys.executable, *argv[1:]]
    return argv


def _remake(study: Study, hashes: dict[str, str], progress: str, results: Path) -> int:
    """Run a study's commands in order; on success record it as made now, by this checkout."""
    store = results / ".stores" / study.name
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    print(f"{progress} {study.name}: {len(study.commands)} step(s); last made in {_took(study.seconds)}", flush=True)
    started, made = time.monotonic(), datetime.date.today().isoformat()
    for step, command in enumerate(study.commands, 1):
        print(f"{progress} {study.name} step {step}/{len(study.commands)}: $ {command}", flush=True)
        code = subprocess.run(_argv(command, store), cwd=REPO, env=env).returncode
        if code:
            print(f"llumsim: error: {study.name}: step {step} exited {code}; its runs are stored: rerun "
                  f"`llumsim studies remake {study.name}` to resume", file=sys.stderr)
            return 1
    seconds = round(time.monotonic() - started, 1)
    study = load_study(study.folder)  # a command may rewrite the folder; keep what it recorded
    study.fingerprint, study.made, study.seconds = fingerprint(study.engines, hashes), made, seconds
    study.write()
    print(f"{progress} {study.name}: made in {seconds:,.0f} s on {'+'.join(study.engines)} @ {short(study.fingerprint)}")
    return 0
