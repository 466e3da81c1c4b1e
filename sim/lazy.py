"""Package exports imported on first use, so importing one light submodule (a config check,
``--help``) does not pay for the package's heavy ones (numpy, pandas, scipy, matplotlib,
Vidur): ``from sim.engine import Simulation`` still works, and loads the engine only then."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_exports(
    namespace: dict[str, Any], modules: Mapping[str, str]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` for the package whose ``globals()`` is
    ``namespace``: ``modules`` maps each submodule (relative name) to the names it exports,
    space-separated; a name is imported when first asked for, then cached on the package."""
    package = namespace["__name__"]
    exports = {name: f"{package}.{module}" for module, names in modules.items() for name in names.split()}

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return sorted(exports), __getattr__, __dir__
