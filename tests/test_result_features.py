"""Results owned by features (``sim/engine/sections.py``, ``sim/metrics/sections.py``): a
feature defined in this file alone, touching no file of ``sim/``, adds a section to a run's
result, a section to its summary and a line to its printout; a run without the feature has
none of them; a name registers once in each registry."""

from __future__ import annotations

import json

import pytest

from sim.config import load_config
from sim.engine import Simulation
from sim.engine.faults import FAULT_LOG
from sim.engine.handoffs import PD
from sim.engine.prefix_result import PREFIX_CACHE, SHARING
from sim.engine.scaling import SCALING_LOG
from sim.engine.sections import RESULT_SECTIONS, ResultSection, result_section
from sim.metrics import format_summary, summarize, write_run
from sim.metrics.sections import SUMMARY_SECTIONS, SummarySection
from sim.metrics.tables import cluster_table, request_table


def _longest_prompt(run):
    """The toy feature's raw result, from the finished simulation; it is on in runs named toy-*."""
    if not run.config.name.startswith("toy"):
        return None
    return {"requests": len(run.requests), "longest_prompt": max(r.prompt_tokens for r in run.requests)}


def _toy_summary(result, tables):
    raw = TOY.of(result)
    if raw is None:
        return None
    return {**raw, "finished": int((tables.requests["status"] == "finished").sum())}


def _toy_lines(section, summary):
    return [f"toy: {section['finished']} of {section['requests']} finished, longest prompt {section['longest_prompt']}"]


TOY = ResultSection("toy", _longest_prompt)


@pytest.fixture
def toy_feature():
    """The toy feature's hooks, registered for one test and removed after it."""
    RESULT_SECTIONS.add(TOY)
    SUMMARY_SECTIONS.add(SummarySection("toy", after="simulation", summarize=_toy_summary, report_lines=_toy_lines))
    yield
    RESULT_SECTIONS.remove("toy")
    SUMMARY_SECTIONS.remove("toy")


def quickstart(name: str):
    config = load_config("experiments/configs/quickstart.yaml", [f"name={name}", "workload.num_requests=60"])
    return Simulation(config).run()


def test_a_feature_adds_its_result_summary_section_and_report_line_through_the_hooks(toy_feature, tmp_path):
    result = quickstart("toy-quickstart")
    assert TOY.of(result) == {"requests": 60, "longest_prompt": max(r.prompt_tokens for r in result.requests)}
    write_run(result, tmp_path / "run", plots=False)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    keys = list(summary)
    assert keys[keys.index("simulation") + 1] == "toy"  # placed after the key it names
    assert summary["toy"] == {**TOY.of(result), "finished": summary["requests"]["finished"]}
    text = format_summary(summary)
    assert f"toy: {summary['requests']['finished']} of 60 finished, longest prompt " in text


def test_a_run_without_the_feature_has_no_section_and_no_line(toy_feature):
    result = quickstart("quickstart")
    assert "toy" not in result.sections and TOY.of(result) is None
    summary = summarize(result, request_table(result), cluster_table(result))
    assert summary["toy"] is None  # null in summary.json, as every absent feature's
    assert "toy:" not in format_summary(summary)
    # the shipped features the quickstart does not use are absent the same way
    assert [section.of(result) for section in (PD, PREFIX_CACHE, SHARING, FAULT_LOG, SCALING_LOG)] == [None] * 5
    assert [summary[name] for name in ("pd", "prefix_cache", "sessions", "faults")] == [None] * 4


def test_the_toy_leaves_nothing_registered_after_its_test():
    assert RESULT_SECTIONS.get("toy") is None and SUMMARY_SECTIONS.get("toy") is None


def test_a_name_registers_once_in_each_registry():
    with pytest.raises(ValueError, match="result section 'pd' is registered twice"):
        result_section("pd", lambda run: None)
    with pytest.raises(ValueError, match="summary section 'pd' is registered twice"):
        SUMMARY_SECTIONS.add(SummarySection("pd", after="requests", summarize=lambda result, tables: None))
    assert RESULT_SECTIONS.get("pd") is PD  # the first registration stands


def test_a_section_after_a_key_the_summary_lacks_is_an_error():
    SUMMARY_SECTIONS.add(SummarySection("stray", after="no-such-key", summarize=lambda result, tables: 1))
    try:
        result = quickstart("quickstart")
        with pytest.raises(ValueError, match="after no key of the summary: \\['no-such-key'\\]"):
            summarize(result, request_table(result), cluster_table(result))
    finally:
        SUMMARY_SECTIONS.remove("stray")
