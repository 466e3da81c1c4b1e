"""Features' sections of a run's summary, so that a feature's metrics never edit the
summary or the report: each feature registers, in its own module of ``sim.metrics``, a
``SummarySection`` — its ``summary.json`` section, made from the run's result and tables,
and its lines in ``llumsim run``'s printout. The modules register on import
(``sim.metrics.features``); ``summarize`` places each section after the key it names, and
``format_summary`` prints each section's lines in the summary's order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import pandas as pd

from sim.engine.result import SimulationResult
from sim.engine.sections import SectionRegistry
from sim.metrics.tables import instance_table


@dataclass
class Tables:
    """The run's tables a section reads; the instance table, which only some sections read,
    is built at the first asking."""

    result: SimulationResult
    requests: pd.DataFrame
    cluster: pd.DataFrame
    migrations: pd.DataFrame
    built_instances: Optional[pd.DataFrame] = None

    @property
    def instances(self) -> pd.DataFrame:
        if self.built_instances is None:
            self.built_instances = instance_table(self.result)
        return self.built_instances


def no_lines(section: Any, summary: dict[str, Any]) -> list[str]:
    """A section that only ``summary.json`` shows (``decode_stall``)."""
    return []


@dataclass(frozen=True)
class SummarySection:
    """A feature's section of ``summary.json``: ``summarize`` returns it (None, written as
    null: the run does not have the feature); ``report_lines`` prints it, given the whole
    summary too (a line may quote another section)."""

    name: str
    after: str  # the key it follows in summary.json (sections naming one key: in registration order)
    summarize: Callable[[SimulationResult, Tables], Any]
    report_lines: Callable[[Any, dict[str, Any]], list[str]] = no_lines


SUMMARY_SECTIONS: SectionRegistry[SummarySection] = SectionRegistry("summary section")


def with_sections(core: dict[str, Any], result: SimulationResult, tables: Tables) -> dict[str, Any]:
    """``core`` with every registered section placed after the key it names."""
    following: dict[str, list[SummarySection]] = {}
    for section in SUMMARY_SECTIONS:
        following.setdefault(section.after, []).append(section)
    summary: dict[str, Any] = {}

    def put(key: str, value: Any) -> None:
        summary[key] = value
        for section in following.pop(key, ()):
            put(section.name, section.summarize(result, tables))

    for key, value in core.items():
        put(key, value)
    if following:
        raise ValueError(f"summary sections after no key of the summary: {sorted(following)}")
    return summary


def report_lines(summary: dict[str, Any]) -> list[str]:
    """Each registered section's lines, in the summary's order (a summary stored before a
    section existed has none of it)."""
    lines = []
    for key, value in summary.items():
        section = SUMMARY_SECTIONS.get(key)
        if section is not None and value is not None:
            lines += section.report_lines(value, summary)
    return lines
