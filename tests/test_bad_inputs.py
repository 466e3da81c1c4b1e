"""Bad input of every class a new user meets — config values and their coherence, names,
config files, their encoding and YAML that expands, traces, output paths — stops
``llumsim run`` with exit code 2 and one line naming the key, or the file (row, column),
before anything is simulated or written. (Sweeps, capacity and paper:
``test_bad_inputs_sweeps.py``.)"""

from __future__ import annotations

import dataclasses
import errno
import os
import typing

import pytest

from sim.cli.main import main
from sim.config import SimulationConfig
from sim.config.limits import MAX_YAML_BYTES
from tests.disk_faults import FailingDisk
from tests.test_workload_traces import CORRUPT

BASE = "name: bad-input\ncluster: {instances: 2}\nworkload: {source: synthetic, num_requests: 20}\n"
GAMMA = "workload.arrival.process=gamma"
SCALING = "autoscale.enabled=true"


def laughs(levels: int = 9) -> str:
    """A flow-style "billion laughs": each anchor a list of ten aliases of the one before,
    a few hundred bytes as text; at 9 levels the wrapped tree is 12,345,679,019 nodes
    (level k holds 1 + 10 x level k-1 nodes, level 0 eleven; each wrapper adds one)."""
    text = "&l0 [x, x, x, x, x, x, x, x, x, x]"
    for level in range(1, levels + 1):
        text = f"[{text}, &l{level} [{', '.join([f'*l{level - 1}'] * 10)}]]"
    return text

