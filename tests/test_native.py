"""The optional compiled engine (``sim.native``): a build out of date with its sources (or
switched off) is never imported (INV-8 current-build), and a build gives the same request
tables as pure Python (INV-6 same-result)."""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys

import pytest

from sim import native
from tests.sweep_support import REPO


def fake_build(tmp_path, monkeypatch, sources):
    manifest = tmp_path / "native.json"
    manifest.write_text(json.dumps({"python": sys.implementation.cache_tag, "sources": sources}))
    monkeypatch.setattr(native, "MANIFEST", manifest)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))  # undo what guard() inserts
    monkeypatch.setenv(native.WARNED, "")  # nothing said yet; undone after the test


def first_spec(name):
    """The spec the import system would use now for ``name`` (``importlib.util.find_spec``
    answers from ``sys.modules`` for a module imported already)."""
    parent = importlib.import_module(name.rpartition(".")[0])
    for finder in sys.meta_path:
        spec = finder.find_spec(name, parent.__path__)
        if spec is not None:
            return spec


def current_sources():
    return {m: native._digest(native.source_path(m)) for m in native.MODULES}


def test_a_build_whose_sources_changed_runs_pure_python_and_says_so(tmp_path, monkeypatch, capsys):
    sources = current_sources()
    sources["sim.instance.llumlet"] = "0" * 64  # llumlet.py edited since the build
    fake_build(tmp_path, monkeypatch, sources)
    monkeypatch.delenv("LLUMSIM_PURE", raising=False)
    assert native.stale_modules() == ["sim.instance.llumlet"]
    assert native.status() == "pure Python (compiled engine stale: `llumsim native build` rebuilds it)"
    native.guard()
    assert "older than sim/instance/llumlet.py" in capsys.readouterr().err
    assert isinstance(sys.meta_path[0], native._SourceFirst)  # ahead of the finders of .so files
    native.guard()  # a child process (a sweep's worker) inherits the environment: not again
    assert capsys.readouterr().err == ""
    # every compiled module, not only the stale one, now loads from its .py file
    for module in native.MODULES:
        spec = first_spec(module)
        assert spec.origin == str(native.source_path(module)), module


def test_every_run_says_in_its_summary_that_the_compiled_engine_is_stale(tmp_path, monkeypatch, capsys):
    """Not only the once-per-process warning: the speed line of each run's summary names the
    engine it ran on, so a stale build's pure-Python run is never taken for a compiled one."""
    from sim.cli.main import main

    sources = current_sources()
    sources["sim.instance.batching"] = "0" * 64
    fake_build(tmp_path, monkeypatch, sources)
    monkeypatch.delenv("LLUMSIM_PURE", raising=False)
    config = tmp_path / "small.yaml"
    config.write_text("name: small\ncluster: {instances: 1}\nworkload: {source: synthetic, num_requests: 20}\n")
    assert main(["run", str(config), "--quiet", "--no-plots", "--out", str(tmp_path / "out")]) == 0
    speed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("simulated ")]
    assert speed and speed[0].endswith("batches, pure Python (compiled engine stale: `llumsim native build` rebuilds it))")


def test_an_up_to_date_build_is_imported_unless_switched_off(tmp_path, monkeypatch, capsys):
    fake_build(tmp_path, monkeypatch, current_sources())
    monkeypatch.delenv("LLUMSIM_PURE", raising=False)
    assert native.status() == "compiled"
    before = list(sys.meta_path)
    native.guard()
    assert sys.meta_path == before and capsys.readouterr().err == ""
    monkeypatch.setenv("LLUMSIM_PURE", "1")
    assert native.status() == "pure Python (LLUMSIM_PURE set)"
    native.guard()
    assert first_spec("sim.instance.llumlet").origin == str(native.source_path("sim.instance.llumlet"))


def test_a_build_for_another_python_is_ignored(tmp_path, monkeypatch):
    fake_build(tmp_path, monkeypatch, current_sources())
    native.MANIFEST.write_text(json.dumps({"python": "cpython-27", "sources": current_sources()}))
    assert native.status().startswith("pure Python")


def test_compiled_files_without_a_build_record_are_not_imported(tmp_path, monkeypatch, capsys):
    """A build interrupted before it wrote its record (written last) leaves extension files
    that Python would import: they are bypassed like a stale build."""
    monkeypatch.setattr(native, "MANIFEST", tmp_path / "native.json")  # no record
    monkeypatch.setattr(native, "source_path", lambda module: tmp_path / f"{module}.py")
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setenv(native.WARNED, "")
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (tmp_path / f"sim.instance.llumlet{suffix}").write_bytes(b"half-written")
    assert native.status() == "pure Python (compiled files without a complete build ignored)"
    native.guard()
    assert isinstance(sys.meta_path[0], native._SourceFirst)
    assert "without a complete build" in capsys.readouterr().err


