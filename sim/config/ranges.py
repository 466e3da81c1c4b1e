"""Sensible values for config keys, and the checks that refuse everything else.

Every numeric key has a finite ``Range`` of physically sensible values in its section's
``RANGES`` (a test checks that none is missing): infinities, NaN and values that would make
a run degenerate or endless — a rate of 1e-320 requests/s, 10^13 requests, a CV whose gaps
all underflow to zero — are refused before anything is built.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from sim.config.limits import MAX_NAME_CHARS
from sim.config.loader import ConfigError


def require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _show(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) or abs(value) >= 10**12 else str(value)


@dataclass(frozen=True)
class Range:
    """The sensible values of a numeric key: a finite interval, closed unless marked open."""

    low: float
    high: float
    unit: str = ""
    open_low: bool = False
    open_high: bool = False

    def interval(self) -> str:
        """The interval as written in errors and in docs/configuration.md, e.g. ``(0, 1]``."""
        left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
        return f"{left}{_show(self.low)}, {_show(self.high)}{right}"

    def check(self, name: str, value: Any) -> None:
        """Raise a ConfigError naming ``name`` if ``value`` (a number, a list of numbers, or
        None: unset) lies outside."""
        if value is None:
            return
        if isinstance(value, list):
            for index, item in enumerate(value):
                self.check(f"{name}[{index}]", item)
            return
        unit = f" {self.unit}" if self.unit else ""
        if math.isnan(value):
            raise ConfigError(f"{name}: must be a number in {self.interval()}{unit}, got nan")
        if value < self.low or (self.open_low and value == self.low):
            bound = f"{'>' if self.open_low else '>='} {_show(self.low)}"
        elif value > self.high or (self.open_high and value == self.high):
            bound = f"{'<' if self.open_high else '<='} {_show(self.high)}"
        else:
            return
        raise ConfigError(f"{name}: must be {bound}{unit}, got {_show(value)}")


def check_ranges(section: Any) -> None:
    """Check every key of a config section against its ``RANGES``."""
    for name, allowed in type(section).RANGES.items():
        allowed.check(name, getattr(section, name))


FRACTION = Range(0.0, 1.0)
TOKENS = Range(1, 1_000_000, "tokens")  # lengths: beyond any model's context
SECONDS = Range(0.0, 1e9, "s")  # points in simulated time (~30 years)
DURATION = Range(0.0, 86_400.0, "s")  # waits: at most a day
FREENESS = Range(-1e7, 1e7)  # blocks per request, either sign
INSTANCES = Range(1, 4096)

_PLAIN_NAME = re.compile(rf"[A-Za-z0-9_+=,@~-][A-Za-z0-9_.+=,@~-]{{0,{MAX_NAME_CHARS - 1}}}")


def check_run_name(key: str, name: str) -> str:
    """A run or sweep name becomes a folder under the output folder: it must be one plain
    name (letters, digits, ``_ . + = , @ ~ -``; not starting with a dot), never a path."""
    require(
        bool(_PLAIN_NAME.fullmatch(name)),
        f"{key}: must be a plain folder name (letters, digits, '_.+=,@~-', not starting with "
        f"'.', at most {MAX_NAME_CHARS} characters), got "
        + (repr(name) if len(name) <= 80 else f"{name[:40]!r}... ({len(name):,} characters)"),
    )
    return name