# id: (--set overrides, what the one line must contain)
BAD_VALUES: dict[str, tuple[list[str], str]] = {
    "no instances": (["cluster.instances=0"], "cluster.instances: must be >= 1, got 0"),
    "too many instances": (["cluster.instances=5000"], "cluster.instances: must be <= 4096"),
    "infinite instances": (["cluster.instances=.inf"], "cluster.instances: expected an integer, got inf"),
    "fractional instances": (["cluster.instances=1.5"], "cluster.instances: expected an integer"),
    "words for a number": (["cluster.instances=many"], "cluster.instances: expected an integer"),
    "no GPU memory": (["cluster.gpu_memory_utilization=0"], "gpu_memory_utilization: must be > 0"),
    "all memory watermark": (["cluster.watermark_fraction=1"], "watermark_fraction: must be < 1"),
    "NaN decode scale": (["cluster.decode_scale=.nan"], "decode_scale: must be a number in (0, 100]"),
    "negative KV capacity": (["cluster.kv_capacity_blocks=-5"], "kv_capacity_blocks: must be >= 1"),
    "infinite overhead": (["cluster.overhead.base=.inf"], "cluster.overhead.base: must be <= 1 s, got inf"),
    "batch cap beyond the profiles": (["cluster.max_batch_size=400"], "cluster.max_batch_size: 400 exceeds the 256"),
    "token budget beyond the profiles": (["cluster.max_batched_tokens=20000"], "max_batched_tokens: 20000 exceeds"),
    "denormal rate": (["workload.arrival.rate=1e-320"], "workload.arrival.rate: must be >= 0.001 requests/s"),
    "infinite rate": (["workload.arrival.rate=.inf"], "workload.arrival.rate: must be <= 1e+06 requests/s"),
    "negative rate": (["workload.arrival.rate=-1"], "workload.arrival.rate: must be >= 0.001"),
    "rate as a list": (["workload.arrival.rate=[1]"], "workload.arrival.rate: expected a number"),
    "infinite CV": ([GAMMA, "workload.arrival.cv=.inf"], "workload.arrival.cv: must be <= 20, got inf"),
    "vanishing CV": ([GAMMA, "workload.arrival.cv=1e-200"], "workload.arrival.cv: must be >= 0.01"),
    "10^13 requests": (["workload.num_requests=1e13"], "workload.num_requests: must be <= 10000000 requests"),
    "no requests": (["workload.num_requests=0"], "workload.num_requests: must be >= 1"),
    "65 tiers": (["workload.priority.tiers=65"], "workload.priority.tiers: must be <= 64"),
    "share above one": (["workload.priority.high_share=1.5"], "high_share: must be <= 1"),
    "zero length scale": (["workload.shape.input.scale=0"], "workload.shape.input.scale: must be > 0"),
    "absurd cap": (["workload.shape.output.cap=1e9"], "workload.shape.output.cap: must be <= 1000000 tokens"),
    "report interval zero": (["scheduler.load_report_interval=0"], "load_report_interval: must be >= 0.001 s"),
    "pairing never": (["scheduler.pairing_every=0"], "scheduler.pairing_every: must be >= 1"),
    "NaN in a list": (["scheduler.headroom.blocks=[1, .nan]"], "scheduler.headroom.blocks[1]: must be a number"),
    "zero load target": (["scheduler.priority.load_targets=[0]"], "load_targets[0]: must be > 0"),
    "endless handshake": (["migration.prealloc_timeout=.inf"], "migration.prealloc_timeout: must be <= 3600 s"),
    "1 byte/s link": (["migration.transfer.gpu_bandwidth=1"], "gpu_bandwidth: must be >= 1e+06 bytes/s"),
    "stalled copies": (["migration.colocated_slowdown=1"], "colocated_slowdown: must be < 1"),
    "year-long cold start": (["autoscale.cold_start=1e9"], "autoscale.cold_start: must be <= 86400 s"),
    "NaN band": (["autoscale.low=.nan"], "autoscale.low: must be a number in"),
    "no instances allowed": (["autoscale.max_instances=0"], "autoscale.max_instances: must be >= 1"),
    "certain-and-more failure": (
        ["faults=[{kind: transfer_failure, probability: 2}]"], "faults[0].probability: must be <= 1"
    ),
    "NaN outage start": (
        ["faults=[{kind: scheduler_down, start: .nan, end: 5}]"], "faults[0].start: must be a number"
    ),
    "failing a missing instance": (
        ["faults=[{kind: instance_failure, at: 1, instance: 99}]"], "faults[0].instance: no instance 99"
    ),
    "zero time limit": (["time_limit=0"], "time_limit: must be > 0 s"),
    "infinite time limit": (["time_limit=.inf"], "time_limit: must be <= 1e+09 s"),
    "negative seed": (["seed=-1"], "seed: must be >= 0"),
    "zero sampling interval": (["output.timeseries_interval=0"], "timeseries_interval: must be >= 0.001 s"),
    "negative price": (["cost.gpu_hour_price=-1"], "cost.gpu_hour_price: must be >= 0"),
    "misspelt key": (["cluster.instancs=4"], "cluster.instancs: unknown key"),
    "unknown scheduler": (["scheduler.name=fifo"], "scheduler.name: unknown scheduler 'fifo'"),
    "unknown model": (["cluster.model=gpt-9"], "gpt-9"),
    "unknown mode": (["migration.mode=teleport"], "migration.mode: 'teleport' is not one of"),
    "maybe": (["autoscale.enabled=maybe"], "autoscale.enabled: expected true or false"),
    "a section set to a value": (["cluster=4"], "cluster: expected a mapping"),
    "name climbing out": (["name=../../x"], "name: must be a plain folder name"),
    "name with a slash": (["name=a/b"], "name: must be a plain folder name"),
    "name '..'": (["name=.."], "name: must be a plain folder name"),
    "empty name": (["name="], "name: must be a plain folder name"),
    "missing trace": (["workload.source=lengths", "workload.trace=traces/nope.csv"], "traces/nope.csv"),
    # --set values are YAML too, read as boundedly as files
    "a --set alias cycle": (["workload.arrival.rate=&a [*a]"], "--set workload.arrival.rate: alias *a refers to its own anchor"),
    "a --set billion laughs": ([f"workload.arrival.rate={laughs()}"], "--set workload.arrival.rate: expands to 12,345,679,019 nodes once aliases are followed (at most 100,000)"),
    # keys that contradict each other
    "scaling floor above the start": ([SCALING, "autoscale.min_instances=3"], "autoscale.min_instances: 3 is above the 2 instances the cluster starts with"),
    "scaling ceiling below the start": ([SCALING, "autoscale.max_instances=1"], "autoscale.max_instances: 1 is below the 2 instances"),
    "headroom for 2 of 3 tiers": (
        ["workload.priority.tiers=3", "scheduler.headroom.blocks=[100, 0]"],
        "scheduler.headroom.blocks: 2 values for workload.priority.tiers=3; it takes 3 (one per tier)",
    ),
    "headroom for a tier that is not there": (["scheduler.headroom.blocks=[100, 0]"], "2 values for workload.priority.tiers=1; it takes 1"),
    "a load target for the lowest tier": (
        ["workload.priority.tiers=2", "scheduler.priority.load_targets=[1600, 800]"],
        "scheduler.priority.load_targets: 2 values for workload.priority.tiers=2; it takes 1",
    ),
    "SLO targets for 2 of 4 tiers": (
        ["workload.priority.tiers=4", "slo={tiers: [{ttft: 0.5, tpot: 0.05}, {ttft: 1, tpot: 0.1}]}"],
        "slo.tiers: 2 targets for workload.priority.tiers=4; it takes 4 (one per tier)",
    ),
    "SLO targets for a tier that is not there": (
        ["slo={tiers: [{ttft: 0.5, tpot: 0.05}, {ttft: 1, tpot: 0.1}]}"],
        "slo.tiers: 2 targets for workload.priority.tiers=1; it takes 1",
    ),
    "SLO tiers and a ladder": (
        ["slo={tiers: [{ttft: 0.5, tpot: 0.05}], ladder: {ttft: 0.5, tpot: 0.05}}"],
        "slo.tiers: give one of tiers, ladder or contract",
    ),
    "no SLO targets": (["slo={quantile: 0.9}"], "slo.tiers: give one of tiers, ladder or contract"),
    "a zero TTFT target": (["slo={tiers: [{ttft: 0, tpot: 0.05}]}"], "slo.tiers[0].ttft: must be > 0 s, got 0"),
    "a TPOT target missing": (["slo={tiers: [{ttft: 0.5}]}"], "slo.tiers[0].tpot: required key missing"),
    "a ladder that tightens": (
        ["slo={ladder: {ttft: 0.5, tpot: 0.05, growth: 0.5}}"], "slo.ladder.growth: must be >= 1, got 0.5"
    ),
    "an SLO quantile above one": (["slo={ladder: {ttft: 0.5, tpot: 0.05}, quantile: 1.5}"], "slo.quantile: must be <= 1"),
    "SLO-aware dispatch without SLOs": (
        ["scheduler.dispatch=slo-aware"], "scheduler.dispatch: slo-aware works against per-tier SLO targets; set slo"
    ),
    "SLO pairing without SLOs": (["scheduler.pairing=slo"], "scheduler.pairing: slo works against per-tier SLO targets; set slo"),
    "adaptive headroom without SLOs": (
        ["scheduler.priority.mode=adaptive-headroom"],
        "scheduler.priority.mode: adaptive-headroom works against per-tier SLO targets; set slo",
    ),
    "an adaptive step of nothing": (
        ["scheduler.priority.adaptive={step: 0}"], "scheduler.priority.adaptive.step: must be > 0, got 0"
    ),
    "an outage with a failure's time": (
        ["faults=[{kind: scheduler_down, start: 1, end: 2, at: 5}]"],
        "faults[0].at: not a key of a fault of kind scheduler_down (its keys: start, end, fallback)",
    ),
    "a failure with a probability": (
        ["faults=[{kind: instance_failure, at: 1, instance: 0, probability: 0.5}]"],
        "faults[0].probability: not a key of a fault of kind instance_failure",
    ),
    "load targets under the headroom mode": (
        ["workload.priority.tiers=2", "scheduler.name=llumnix", "scheduler.priority.mode=headroom",
         "scheduler.priority.load_targets=[800]"],
        "scheduler.priority.load_targets: only the load-target priority mode reads it; this run's mode is headroom (scheduler.priority.mode)",
    ),
    "adaptive settings under the preset's mode": (
        ["scheduler.priority.adaptive={step: 0.1}"],
        "scheduler.priority.adaptive: only the adaptive-headroom priority mode reads it; this run's mode is none (the infaas++ preset's)",
    ),
    "the artifact's idle reporting under periodic reports": (
        ["scheduler.name=llumnix-prose", "scheduler.idle_reports=artifact"],
        "scheduler.idle_reports: only per-step reports read it; this run's reports are periodic (the llumnix-prose preset's), which report every instance at every tick",
    ),
    "an SLO quantile of zero": (["slo={ladder: {ttft: 0.5, tpot: 0.05}, quantile: 0}"], "slo.quantile: must be > 0, got 0"),
    "a ladder that grows past a day": (
        ["workload.priority.tiers=4", "slo={ladder: {ttft: 100, tpot: 0.05, growth: 100}}"],
        "slo.ladder.ttft: tier 3's target is 100 x growth 100^3 = 1e+08 s, above the 86400 s a target may be",
    ),
    "a transfer failure with a fallback": (
        ["faults=[{kind: transfer_failure, probability: 0.5, fallback: random}]"],
        "faults[0].fallback: not a key of a fault of kind transfer_failure",
    ),
}

