"""Who writes what: only a request changes its own fields (INV-2 request-owns-its-fields) and
only the ledger changes a block count (INV-1 blocks), found by walking every module's
assignments."""

from __future__ import annotations

import ast
from pathlib import Path

from sim.instance.request import FIELDS


SIM = Path(__file__).resolve().parents[1] / "sim"
REQUEST_NAMES = ("request", "req", "r", "victim", "migrant", "moving", "head", "arriving")
LEDGER_MODULES = ("blocks.py", "prefix_cache.py")  # the shipped ledgers: paged, and with a prefix cache


def _writes(path: Path):
    """(base name, attribute, line) of every assignment to an attribute in ``path``."""
    for node in ast.walk(ast.parse(path.read_text())):
        targets = list(node.targets) if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        while targets:
            target = targets.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                targets += target.elts  # a, b.c = ...
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                yield target.value.id, target.attr, target.lineno


def test_only_a_request_writes_its_fields_and_only_the_ledger_changes_block_counts():
    request_writes, block_writes = [], []
    for path in SIM.rglob("*.py"):
        where = path.relative_to(SIM.parent)
        for base, attr, line in _writes(path):
            if attr in FIELDS and base in REQUEST_NAMES and path.name != "request.py":
                request_writes.append(f"{where}:{line} {base}.{attr}")
            if attr in ("allocated", "reserved") and path.name not in LEDGER_MODULES:
                block_writes.append(f"{where}:{line} {base}.{attr}")
    assert request_writes == [] and block_writes == []


def test_the_field_check_finds_a_write_it_should(tmp_path):
    # the checker itself: a request-field write and a ledger-count write in a module are found
    sample = tmp_path / "sample.py"
    sample.write_text("def f(request, ledger, done):\n    request.generated += 1\n    ledger.allocated, x = 3, 4\n    done[request.id] = 1\n")
    found = list(_writes(sample))
    assert sorted(found) == [("ledger", "allocated", 3), ("request", "generated", 2)]  # not a read in an index


# The parts of a run: every class of these packages owns its state — the attributes its own
# code assigns (``self.x = ...``) and the fields it declares — and only its module writes them.
PART_PACKAGES = ("instance", "cluster", "engine")
# a Batch is its former's output: each shipped former fills the batches it forms
WRITERS = {"instance/batch.py": {"instance/batching.py", "instance/v1_batching.py"}}


def _targets(node):
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    else:
        return
    while targets:
        target = targets.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            targets += target.elts
        elif isinstance(target, ast.Attribute):
            yield target


def _is_self(target: ast.Attribute) -> bool:
    return isinstance(target.value, ast.Name) and target.value.id == "self"


def part_state(tree: ast.Module) -> set[str]:
    """What the classes of a module own: attributes assigned on ``self`` and declared fields."""
    owned = set()
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        owned |= {item.target.id for item in cls.body if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)}
        owned |= {target.attr for node in ast.walk(cls) for target in _targets(node) if _is_self(target)}
    return owned


def foreign_writes(modules: dict[str, ast.Module]) -> list[str]:
    """Writes to another object's attribute (not ``self``'s) that is part of some other
    module's state and of none of this module's, unless that module is a named writer."""
    state = {name: part_state(tree) for name, tree in modules.items()}
    found = []
    for name, tree in modules.items():
        for node in ast.walk(tree):
            for target in _targets(node):
                if _is_self(target) or target.attr in state[name]:
                    continue
                owners = [other for other, owned in state.items() if target.attr in owned]
                if owners and not any(name in WRITERS.get(owner, ()) for owner in owners):
                    found.append(f"{name}:{target.lineno} {ast.unparse(target)} (state of {', '.join(owners)})")
    return found


def test_every_part_of_a_run_is_the_only_writer_of_its_state():
    # busy, copying, in_flight, draining, headroom, a runtime's loop...: each changes through
    # its owner's methods (the former's copy_started, the endpoint's migration_started, the
    # status's drain, the reporter's set_headroom, InstanceRuntime.stop), never from outside
    modules = {
        str(path.relative_to(SIM)): ast.parse(path.read_text())
        for package in PART_PACKAGES
        for path in sorted((SIM / package).rglob("*.py"))
    }
    assert foreign_writes(modules) == []


def test_the_part_check_finds_a_write_from_outside_and_allows_the_owners():
    owner = ast.parse("class Former:\n    def __init__(self):\n        self.copying = 0\n    def up(self):\n        self.copying += 1\n")
    outsider = ast.parse("def copy(endpoint):\n    endpoint.batches.copying += 1\n    endpoint.other = 2\n")
    assert foreign_writes({"former.py": owner, "endpoint.py": outsider}) == [
        "endpoint.py:2 endpoint.batches.copying (state of former.py)"
    ]
    assert foreign_writes({"former.py": owner}) == []
