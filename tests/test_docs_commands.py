"""Every command the README and docs/ show in a ```bash block runs in CI, as shown or as its
smoke-sized variant, so no page shows a command that no longer works; where a page shows a
command's output, the output is compared.

``SHOWN`` is the one table: each shown command (comment stripped) maps to what CI does with
it. A command on a page with no entry fails ``test_every_shown_command_has_an_entry``; an
entry no page shows fails too. Sweeps reuse the session's smoke sweeps (``smoke_results`` in
conftest.py), so resuming one costs only its index.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from sim.studies.catalog import MARK
from tests.sweep_support import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Runs:
    """Run this instead (``{tmp}``: a fresh folder; ``{smoke:GRID}``: that smoke sweep's
    session folder; ``{copy:PATH}``: a copy of that repository file or folder)."""

    command: str


@dataclass(frozen=True)
class Help:
    """A synopsis: ``command --help`` must offer every option and word it shows."""

    command: str


@dataclass(frozen=True)
class Elsewhere:
    """Run by another test, named ``file::function`` (too slow to run twice)."""

    test: str


CI = "the README's test command: .ci/run runs it"
QUICKSTART = "python3.11 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/llumsim run experiments/configs/quickstart.yaml"
SMOKE_RUN = "--set workload.num_requests=500 --out {tmp} --no-plots --quiet"  # 500: the ShareGPT shape needs them
PAPER = "llumsim paper --smoke --out {smoke:paper_smoke} --readme {copy:docs/paper.md} --quiet"
SESSIONS_STUDY = "tests/test_sessions_study.py::test_cache_aware_dispatch_finds_more_cached_and_the_study_writes_its_block"

SHOWN: dict[str, Runs | Help | Elsewhere | str] = {
    # README.md
    QUICKSTART: Runs("llumsim run experiments/configs/quickstart.yaml --set output.dir={tmp}"),  # output compared
    "python3.11 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest": CI,
    "llumsim run experiments/configs/quickstart.yaml --set cluster.engine=vllm-v1":
        Runs(f"llumsim run experiments/configs/quickstart.yaml --set cluster.engine=vllm-v1 {SMOKE_RUN}"),
    "llumsim run experiments/configs/quickstart.yaml --set workload.arrival.rate=8 --set scheduler.name=infaas++":
        Runs(f"llumsim run experiments/configs/quickstart.yaml --set workload.arrival.rate=8 --set scheduler.name=infaas++ {SMOKE_RUN}"),
    "llumsim run experiments/configs/paper/fig11_ll.yaml --set workload.arrival.rate=3.0 --set scheduler.name=infaas++":
        Runs(f"llumsim run experiments/configs/paper/fig11_ll.yaml --set workload.arrival.rate=3.0 --set scheduler.name=infaas++ {SMOKE_RUN}"),
    "llumsim run experiments/configs/trace_replay.yaml": Runs(f"llumsim run experiments/configs/trace_replay.yaml {SMOKE_RUN}"),
    "llumsim run experiments/configs/trace_replay.yaml --set workload.arrival.rate=8":
        Runs(f"llumsim run experiments/configs/trace_replay.yaml --set workload.arrival.rate=8 {SMOKE_RUN}"),
    "llumsim run experiments/configs/trace_replay.yaml --set workload.trace=traces/burstgpt_shaped/burstgpt_shaped_gpt4_conv.csv":
        Runs(f"llumsim run experiments/configs/trace_replay.yaml --set workload.trace=traces/burstgpt_shaped/burstgpt_shaped_gpt4_conv.csv {SMOKE_RUN}"),
    "llumsim sweep experiments/grids/k_sweep_smoke.yaml --jobs 2":
        Runs("llumsim sweep experiments/grids/k_sweep_smoke.yaml --out {smoke:k_sweep_smoke} --quiet"),
    "llumsim sweep experiments/grids/k_study.yaml --jobs 2 --out /tmp/k_study":
        Runs("llumsim sweep experiments/grids/k_study_smoke.yaml --out {smoke:k_study_smoke} --quiet"),
    "python -m sim.studies.findings /tmp/k_study": Runs("python -m sim.studies.findings {copy:smoke:k_study_smoke}"),
    "experiments/k_map.sh results/k_map --jobs 2":
        Elsewhere("tests/test_k_map.py::test_the_map_script_runs_each_grid_into_its_part_then_the_report"),
    "python -m sim.studies.k_map results/k_map --readme docs/k-map.md":
        Elsewhere("tests/test_k_map.py::test_every_claim_gets_a_row_with_a_label_and_the_committed_table_is_its_pages"),
    "llumsim capacity experiments/configs/quickstart.yaml --slo 'prefill_latency.p99<=5' --slo 'decode_latency_per_token.p99<=0.1' --seeds 3":
        Runs("llumsim capacity experiments/configs/quickstart.yaml --slo 'prefill_latency.p99<=5' --slo 'decode_latency_per_token.p99<=0.1' --seeds 1 --set workload.num_requests=300 --out {tmp}"),
    "llumsim calibrate --device a100_80gb": Runs("llumsim calibrate --device a100_80gb"),
    "llumsim run experiments/configs/mixed_a10_a100.yaml": Runs(f"llumsim run experiments/configs/mixed_a10_a100.yaml {SMOKE_RUN}"),
    "llumsim run experiments/configs/pd.yaml": Runs(f"llumsim run experiments/configs/pd.yaml {SMOKE_RUN}"),
    "llumsim capacity --grid experiments/grids/pd.yaml --jobs 2 --out results/pd_ratio":
        Elsewhere("tests/test_pd_study.py::test_the_study_marks_one_best_split_per_shape_and_contract_and_writes_the_readme_block"),
    "llumsim sweep experiments/grids/pd_interference.yaml --jobs 2 --out results/pd_interference":
        Elsewhere("tests/test_pd_study.py::test_the_study_marks_one_best_split_per_shape_and_contract_and_writes_the_readme_block"),
    "python -m sim.studies.pd results/pd_ratio results/pd_interference --readme docs/pd.md":
        Elsewhere("tests/test_pd_study.py::test_the_study_marks_one_best_split_per_shape_and_contract_and_writes_the_readme_block"),
    "llumsim run experiments/configs/sessions.yaml":
        Runs("llumsim run experiments/configs/sessions.yaml --set workload.num_requests=60 --out {tmp} --no-plots --quiet"),
    "llumsim run experiments/configs/system_prompt.yaml": Runs(f"llumsim run experiments/configs/system_prompt.yaml {SMOKE_RUN}"),
    "llumsim run experiments/configs/mooncake.yaml": Runs(f"llumsim run experiments/configs/mooncake.yaml {SMOKE_RUN}"),
    # docs/workloads.md: 720 requests in three stages, a few seconds as shown
    "llumsim run experiments/configs/inference_perf.yaml":
        Runs("llumsim run experiments/configs/inference_perf.yaml --out {tmp} --no-plots --quiet"),
    "llumsim sweep experiments/grids/sessions.yaml --jobs 2 --out results/sessions": Elsewhere(SESSIONS_STUDY),
    "python -m sim.presentation.compact results/sessions results/prefix_cache --metrics 'prefix_cache\\.(tokens|blocks)\\..+' --metrics 'prefix_cache\\.(evictions|prefill_tokens_saved|transfer\\..+)' --metrics 'sessions\\..+'":
        Runs("python -m sim.presentation.compact {smoke:sessions_smoke} {tmp} --metrics 'prefix_cache\\.(tokens|blocks)\\..+' --metrics 'prefix_cache\\.(evictions|prefill_tokens_saved|transfer\\..+)' --metrics 'sessions\\..+'"),
    "python -m sim.studies.sessions results/prefix_cache --readme docs/prefix-cache.md": Elsewhere(SESSIONS_STUDY),
    "llumsim studies": Runs("llumsim studies"),
    "llumsim studies marks": Runs("llumsim studies marks --check"),
    "llumsim studies remake --stale": Elsewhere("tests/test_studies.py::test_remake_runs_a_stale_studys_commands_resumably_and_clears_its_mark"),
    "python -m sim.studies.fleet experiments/grids/fleet.yaml --out results/fleet --jobs 2 --readme docs/fleet.md":
        Elsewhere("tests/test_fleet.py::test_the_study_writes_a_row_per_fleet_scheduler_and_contract_and_the_readme_table"),
    "llumsim paper --smoke": Runs(PAPER),
    "llumsim paper --jobs 2": Runs(PAPER),
    # docs/running.md
    "llumsim run CONFIG.yaml [--set key=value ...] [--out DIR] [--no-plots] [--quiet]": Help("llumsim run --help"),
    "llumsim calibrate [--json] [--plot FILE] [--device DEVICE]": Help("llumsim calibrate --help"),
    "llumsim bench migration [--json] [--plot FILE] [--held-out]": Help("llumsim bench migration --help"),
    "llumsim paper [--smoke] [--only PART] [--readme docs/paper.md] [--retry-failed] [--quiet]": Help("llumsim paper --help"),
    "llumsim sweep GRID.yaml [--jobs N] [--backend local|ray] [--address ADDR] [--out DIR] [--set key=value ...] [--recompute-stale] [--retry-failed] [--dry-run] [--quiet]":
        Help("llumsim sweep --help"),
    "llumsim capacity CONFIG.yaml --slo '[tierN.]METRIC.STAT<=SECONDS' | '[tierN.]attainment>=SHARE' ... [--seeds N] [--low R] [--high R] [--fleet POOL=N ...] [--monotone] [--quiet]":
        Help("llumsim capacity --help"),
    "llumsim native build|clean|status": Help("llumsim native --help"),
    "python -m sim ...": Help("llumsim --help"),
    ".venv/bin/pip install -e '.[native]' && .venv/bin/llumsim native build":
        Elsewhere("tests/test_native.py::test_a_compiled_build_gives_byte_identical_request_tables"),
    # docs/paper.md
    "llumsim paper --only serving-L-L": Runs("llumsim paper --smoke --only serving-L-L --out {smoke:paper_smoke} --quiet"),
    "llumsim paper --readme docs/paper.md": Runs(PAPER),
    "python -m sim.presentation.compact results/paper results/paper --metrics 'migration\\.(aborted|churn\\.[a-z0-9_]+|migrating_fraction\\.mean)' --table migrations:start,blocks,downtime,outcome --where scheduler=llumnix --where seed=0":
        Runs("python -m sim.presentation.compact {smoke:paper_smoke} {tmp} --metrics 'migration\\.(aborted|churn\\.[a-z0-9_]+|migrating_fraction\\.mean)' --table migrations:start,blocks,downtime,outcome --where scheduler=llumnix --where seed=0"),
    # docs/sweeps.md
    "llumsim sweep experiments/grids/k_study.yaml --backend ray [--address HOST:6379]":
        Elsewhere("tests/test_sweep_run.py::test_ray_runs_the_same_cells_to_the_same_index"),
    "llumsim capacity --grid experiments/grids/k_capacity.yaml --jobs 1":
        Elsewhere("tests/test_capacity_grid.py::test_the_smoke_grid_answers_every_search_consistently_with_its_points"),
    # docs/notebooks.md
    "llumsim sweep experiments/grids/stress.yaml --jobs 1 --out /tmp/stress":
        Runs("llumsim sweep experiments/grids/stress_smoke.yaml --out {smoke:stress_smoke} --quiet"),
    "python -m sim.presentation.compact /tmp/stress results/stress --metrics 'scaling\\.actions\\.[a-z_]+' --metrics 'faults\\..+' --table cluster:time,instances --where seed=0":
        Runs("python -m sim.presentation.compact {smoke:stress_smoke} {tmp} --metrics 'scaling\\.actions\\.[a-z_]+' --metrics 'faults\\..+' --table cluster:time,instances --where seed=0"),
    # docs/findings.md
    "python -m sim.presentation.compact /tmp/k_study results/k_study":
        Runs("python -m sim.presentation.compact {smoke:k_study_smoke} {tmp}"),
    "python -m sim.studies.findings results/k_study": Runs("python -m sim.studies.findings {copy:smoke:k_study_smoke}"),
    "llumsim capacity --grid experiments/grids/k_capacity.yaml --jobs 2":
        Elsewhere("tests/test_capacity_grid.py::test_the_smoke_grid_answers_every_search_consistently_with_its_points"),
    "python -m sim.studies.capacity_report results/k_capacity": Runs("python -m sim.studies.capacity_report results/k_capacity"),
    # its smoke grid: 60 requests, K 1/4 x two mixes, one seed (4 runs, 1 simulation)
    "llumsim sweep experiments/grids/slo_floor.yaml --out /tmp/slo_floor":
        Runs("llumsim sweep experiments/grids/slo_floor_smoke.yaml --out {smoke:slo_floor_smoke} --quiet"),
    "python -m sim.presentation.compact /tmp/slo_floor results/slo_floor --metrics 'slo\\.(overall|by_tier\\.[0-9]+)\\.(ttft_|tpot_)?attainment'":
        Runs("python -m sim.presentation.compact {smoke:slo_floor_smoke} {tmp} --metrics 'slo\\.(overall|by_tier\\.[0-9]+)\\.(ttft_|tpot_)?attainment'"),
    "python -m sim.studies.capacity_report results/k_capacity --floor results/slo_floor":
        Runs("python -m sim.studies.capacity_report results/k_capacity --floor results/slo_floor"),
    "llumsim sweep experiments/grids/k_autoscale.yaml --jobs 2 --out /tmp/k_autoscale":
        Runs("llumsim sweep experiments/grids/k_autoscale_smoke.yaml --out {smoke:k_autoscale_smoke} --quiet"),
    "python -m sim.presentation.compact /tmp/k_autoscale results/k_autoscale --metrics 'slo\\..+' --metrics 'cost\\..+' --metrics 'scaling\\.actions\\.[a-z_]+'":
        Runs("python -m sim.presentation.compact {smoke:k_autoscale_smoke} {tmp} --metrics 'slo\\..+' --metrics 'cost\\..+' --metrics 'scaling\\.actions\\.[a-z_]+'"),
    "python -m sim.studies.capacity_report results/k_autoscale --autoscale":
        Runs("python -m sim.studies.capacity_report results/k_autoscale --autoscale"),
}


def canonical(command: str) -> str:
    """A command as the shell reads it, without its comment: one spelling per command."""
    return shlex.join(shlex.split(command, comments=True))


def shown_commands() -> dict[str, list[str]]:
    """Every command in a ```bash block of the pages -> the pages showing it (a line ending
    in a backslash continues on the next)."""
    shown: dict[str, list[str]] = {}
    for page in PAGES:
        for block in re.findall(r"^```bash\n(.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S):
            for line in block.replace("\\\n", " ").splitlines():
                if shlex.split(line, comments=True):
                    shown.setdefault(canonical(line), []).append(page.relative_to(REPO).as_posix())
    return shown