def test_compiled_files_of_modules_this_version_does_not_compile_are_ignored(tmp_path, monkeypatch, capsys):
    """A build of another version (a branch compiling more modules) leaves extension files
    this build's runtime library has no code for: they load from source, and a clean
    removes them with the rest."""
    package = tmp_path / "sim"
    monkeypatch.setattr(native, "PACKAGE_DIR", package)
    monkeypatch.setattr(native, "MANIFEST", package / "native.json")  # no build of this version
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setenv(native.WARNED, "")
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (package / "engine").mkdir(parents=True)
    stray = package / "engine" / f"watchdog{suffix}"
    stray.write_bytes(b"another version's")
    (package / f"native_runtime__mypyc{suffix}").write_bytes(b"the runtime library")
    assert native.stray_modules() == ["sim.engine.watchdog"]
    native.guard()
    assert sys.meta_path[0].modules == {"sim.engine.watchdog"}
    assert "(sim.engine.watchdog): left by another version's build" in capsys.readouterr().err
    native.guard()  # said once per run, whichever warnings a run has
    assert capsys.readouterr().err == ""
    native.clean()
    assert not stray.exists() and list(package.rglob("*.so")) == []


PICKLE_CHECK = """
import copy, pickle
from sim.instance.request import FIELDS, Request
request = Request(3, 1.5, 100, 50, tier=2)
request.generated, request.epoch, request.instances = 7, 4, [5, 1]
for twin in (pickle.loads(pickle.dumps(request)), copy.deepcopy(request)):
    assert [getattr(twin, f) for f in FIELDS] == [getattr(request, f) for f in FIELDS]
print("pickles")
"""


def test_a_request_pickles_and_copies_with_every_field():
    """Results hold requests (sweeps, notebooks): every field survives, compiled or not
    (the test below runs the same check on a compiled build)."""
    namespace: dict = {}
    exec(PICKLE_CHECK, namespace)


BUILD = "from sim import native; native.build(); print(native.status())"


def build_copy(tmp_path):
    """Build the compiled engine in a copy of the package (the checkout is left alone)."""
    leave_out = shutil.ignore_patterns("*.so", "native.json", "__pycache__")
    shutil.copytree(REPO / "sim", tmp_path / "sim", ignore=leave_out)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    env.pop("LLUMSIM_PURE", None)
    build = subprocess.run(
        [sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, timeout=600,
        cwd=tmp_path,  # not the checkout's sim
    )
    return build, env


def test_a_compiled_build_gives_byte_identical_request_tables(tmp_path):
    """The two engines agree: a build's request tables of ``benchmarks/request_hashes.py``
    are the recorded ones (recorded on pure Python). In the default suite, so no commit
    lets the engines drift apart; without a C compiler the build must fail cleanly instead."""
    build, env = build_copy(tmp_path)
    if shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None:
        assert build.returncode != 0 and "NativeBuildError" in build.stderr, build.stderr[-2000:]
        return
    assert build.returncode == 0 and build.stdout.strip() == "compiled", build.stderr[-2000:]
    pickles = subprocess.run(
        [sys.executable, "-c", PICKLE_CHECK + "from sim import native; print(native.status())"],
        env=env, capture_output=True, text=True, cwd=tmp_path,
    )
    assert pickles.stdout.split() == ["pickles", "compiled"], pickles.stderr[-2000:]
    check = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "request_hashes.py"), "--check",
         str(REPO / "benchmarks" / "request_hashes.json")],
        env=env, capture_output=True, text=True, timeout=600, cwd=REPO,  # configs name traces/...
    )
    assert "llumsim engine: compiled" in check.stdout, check.stdout + check.stderr
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_native_profile_charges_a_sample_to_its_innermost_compiled_function():
    """benchmarks/native_profile.py: a sample counts for the first compiled function from
    the leaf up (with the library code it called), or as interpreted when none is there."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import native_profile
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    script = (
        "\n"  # perf script leads with a blank line
        "\t7f01 insertdict\n\t7f02 CPyDef_step_reports___StepReports___deliver\n"
        "\t7f03 CPyDef_instances___StepLoop____step\n\t7f04 _PyEval_EvalFrameDefault\n"
        "\n"
        "\t7f05 siftup\n\t7f06 _PyEval_EvalFrameDefault\n"
        "\n"
        "\t7f07 CPyDef_instances___StepLoop____step\n\t7f08 _PyEval_EvalFrameDefault\n"
    )
    shares, total = native_profile.attribute(script)
    assert total == 3
    assert shares == {
        "step_reports.StepReports.deliver": 1,
        native_profile.INTERPRETED: 1,
        "instances.StepLoop._step": 1,
    }
