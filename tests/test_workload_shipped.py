"""The shipped traces load, and their statistics are the ones traces/PROVENANCE.md states."""

from __future__ import annotations

import importlib.util

import pytest

from sim.config import WorkloadConfig
from sim.workload import read_azure, read_burstgpt, read_lengths_table
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


@pytest.mark.parametrize(
    ("reader", "name", "rows"),
    [
        (read_lengths_table, "sharegpt/sharegpt_v3_first_turn.csv", 9373),
        (read_azure, "azure/azure_conv_2023.csv", 19366),
        (read_azure, "azure/azure_code_2023.csv", 8819),
        (read_burstgpt, "burstgpt_shaped/burstgpt_shaped_gpt4_conv.csv", 10000),
        (read_lengths_table, "stress/stress_ramp.csv", 6836),
    ],
)
def test_shipped_traces_load_in_their_own_format(reader, name, rows):
    table = reader(TRACES / name)
    assert len(table) == rows
    assert table["prompt_tokens"].min() >= 1 and table["output_tokens"].min() >= 1


def test_burstgpt_shaped_matches_the_published_statistics():
    table = read_burstgpt(
        TRACES / "burstgpt_shaped/burstgpt_shaped_gpt4_conv.csv",
        model="GPT-4",
        log_type="Conversation log",
    )
    assert table["prompt_tokens"].mean() == pytest.approx(830, rel=0.02)
    assert table["prompt_tokens"].quantile(0.95) == pytest.approx(2345, rel=0.03)
    assert table["output_tokens"].mean() == pytest.approx(271, rel=0.02)
    assert table["output_tokens"].quantile(0.95) == pytest.approx(669, rel=0.03)


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