# id: (config file bytes, what the one line must contain; the file's path is checked too)
BAD_CONFIG_FILES: dict[str, tuple[bytes, str]] = {
    "latin-1 byte": ("name: caf\xe9\n".encode("latin-1"), "(line 1): not UTF-8 text (byte 0xe9)"),
    "UTF-16": ("name: x\n".encode("utf-16"), "(line 1): not UTF-8 text (byte 0xff)"),
    "bad byte on line 3": (BASE.encode() + b"seed: \x80\n", "(line 4): not UTF-8 text (byte 0x80)"),
    "not YAML": (b"cluster: {instances: 2\n", "not valid YAML"),
    "a list, not a mapping": (b"- 1\n- 2\n", "expected a mapping at the top level"),
    "a repeated key": (BASE.encode() + b"seed: 1\nseed: 2\n", "(line 5): key 'seed' appears twice in one mapping (first on line 4)"),
    "a repeated nested key": (b"cluster: {instances: 2, instances: 4}\n", "(line 1): key 'instances' appears twice"),
    "a billion laughs": (f"workload: {{synthetic: {laughs()}}}\n".encode(), "expands to 12,345,679,023 nodes once aliases are followed"),
    "an alias cycle": (b"cluster: &c {overhead: *c}\n", "(line 1): alias *c refers to its own anchor (a cycle)"),
    "too many aliases": (b"a: &a 1\nb: [" + b", ".join([b"*a"] * 1001) + b"]\n", "(line 2): more than 1,000 aliases"),
    "nested 100 deep": (b"name: " + b"[" * 100 + b"]" * 100 + b"\n", "(line 1): nested more than 64 levels deep"),
    "an empty file": (b"", "an empty config; write the keys it sets"),
    "only comments": (b"# to do\n\n", "an empty config; write the keys it sets"),
    "over a mebibyte": (BASE.encode() + b"#" * MAX_YAML_BYTES + b"\n", f"bytes; a config or grid is at most {MAX_YAML_BYTES:,}"),
}


