"""INV-7 layers. The package's shape: its modules import each other without a circle (a circle means two
parts that cannot be read, tested or replaced apart), counting imports made only for type
checking and those inside functions too; the package's layers (``LAYERS``) point down: no
module imports one of a higher layer; and the sweeps' layers point one way: the studies
(``sim.studies``) and presentation (``sim.presentation``) import the sweep machinery
(``sim.sweep``), never the reverse; a study may draw through presentation, presentation
reads no study, and no study imports another (only the shared modules in ``SHARED``)."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import pytest

SIM = Path(__file__).resolve().parents[1] / "sim"


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each module of the package under ``root`` -> the package's modules it imports
    (``from a.b import c`` is ``a.b.c`` where that is a module, else ``a.b``)."""
    package = root.name
    modules = {module_name(path, root): path for path in root.rglob("*.py")}

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {owner(alias.name) for alias in node.names if alias.name.split(".")[0] == package}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] == package:
                    imported |= {owner(f"{node.module}.{alias.name}") for alias in node.names}
        graph[name] = {other for other in imported if other is not None and other != name}
    return graph


def circle(graph: dict[str, set[str]]) -> list[str]:
    """A circle of imports in ``graph`` ([] if none)."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return list(error.args[1])
    return []


MACHINERY, STUDIES, PRESENTATION = "sweep", "studies", "presentation"  # subpackages of the root
SHARED = {"agreement", "fingerprint", "catalog"}  # modules of the studies package that are not studies: any study may import them


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def direction_errors(graph: dict[str, set[str]], root: str = "sim") -> list[str]:
    """Each import of ``graph`` against the layers' direction, as "importer -> imported"."""
    machinery, studies, presentation = (f"{root}.{name}" for name in (MACHINERY, STUDIES, PRESENTATION))
    shared = {f"{studies}.{name}" for name in SHARED}

    def is_study(module: str) -> bool:
        return within(module, studies) and module != studies and module not in shared

    errors = []
    for importer, imported in sorted(graph.items()):
        for other in sorted(imported):
            if within(importer, machinery) and (within(other, studies) or within(other, presentation)):
                errors.append(f"{importer} -> {other} (the machinery imports no study or presentation)")
            elif within(importer, presentation) and within(other, studies):
                errors.append(f"{importer} -> {other} (presentation imports no study)")
            elif within(importer, studies) and importer != studies and is_study(other):
                errors.append(f"{importer} -> {other} (a study imports no other study: share through {sorted(shared)})")
    return errors


def test_the_package_imports_without_a_circle():
    graph = import_graph(SIM)
    assert len(graph) > 100 and "sim.engine.inspection" in graph["sim.engine.simulation"]
    assert circle(graph) == []


def test_the_walk_finds_a_circle_through_a_type_checking_import(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kernel.py").write_text("from pkg import view\n")
    (package / "view.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.kernel import Kernel\n"
    )
    assert sorted(set(circle(import_graph(package)))) == ["pkg.kernel", "pkg.view"]
    (package / "view.py").write_text("")
    assert circle(import_graph(package)) == []


@pytest.mark.parametrize("statement", ["import pkg.a", "from pkg import a", "from pkg.a import thing"])
def test_every_form_of_import_is_an_edge(tmp_path, statement):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("thing = 1\n")
    (package / "b.py").write_text(f"def late():\n    {statement}\n")
    assert import_graph(package)["pkg.b"] == {"pkg.a"}


def test_the_sweeps_layers_point_one_way():
    graph = import_graph(SIM)
    assert {"sim.sweep.runner", "sim.studies.paper", "sim.studies.k_map", "sim.presentation.plots"} <= set(graph)
    assert "sim.studies.agreement" in graph["sim.studies.paper"]  # a study through a shared module
    assert "sim.presentation.markdown" in graph["sim.studies.findings"]  # a study through presentation
    assert direction_errors(graph) == []


@pytest.mark.parametrize(
    "importer, statement",
    [
        ("sweep/runner.py", "from pkg.studies import paper"),
        ("sweep/runner.py", "from pkg.presentation.plots import draw"),
        ("presentation/plots.py", "import pkg.studies.paper"),
        ("studies/findings.py", "from pkg.studies.paper import markdown"),
        ("studies/agreement.py", "from pkg.studies import paper"),
    ],
)
def test_the_direction_check_finds_an_import_against_it(tmp_path, importer, statement):
    package = tmp_path / "pkg"
    for folder in ("", "sweep", "studies", "presentation"):
        (package / folder).mkdir(exist_ok=True)
        (package / folder / "__init__.py").write_text("")
    modules = ("sweep/runner.py", "presentation/plots.py", "studies/paper.py", "studies/findings.py", "studies/agreement.py")
    for module in modules:
        (package / module).write_text("draw = markdown = 1\n")
    (package / "studies/paper.py").write_text("from pkg.studies.agreement import draw\nfrom pkg.sweep import runner\n")
    (package / "studies/findings.py").write_text("from pkg.presentation.plots import draw\n")
    assert direction_errors(import_graph(package), root="pkg") == []
    (package / importer).write_text(f"def late():\n    {statement}\n")
    (error,) = direction_errors(import_graph(package), root="pkg")
    assert error.startswith(f"pkg.{importer[:-3].replace('/', '.')} -> ")


# The layers of the package, bottom-up: each names subpackages and top-level modules of the
# root ("" is the root package itself). A module imports from its own layer and the layers
# below it, never from one above, so each layer can be read and tested with only what is
# under it; every module falls in a layer, so a new package has to be placed here.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("", "native", "lazy", "progress"),  # the compiled build's guard, and helpers importing nothing of sim
    ("config",),
    ("hardware", "files"),  # files: crash-safe writing, whose errors are the config's (ConfigError)
    ("instance",),
    ("workload", "cluster"),  # a workload names each request's content (sim.instance.content)
    ("engine",),
    ("metrics",),
    ("bench", "sweep"),
    ("presentation",),
    ("studies",),
    ("cli", "__main__"),
)


