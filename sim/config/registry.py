"""Named policy registries: a new rule is one class and one ``register`` line.

Configs choose rules by name (``scheduler.dispatch: freeness``); an unknown name is a
``ConfigError`` that names the key and lists the known rules.
"""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

from sim.config.loader import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Rules of one kind (dispatch, pairing, ...) by name."""

    def __init__(self, kind: str, key: str, noun: str = "rule") -> None:
        self.kind = f"{kind} {noun}"  # "dispatch rule", "batch former part"
        self.key = key  # the config key that names a rule of this kind
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Class decorator (or plain call) adding ``name`` to the registry."""

        def add(entry: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = entry
            return entry

        return add

    def unregister(self, name: str) -> None:
        """Forget ``name`` (a rule registered for one test, or one experiment)."""
        del self._entries[name]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def get(self, name: str, key: str | None = None) -> T:
        """The entry ``name``; unknown, a ConfigError naming ``key`` (default: the registry's)."""
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries))
            raise ConfigError(f"{key or self.key}: unknown {self.kind} {name!r} (known: {known})") from None