def out_cases(tmp_path) -> dict[str, tuple[str, str]]:
    """id: (--out value, what the one line must contain); the same for every command."""
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("x")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    return {
        "a file": (str(a_file), "exists and is not a folder"),
        "under a file": (str(a_file / "run"), f"cannot be created: {a_file} is a file"),
        "unwritable": ("/proc/llumsim-run", "cannot write there"),
        "someone's folder": (str(foreign), "not empty and not a llumsim "),
        "the root": ("/", "(a file system root)"),
        "a link loop": (str(tmp_path / "loop"), "cannot be used (a symbolic link loop)"),
        "under a link loop": (str(tmp_path / "loop" / "out"), "cannot be used (a symbolic link loop)"),
        "a name too long": (str(tmp_path / ("x" * 300)), "cannot be used (File name too long)"),
        "read-only": (str(tmp_path / "ro" / "out"), "cannot write there (Read-only file system)"),
    }


OUT_IDS = [
    "a file", "under a file", "unwritable", "someone's folder", "the root", "a link loop",
    "under a link loop", "a name too long", "read-only",
]


def bad_out(case: str, tmp_path, monkeypatch) -> tuple[str, str]:
    """--out and the expected line for ``case``; "read-only" mounts its folder read-only
    (injected: every write under it fails with EROFS)."""
    out, expected = out_cases(tmp_path)[case]
    if case == "read-only":
        (tmp_path / "ro").mkdir()
        FailingDisk(monkeypatch, tmp_path / "ro", errno.EROFS)
    return out, expected


@pytest.fixture(autouse=True)
def empty_model_cache(tmp_path, monkeypatch):
    """Every case must fail before a replica model is needed: with an empty cache a model
    load would print a second line ("fitting Vidur's predictor…")."""
    monkeypatch.setenv("LLUMSIM_CACHE_DIR", str(tmp_path / "empty-cache"))


