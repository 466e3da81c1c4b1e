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
