"""Turn YAML (plus ``--set key=value`` overrides) into typed config dataclasses.

Every error names the dotted key or the file it came from, because a researcher editing a
grid of YAML files needs to know *where* the mistake is, not see a traceback.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
import types
import typing
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, TypeVar

import yaml

import sim.config.bounded_yaml as bounded_yaml
from sim.config.limits import MAX_YAML_BYTES

T = TypeVar("T")


class ConfigError(ValueError):
    """A bad configuration value; the message names the key or file."""


# YAML 1.1 (PyYAML) reads ``1e-3`` and ``5e6`` as strings; YAML 1.2 and every user read them
# as numbers. A string of exactly this shape is taken as the number it spells.
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _as_number(value: Any) -> Any:
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        return float(value)
    return value


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """Check ``value`` against the annotation ``tp`` (after light, lossless coercion)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, key)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if errors else f"{key}: bad value {value!r}")
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise ConfigError(
                f"{key}: {value!r} is not one of {', '.join(repr(a) for a in allowed)}"
            )
        return value
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a mapping, got {value!r}")
        return from_dict(tp, value, key)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        (item_tp, *_) = typing.get_args(tp) or (Any,)
        return [_coerce(v, item_tp, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a mapping, got {value!r}")
        return dict(value)
    if tp is Any:
        return value
    if tp is float:
        value = _as_number(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        return float(value)
    if tp is int:
        value = _as_number(value)
        if isinstance(value, bool) or not (
            isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        ):
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        return int(value)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return str(value)
    raise ConfigError(f"{key}: unsupported type {_type_name(tp)}")


@lru_cache(maxsize=None)
def _type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints`` once per class: evaluating the annotations each time was
    ~70% of expanding a grid (2,160 configs)."""
    return typing.get_type_hints(cls)


def from_dict(cls: type[T], data: Mapping[str, Any], prefix: str = "") -> T:
    """Build dataclass ``cls`` from ``data``; unknown keys and bad types raise ConfigError."""
    hints = _type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    kwargs = {}
    for raw_key, value in data.items():
        key = str(raw_key).replace("-", "_")
        dotted = f"{prefix}.{key}" if prefix else key
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise ConfigError(f"{dotted}: unknown key (known keys here: {known})")
        kwargs[key] = _coerce(value, hints[key], dotted)
    for name, f in fields.items():
        if name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{prefix}.{name}: required key missing" if prefix else f"{name}: required key missing")
    try:
        obj = cls(**kwargs)
    except ConfigError as exc:
        raise ConfigError(f"{prefix}.{exc}" if prefix else str(exc)) from None
    return obj


# field metadata: a key left out of ``to_dict`` while empty (a key added later that must not
# change the hash or the written config of runs that do not use it)
OMIT_WHEN_EMPTY = "omit_when_empty"
# a knob added after runs were stored: left out of the hash at its default, so their keys hold
OMIT_WHEN_DEFAULT = "omit_when_default"


def to_dict(obj: Any) -> Any:
    """Plain-data view of a config (for summaries, hashing and re-loading)."""
    if dataclasses.is_dataclass(obj):
        return {
            f.name: to_dict(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if not (f.metadata.get(OMIT_WHEN_EMPTY) and not getattr(obj, f.name))
            and not (f.metadata.get(OMIT_WHEN_DEFAULT) and getattr(obj, f.name) == f.default)
        }
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return obj


def config_hash(obj: Any) -> str:
    """Stable short hash of a resolved config: the key of a run in a results store."""
    text = json.dumps(to_dict(obj), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def parse_override(text: str) -> tuple[list[str], Any]:
    """``a.b.c=value`` -> (['a','b','c'], value parsed as YAML)."""
    if "=" not in text:
        raise ConfigError(f"--set {text!r}: expected key=value")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"--set {text!r}: empty key")
    try:
        value = bounded_yaml.parse(raw) if raw.strip() else ""
    except bounded_yaml.UnsafeYaml as exc:
        raise ConfigError(f"--set {key}: {exc}") from None
    except yaml.YAMLError:
        value = raw
    return key.split("."), value


def set_dotted(data: dict, dotted: str, value: Any) -> None:
    """Set ``a.b.c`` in nested ``data``; a mapping value is merged into a mapping there."""
    parts = dotted.split(".")
    node = data
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(f"{'.'.join(parts[: i + 1])}: is not a section")
        node = child
    last = parts[-1]
    if isinstance(value, Mapping) and isinstance(node.get(last), dict):
        for key, item in value.items():
            set_dotted(node[last], str(key), item)
    else:
        node[last] = copy.deepcopy(value)


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """Apply ``--set`` overrides to raw YAML data (before typing, so errors stay uniform)."""
    for text in overrides:
        path, value = parse_override(text)
        set_dotted(data, ".".join(path), value)
    return data


def read_yaml(path: str | Path) -> dict:
    """Read a YAML mapping; a missing, oversized or malformed file (``bounded_yaml``: alias
    bombs, cycles, repeated keys) is a ConfigError naming it and the line."""
    path = Path(path)
    try:
        if not path.is_file():
            raise ConfigError(f"{path}: config file not found")
        size = path.stat().st_size
        if size > MAX_YAML_BYTES:
            raise ConfigError(f"{path}: {size:,} bytes; a config or grid is at most {MAX_YAML_BYTES:,}")
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path} (line {line}): not UTF-8 text (byte 0x{exc.object[exc.start]:02x})"
        ) from None
    try:
        data = bounded_yaml.parse(text)
    except bounded_yaml.UnsafeYaml as exc:
        where = f" (line {exc.line})" if exc.line else ""
        raise ConfigError(f"{path}{where}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"{path}{where}: not valid YAML") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data
