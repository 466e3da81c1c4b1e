"""The shipped traces load, and their statistics are the ones traces/PROVENANCE.md states."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from scipy import stats

from sim.config import WorkloadConfig
from sim.workload import read_azure, read_burstgpt, read_lengths_table, read_trace
from sim.workload.sessions import read_sessions
from sim.workload.build import REPO_ROOT

TRACES = REPO_ROOT / "traces"


def load_summarise_script():
    spec = importlib.util.spec_from_file_location("summarise", TRACES / "summarise.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_provenance_table_matches_the_shipped_files():
    expected = load_summarise_script().table_rows()
    provenance = (TRACES / "PROVENANCE.md").read_text().splitlines()
    documented = [
        line for line in provenance if line.startswith("| `") or line.startswith("| file |")
    ]
    assert documented == [expected[0], *expected[2:]]


def test_provenance_preset_table_matches_what_the_presets_give():
    expected = load_summarise_script().preset_rows()
    provenance = (TRACES / "PROVENANCE.md").read_text().splitlines()
    start = provenance.index(expected[0])
    assert provenance[start : start + len(expected)] == expected


@pytest.mark.parametrize(
    ("reader", "name", "rows"),
    [
        (read_lengths_table, "sharegpt/sharegpt_v3_first_turn.csv", 9373),
        (read_azure, "azure/azure_conv_2023.csv", 19366),
        (read_azure, "azure/azure_code_2023.csv", 8819),
        (read_burstgpt, "burstgpt_shaped/burstgpt_shaped_gpt4_conv.csv", 10000),
        (read_lengths_table, "stress/stress_ramp.csv", 6836),
        (read_trace, "mooncake/mooncake_conversation.csv", 12031),
        (read_sessions, "sharegpt/sharegpt_v3_sessions.csv", 31615),
    ],
)
def test_shipped_traces_load_in_their_own_format(reader, name, rows):
    table = reader(TRACES / name)
    assert len(table) == rows
    prompts = table["prompt_tokens"] if "prompt_tokens" in table else table["new_tokens"]
    assert prompts.min() >= 1 and table["output_tokens"].min() >= 1


def burstgpt_shaped():
    return read_burstgpt(
        TRACES / "burstgpt_shaped/burstgpt_shaped_gpt4_conv.csv",
        model="GPT-4",
        log_type="Conversation log",
    )


def test_burstgpt_shaped_has_table1_statistics_exactly():
    table = burstgpt_shaped()
    assert table["prompt_tokens"].mean() == pytest.approx(830, abs=0.05)
    assert np.percentile(table["prompt_tokens"], 95) == pytest.approx(2345, abs=0.5)
    assert table["output_tokens"].mean() == pytest.approx(271, abs=0.05)
    assert np.percentile(table["output_tokens"], 95) == pytest.approx(669, abs=0.5)


def test_burstgpt_shaped_requests_have_a_zipf_density():
    """A power-law density: on log-spaced bins, log density falls on a line of slope −α < 0."""
    requests = burstgpt_shaped()["prompt_tokens"].to_numpy()
    edges = np.geomspace(1, requests.max(), 12)
    counts, _ = np.histogram(requests, edges)
    density = counts / np.diff(edges)
    centres = np.sqrt(edges[:-1] * edges[1:])
    slope, _, r, _, _ = stats.linregress(np.log(centres), np.log(density))
    assert -1.0 < slope < -0.3 and r**2 > 0.98


def test_burstgpt_shaped_responses_follow_the_published_relation():
    """BurstGPT README Fig. 4, GPT-4 (Conv.): mean response dips to ~150 tokens for ~300-token
    requests, then grows about linearly to ~400 at 2,000 (read by eye, so 20% slack)."""
    table = burstgpt_shaped()
    requests, responses = table["prompt_tokens"], table["output_tokens"]

    def mean_response(low: int, high: int) -> float:
        return float(responses[(requests >= low) & (requests < high)].mean())

    figure = {(200, 400): 160, (900, 1100): 280, (1400, 1600): 335, (1900, 2100): 410}
    for (low, high), expected in figure.items():
        assert mean_response(low, high) == pytest.approx(expected, rel=0.2), (low, high)
    assert mean_response(200, 400) < mean_response(900, 1100) < mean_response(1900, 2100)
    assert stats.spearmanr(requests, responses).statistic > 0.3


def test_default_trace_is_shipped():
    assert (REPO_ROOT / WorkloadConfig().trace).is_file()


def test_shipped_data_stays_small():
    total = sum(p.stat().st_size for p in TRACES.rglob("*.csv"))
    assert total < 4 * 1024 * 1024


def test_stress_trace_rebuilds_byte_for_byte(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "stress_ramp.csv"
    subprocess.run(
        [sys.executable, str(TRACES / "build_stress_ramp.py"), "--out", str(out)],
        check=True, capture_output=True, cwd=REPO_ROOT,
    )
    assert out.read_bytes() == (TRACES / "stress" / "stress_ramp.csv").read_bytes()