def exits_2_with_one_line(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("llumsim: error: "), err
    assert "Traceback" not in err and captured.out == ""
    return err


def refused_run(base: str, overrides: list[str], tmp_path, capsys) -> str:
    """``llumsim run`` of ``base`` with ``overrides`` exits 2 with one line (returned) and
    writes nothing: no run folder, no staging left behind."""
    config = tmp_path / "c.yaml"
    config.write_text(base)
    argv = ["run", str(config), "--quiet", "--out", str(tmp_path / "out")]
    for override in overrides:
        argv += ["--set", override]
    line = exits_2_with_one_line(argv, capsys)
    assert sorted(os.listdir(tmp_path)) == ["c.yaml"]
    return line


@pytest.mark.parametrize(("overrides", "expected"), BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_a_bad_value_exits_2_naming_the_key(overrides, expected, tmp_path, capsys):
    assert expected in refused_run(BASE, overrides, tmp_path, capsys)


@pytest.mark.parametrize(("content", "expected"), BAD_CONFIG_FILES.values(), ids=BAD_CONFIG_FILES.keys())
def test_a_bad_config_file_exits_2_naming_it(content, expected, tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_bytes(content)
    err = exits_2_with_one_line(["run", str(config), "--quiet"], capsys)
    assert f"{config}" in err and expected in err


@pytest.mark.parametrize("where", ["missing", "a folder"])
def test_a_config_that_is_not_a_file_exits_2(where, tmp_path, capsys):
    config = tmp_path / "c.yaml"
    if where == "a folder":
        config.mkdir()
    assert f"{config}: config file not found" in exits_2_with_one_line(["run", str(config)], capsys)


@pytest.mark.parametrize(("content", "expected"), CORRUPT.values(), ids=CORRUPT.keys())
def test_a_corrupt_trace_exits_2_naming_file_row_and_column(content, expected, tmp_path, capsys):
    config, trace = tmp_path / "c.yaml", tmp_path / "trace.csv"
    config.write_text(BASE)
    trace.write_bytes(content if isinstance(content, bytes) else content.encode())
    argv = ["run", str(config), "--quiet", "--out", str(tmp_path / "out")]
    argv += ["--set", "workload.source=lengths", "--set", f"workload.trace={trace}"]
    assert f"{trace}: {expected}" in exits_2_with_one_line(argv, capsys)
    assert sorted(os.listdir(tmp_path)) == ["c.yaml", "trace.csv"]


@pytest.mark.parametrize("case", OUT_IDS)
def test_a_bad_output_folder_exits_2_before_the_run(case, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sim.engine.simulate", lambda *a, **k: pytest.fail("the run started"))
    config = tmp_path / "c.yaml"
    config.write_text(BASE)
    out, expected = bad_out(case, tmp_path, monkeypatch)
    err = exits_2_with_one_line(["run", str(config), "--quiet", "--out", out], capsys)
    assert err.startswith(f"llumsim: error: output folder {out}: ") and expected in err
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".tmp-")]
    assert os.listdir(tmp_path / "home") == ["thesis.tex"]


def _sections(cls) -> list[type]:
    found = [cls]
    for f in dataclasses.fields(cls):
        hint = typing.get_type_hints(cls)[f.name]
        for arg in (hint, *typing.get_args(hint)):
            if dataclasses.is_dataclass(arg):
                found += _sections(arg)
    return found


def _is_numeric(hint) -> bool:
    if hint in (int, float):
        return True
    return any(_is_numeric(arg) for arg in typing.get_args(hint) if arg is not bool)


def test_every_numeric_key_has_a_finite_range():
    missing, infinite = [], []
    for section in _sections(SimulationConfig):
        ranges = getattr(section, "RANGES", {})
        for name, hint in typing.get_type_hints(section).items():
            if name == "RANGES" or not _is_numeric(hint):
                continue
            if name not in ranges:
                missing.append(f"{section.__name__}.{name}")
            elif not all(abs(v) < float("inf") for v in (ranges[name].low, ranges[name].high)):
                infinite.append(f"{section.__name__}.{name}")
    assert not missing and not infinite, (missing, infinite)