def layer_of(module: str) -> str:
    """The ``LAYERS`` entry ``module`` belongs to: its subpackage or top-level module of the root."""
    return module.split(".")[1] if "." in module else ""


def layer_errors(graph: dict[str, set[str]], layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[str]:
    """Each import of ``graph`` into a higher layer, as "importer -> imported (why)", and
    each module in no layer."""
    rank = {name: index for index, names in enumerate(layers) for name in names}
    errors = []
    for importer, imported in sorted(graph.items()):
        mine = layer_of(importer)
        if mine not in rank:
            errors.append(f"{importer}: in no layer (place {mine} in LAYERS)")
            continue
        for other in sorted(imported):
            theirs = layer_of(other)
            if rank.get(theirs, -1) > rank[mine]:
                errors.append(
                    f"{importer} -> {other} (layer {rank[mine]}, {mine or 'the root'}, imports layer "
                    f"{rank[theirs]}, {theirs}, above it)"
                )
    return errors


def test_the_layers_point_down():
    graph = import_graph(SIM)
    assert {layer_of(module) for module in graph} == {name for names in LAYERS for name in names}  # none stale
    assert "sim.instance.load" in graph["sim.cluster.dispatch"]  # a layer on one below it
    assert layer_errors(graph) == []


def _layered_package(tmp_path: Path) -> Path:
    """pkg: config < engine < metrics, the engine's kernel importing the config."""
    package = tmp_path / "pkg"
    for folder in ("", "config", "engine", "metrics"):
        (package / folder).mkdir(exist_ok=True)
        (package / folder / "__init__.py").write_text("")
    (package / "config" / "schema.py").write_text("limit = 1\n")
    (package / "metrics" / "cost.py").write_text("from pkg.config.schema import limit\n")
    (package / "engine" / "kernel.py").write_text("from pkg.config import schema\n")
    return package


FAKE_LAYERS = (("",), ("config",), ("engine",), ("metrics",))


@pytest.mark.parametrize(
    "statement",
    [
        "from pkg.metrics.cost import limit",
        "def late():\n    import pkg.metrics.cost",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.metrics import cost",
    ],
)
def test_the_layer_check_names_an_import_into_a_higher_layer(tmp_path, statement):
    package = _layered_package(tmp_path)
    assert layer_errors(import_graph(package), FAKE_LAYERS) == []
    (package / "engine" / "kernel.py").write_text(f"from pkg.config import schema\n{statement}\n")
    assert layer_errors(import_graph(package), FAKE_LAYERS) == [
        "pkg.engine.kernel -> pkg.metrics.cost (layer 2, engine, imports layer 3, metrics, above it)"
    ]


def test_the_layer_check_names_a_module_in_no_layer(tmp_path):
    package = _layered_package(tmp_path)
    (package / "plots.py").write_text("from pkg.metrics import cost\n")
    assert layer_errors(import_graph(package), FAKE_LAYERS) == ["pkg.plots: in no layer (place plots in LAYERS)"]


INVARIANT = re.compile(r"^- \*\*(INV-\d+) ([a-z-]+)\*\*", re.M)


def cited(folder: Path, invariant: str) -> list[str]:
    pattern = re.compile(rf"\b{invariant}\b")
    return sorted(str(p.relative_to(folder.parent)) for p in folder.rglob("*.py") if pattern.search(p.read_text()))


def test_every_named_invariant_is_cited_where_the_code_keeps_it_and_in_a_test():
    guide = (SIM.parent / "docs" / "ARCHITECTURE.md").read_text()
    named = INVARIANT.findall(guide)
    assert [number for number, _ in named] == [f"INV-{n}" for n in range(1, len(named) + 1)]
    assert len(named) >= 8
    tests = SIM.parent / "tests"
    uncited = [
        f"{number} {name} in {folder.name}/"
        for number, name in named
        for folder in (SIM, tests)
        if not cited(folder, number)
    ]
    assert uncited == []
    # the check itself: an invariant no file names is reported
    assert cited(SIM, "INV-99") == []