TABLE = {canonical(command): entry for command, entry in SHOWN.items()}


def test_every_shown_command_has_an_entry():
    shown = shown_commands()
    missing = {command: pages for command, pages in shown.items() if command not in TABLE}
    assert not missing, f"commands shown with no entry in SHOWN (run it, or map it to its smoke variant): {missing}"
    assert not set(TABLE) - set(shown), f"entries no page shows: {sorted(set(TABLE) - set(shown))}"


def test_ci_runs_exactly_the_readme_test_command():
    (second,) = [c for c, entry in TABLE.items() if entry == CI]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"^```bash\n(.*?)^```", readme, re.M | re.S).group(1)
    commands = [canonical(line) for line in first_block.splitlines() if shlex.split(line, comments=True)]
    assert commands[1] == second  # the second command at the top
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert [canonical(line) for line in ci] == [second]


@pytest.mark.parametrize("test", sorted({e.test for e in TABLE.values() if isinstance(e, Elsewhere)}))
def test_a_command_run_elsewhere_names_a_test_that_exists(test):
    path, name = test.split("::")
    assert re.search(rf"^def {name}\(", (REPO / path).read_text(), re.M), test


@pytest.mark.parametrize("synopsis", [c for c, e in TABLE.items() if isinstance(e, Help)])
def test_a_synopsis_offers_only_what_the_command_takes(synopsis, capsys):
    from sim.cli.main import main

    with pytest.raises(SystemExit) as stop:
        main(shlex.split(TABLE[synopsis].command)[1:])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    options = re.findall(r"(?<![\w-])--[a-z][a-z-]*", synopsis)
    choices = [w for group in re.findall(r"[a-z]+(?:\|[a-z]+)+", synopsis) for w in group.split("|")]
    missing = [term for term in options + choices if term not in text]
    assert not missing, f"{synopsis}: --help does not offer {missing}"
    if synopsis.startswith("python -m sim"):
        assert all(name in text for name in ("run", "calibrate", "bench", "sweep", "capacity", "paper", "native"))


