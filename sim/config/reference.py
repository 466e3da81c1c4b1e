"""The configuration reference, docs/configuration.md, generated from the schema.

Why generated: every key's type, default and range already live in the dataclasses of
``sim.config.schema``, ``workload_schema`` and ``slo_schema`` (their ``RANGES``), and its
meaning in the comment beside the field; a hand-written table drifts from them, this one
cannot (``tests/test_config_reference.py`` regenerates it and fails on any difference).

    python -m sim.config.reference > docs/configuration.md
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
import tokenize
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any, Iterator, Literal, Union

from sim.config.schema import SimulationConfig

HEADER = """\
# Configuration reference

Generated from the schema by `python -m sim.config.reference > docs/configuration.md`
(`tests/test_config_reference.py` fails when this file is not what the command writes): every
key a run config accepts, by section — its type, its default, the range of values it accepts
(`RANGES` in its section's dataclass; a value outside stops the run with exit code 2 naming the
key), the comment beside it in [`sim/config/schema.py`](../sim/config/schema.py),
[`workload_schema.py`](../sim/config/workload_schema.py) or
[`slo_schema.py`](../sim/config/slo_schema.py), and for a key that means something only
beside another, what it **needs** (`NEEDS` in its section: without it the key is refused, or
ignored and said so in the run's header and `summary.json`'s `ignored`;
[`sim/config/prerequisites.py`](../sim/config/prerequisites.py)). `null` means unset; a section marked
*optional* is absent unless given. How the sections fit together, with examples:
[running.md](running.md#using-it) (*Configuration*).
"""


@dataclasses.dataclass(frozen=True)
class Key:
    """One row of the reference."""

    name: str
    type: str
    default: str
    range: str
    meaning: str


@dataclasses.dataclass(frozen=True)
class Section:
    """One dataclass at one dotted place in a config, with the rows of its own keys."""

    path: str
    intro: str
    keys: tuple[Key, ...]


def sections(
    cls: type = SimulationConfig, path: str = "", kind: str = "", seen: dict[type, str] | None = None
) -> Iterator[Section]:
    """The sections under ``cls`` in the order its fields are declared, depth first: each
    nested dataclass (a field, an optional field or a list of them) is a section of its own;
    a section extending another's class lists only its own keys (``seen``: class -> path)."""
    seen = {} if seen is None else seen
    seen.setdefault(cls, path)
    hints = typing.get_type_hints(cls)
    own = [f for f in dataclasses.fields(cls) if f.name in cls.__dict__.get("__annotations__", {})]
    base = next((b for b in cls.__mro__[1:] if b in seen), None)
    extends = f"Also takes every key of `{seen[base]}`." if base is not None else ""
    keys, nested = [], []
    for f in own:
        inner, optional, many = _nested(hints[f.name])
        if inner is None:
            keys.append(_key(cls, f, hints[f.name]))
            continue
        where = f"{path}.{f.name}" if path else f.name
        what = "A list of entries." if many else "*Optional* (absent unless set)." if optional else ""
        nested.append((inner, where + ("[]" if many else ""), what))
    doc = (inspect.getdoc(cls) or "").replace("``", "`")
    intro = " ".join(part for part in (kind, doc, extends) if part)
    yield Section(path or "top level", intro, tuple(keys))
    for inner, where, what in nested:
        yield from sections(inner, where, what, seen)


def _nested(hint: Any) -> tuple[type | None, bool, bool]:
    """(the dataclass a field holds, whether it may be unset, whether a list of them)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if _is_union(hint) and len(args) == 1:
        inner, _, many = _nested(args[0])
        return inner, True, many
    if typing.get_origin(hint) is list and dataclasses.is_dataclass(args[0]):
        return args[0], False, True
    return (hint, False, False) if dataclasses.is_dataclass(hint) else (None, False, False)


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (Union, types.UnionType)


def _key(cls: type, f: dataclasses.Field, hint: Any) -> Key:
    allowed = getattr(cls, "RANGES", {}).get(f.name)
    if f.default is not dataclasses.MISSING:
        default = _value(f.default)
    elif f.default_factory is not dataclasses.MISSING:
        default = _value(f.default_factory())
    else:
        default = "required"
    span = f"{allowed.interval()} {allowed.unit}".strip() if allowed else ""
    meaning = _comment(cls, f.name)
    needs = getattr(cls, "NEEDS", {}).get(f.name)
    if needs is not None:  # its prerequisite (sim.config.prerequisites)
        without = "refused" if needs.refuse else "ignored, and the run says so"
        which = f" (as {', '.join(f'`{v}`' for v in needs.values)})" if needs.values else ""
        meaning += f" **Needs**{which} {needs.what}; without it {without}."
    return Key(f.name, _type(hint), default, span, meaning.strip())


def _type(hint: Any) -> str:
    """A type as a reader of YAML would say it."""
    args = typing.get_args(hint)
    if _is_union(hint):
        return " or ".join("null" if a is type(None) else _type(a) for a in args)
    if typing.get_origin(hint) is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if typing.get_origin(hint) is list:
        return f"list of {_type(args[0])}"
    return {int: "integer", float: "number", str: "string", bool: "boolean"}[hint]


def _value(value: Any) -> str:
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float):
        return f"`{value:g}`"
    return f"`{value}`"


def _comment(cls: type, name: str) -> str:
    """The comment written beside a field: on its line, or on the comment lines just above."""
    lines, comments = _source(inspect.getsourcefile(cls))
    node = next(
        n
        for n in ast.walk(_tree(inspect.getsourcefile(cls)))
        if isinstance(n, ast.ClassDef) and n.name == cls.__name__
    )
    field = next(
        n for n in node.body if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", None) == name
    )
    above = []
    line = field.lineno - 1
    while line >= 1 and lines[line - 1].strip().startswith("#"):
        above.insert(0, comments[line])
        line -= 1
    beside = [comments[n] for n in range(field.lineno, field.end_lineno + 1) if n in comments]
    text = " ".join(above + beside)
    return text.replace("``", "`").replace("|", "\\|")


@cache
def _source(path: str) -> tuple[list[str], dict[int, str]]:
    """A module's lines and its comments by line number (the text after ``#``)."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    with open(path, encoding="utf-8") as handle:
        tokens = tokenize.generate_tokens(handle.readline)
        comments = {t.start[0]: t.string.lstrip("#").strip() for t in tokens if t.type == tokenize.COMMENT}
    return lines, comments


@cache
def _tree(path: str) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"))


def markdown() -> str:
    """docs/configuration.md, whole."""
    parts = [HEADER]
    for section in sections():
        title = section.path if section.path == "top level" else f"`{section.path}`"
        parts.append(f"\n## {title}\n\n{section.intro}\n" if section.intro else f"\n## {title}\n")
        if section.keys:
            parts.append("\n| key | type | default | range | meaning |\n|---|---|---|---|---|\n")
            parts.extend(
                f"| `{k.name}` | {k.type} | {k.default} | {k.range} | {k.meaning} |\n" for k in section.keys
            )
    return "".join(parts)


def main() -> int:
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
