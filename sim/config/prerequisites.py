"""Options that mean something only beside another.

Each such option declares its prerequisite beside its schema, in its section's ``NEEDS``
(field name -> ``Needs``); ``check`` walks a whole config once it is loaded. An option set
without its prerequisite either contradicts the run — refused with one line naming both
keys — or has no effect, which the run says once in its header and in ``summary.json``
(``ignored``), so nobody believes they measured it. The configuration reference shows each
option's prerequisite (``sim.config.reference``).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any, Callable, Iterator

from sim.config.loader import ConfigError

# a whole run's config (sim.config.schema.SimulationConfig, which imports this module)
RunConfig = Any


@dataclass(frozen=True)
class Needs:
    """``what``: the prerequisite as a reader sets it (naming its key); ``holds``: whether a
    config has it; ``refuse``: without it the option contradicts the run (else it is only
    ignored); ``values``: the option's values that need it (empty: any but its default)."""

    what: str
    holds: Callable[[RunConfig], bool]
    refuse: bool = False
    values: tuple[Any, ...] = ()


def _sections(section: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every dataclass in the config with its dotted path (lists indexed: ``pools[1]``)."""
    yield path, section
    for f in fields(section):
        value = getattr(section, f.name)
        where = f"{path}.{f.name}" if path else f.name
        if is_dataclass(value):
            yield from _sections(value, where)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if is_dataclass(item):
                    yield from _sections(item, f"{where}[{index}]")


def check(config: RunConfig) -> list[str]:
    """The options set without their prerequisite that have no effect, one line each;
    raises ``ConfigError`` for the first that contradicts the run."""
    ignored = []
    for path, section in _sections(config, ""):
        for name, needs in getattr(type(section), "NEEDS", {}).items():
            value = getattr(section, name)
            default = next(f for f in fields(section) if f.name == name)
            unset = default.default is not MISSING and value == default.default
            if (value in needs.values if needs.values else not unset) and not needs.holds(config):
                key = f"{path}.{name}" if path else name
                line = f"{key}: {_show(value)} needs {needs.what}"
                if needs.refuse:
                    raise ConfigError(line)
                ignored.append(f"{line}; without it, it has no effect")
    return ignored


def _show(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