def run_command(command: str, placeholders: Callable[[str], str], capsys) -> tuple[int, str]:
    """Run ``llumsim …`` or ``python -m MODULE …`` in this process; (exit code, stdout)."""
    import importlib

    argv = [re.sub(r"\{([^}]+)\}", lambda m: placeholders(m.group(1)), word) for word in shlex.split(command)]
    if argv[0] == "llumsim":
        from sim.cli.main import main

        code = main(argv[1:])
    else:
        assert argv[:2] == ["python", "-m"], command
        code = importlib.import_module(argv[2]).main(argv[3:])
    return int(code or 0), capsys.readouterr().out


@pytest.fixture
def placeholders(smoke_results, tmp_path) -> Callable[[str], str]:
    def resolve(name: str) -> str:
        if name == "tmp":
            return str(tmp_path / "out")
        if name.startswith("copy:"):
            source = Path(resolve(name[5:])) if name[5:].startswith("smoke:") else REPO / name[5:]
            target = tmp_path / "copy" / source.name
            target.parent.mkdir(exist_ok=True)
            (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
            return str(target)
        assert name.startswith("smoke:"), name
        return str(smoke_results(name[6:]))

    return resolve


RUNS = sorted({e.command for e in TABLE.values() if isinstance(e, Runs)} - {SHOWN[QUICKSTART].command})
PRINTED: dict[str, str] = {}  # command -> what it printed, for the tests that compare outputs


def printed(command: str, placeholders: Callable[[str], str], capsys) -> str:
    """What ``command`` prints (run once per session), after checking that it exits 0."""
    if command not in PRINTED:
        code, out = run_command(command, placeholders, capsys)
        assert code == 0, f"{command}: exit {code}\n{out[-2000:]}"
        PRINTED[command] = out
    return PRINTED[command]


@pytest.mark.parametrize("command", RUNS, ids=lambda command: " ".join(command.split()[:5]))
def test_a_shown_command_runs(command, placeholders, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    out = printed(command, placeholders, capsys)
    if command.startswith("llumsim capacity experiments"):
        out = out.replace(placeholders("tmp") + "/", "results/capacity/quickstart/")
        assert shape(out) == shape(output_after("docs/sweeps.md", "the command above tried"))


def output_after(page: str, text: str) -> str:
    """The first plain ``` block after ``text`` on ``page``: the output it shows."""
    body = (REPO / page).read_text(encoding="utf-8")
    return re.search(r"^```\n(.*?)^```", body[body.index(text):], re.M | re.S).group(1)


def shape(output: str) -> set[str]:
    """An output's shape: its distinct lines, spaces collapsed and every number written #."""
    return {re.sub(r"\d[\d,.]*", "#", " ".join(line.split())) for line in output.splitlines() if line.strip()}


def test_the_quickstart_prints_what_the_readme_shows(placeholders, capsys, monkeypatch):
    """Exactly, but for the wall-clock figures of the speed line (and where it wrote)."""
    monkeypatch.chdir(REPO)
    code, out = run_command(SHOWN[QUICKSTART].command, placeholders, capsys)
    assert code == 0
    out = out.replace(placeholders("tmp") + "/", "results/")
    shown = output_after("README.md", "## What the first command prints")
    speed = re.compile(r"^simulated ")

    def steady(text: str) -> list[str]:
        return [re.sub(r"in [\d.]+ s of event loop \(.*", "", line) if speed.match(line) else line for line in text.splitlines()]

    assert steady(out) == steady(shown)
    # the speed line names the engine last, with why it is pure Python where it is
    assert re.search(r"\d+x real time.* batches, (compiled|pure Python( \(.*\))?)\)$", out, re.M)


def test_the_tables_the_docs_quote_are_those_their_commands_write(placeholders, capsys, monkeypatch):
    """The claims-table rule for the tables the pages copy: docs/paper.md's claims block is
    results/paper/claims.md, the K-tier tables are rows of findings.md, and the K-tier GPU
    section's tables and quoted lines are what ``capacity_report`` prints on the committed
    results."""
    monkeypatch.chdir(REPO)
    paper = (REPO / "docs" / "paper.md").read_text(encoding="utf-8")
    block = paper.split("<!-- paper-claims:begin -->\n", 1)[1].split("<!-- paper-claims:end -->", 1)[0]
    assert block == (REPO / "results" / "paper" / "claims.md").read_text(encoding="utf-8")
    findings, gpus = (REPO / "docs" / "findings.md").read_text(encoding="utf-8").split("## The K-tier question in GPUs")
    committed = (REPO / "results" / "k_study" / "findings.md").read_text(encoding="utf-8")
    assert [row for row in rows(findings) if row not in committed] == []
    reports = "".join(printed(c, placeholders, capsys) for c in RUNS if c.startswith("python -m sim.studies.capacity_report"))
    assert [line for line in rows(gpus) + quotes(gpus) if line not in reports] == []


def rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def quotes(text: str) -> list[str]:
    """The one-line quotes of a page, without their "> ": the lines it copies from an output
    (a note is a quote of several lines; a stale mark, ``llumsim studies``' own line, is none)."""
    blocks = re.findall(r"(?:^> .*\n)+", MARK.sub("", text), re.M)
    return [block[2:-1] for block in blocks if block.count("\n") == 1]
