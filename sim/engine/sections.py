"""Features' sections of a run's result, so that a feature's results never edit
``SimulationResult``: each feature registers, beside its engine code, a ``ResultSection``
— a name, and a function of the finished simulation that returns the feature's raw result,
or None when the run does not have the feature. ``inspection.result`` fills
``SimulationResult.sections`` with every section a run has, and readers ask the section for
its part of a result (``FAULT_LOG.of(result)``), typed, None when the run did not have it
(desmod's ``get_result_hook``, one per feature)."""

from __future__ import annotations

from typing import Any, Callable, Generic, Iterator, Optional, Protocol, TypeVar, cast

from sim.engine.result import SimulationResult

T = TypeVar("T")


class Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)


class SectionRegistry(Generic[N]):
    """Sections by name, in the order they registered; a name registers once, so two
    features cannot write one section."""

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "result section", "summary section": for the error
        self._sections: dict[str, N] = {}

    def add(self, section: N) -> N:
        if section.name in self._sections:
            raise ValueError(f"{self.kind} {section.name!r} is registered twice")
        self._sections[section.name] = section
        return section

    def remove(self, name: str) -> None:
        """Undo ``add`` (a test's toy feature leaves no section behind)."""
        del self._sections[name]

    def get(self, name: str) -> Optional[N]:
        return self._sections.get(name)

    def __iter__(self) -> Iterator[N]:
        return iter(tuple(self._sections.values()))


class ResultSection(Generic[T]):
    """One feature's part of a run's result: ``collect(run)`` of the finished simulation
    (None: the run does not have the feature)."""

    def __init__(self, name: str, collect: Callable[[Any], Optional[T]]) -> None:
        self.name = name
        self.collect = collect

    def of(self, result: SimulationResult) -> Optional[T]:
        """This section of ``result`` (None: the run did not have the feature)."""
        return cast(Optional[T], result.sections.get(self.name))


RESULT_SECTIONS: SectionRegistry[ResultSection[Any]] = SectionRegistry("result section")


def result_section(name: str, collect: Callable[[Any], Optional[T]]) -> ResultSection[T]:
    """Register a feature's result section; the section returned is the feature's accessor."""
    section = ResultSection(name, collect)
    RESULT_SECTIONS.add(section)
    return section


def collect_sections(run: Any) -> dict[str, object]:
    """Every registered section the finished simulation ``run`` has, by name."""
    collected = ((section.name, section.collect(run)) for section in RESULT_SECTIONS)
    return {name: value for name, value in collected if value is not None}
