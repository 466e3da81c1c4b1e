"""Trace readers: accepted formats, and validation errors that name file, row and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.config import ConfigError
from sim.workload import (
    TraceError,
    detect_format,
    read_azure,
    read_burstgpt,
    read_lengths_table,
    read_trace,
)

BURST_HEADER = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"
AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"


def write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_trace_error_is_a_config_error():
    assert issubclass(TraceError, ConfigError)


def test_lengths_table_reads_counts_as_int64(tmp_path):
    table = read_lengths_table(write(tmp_path, "num_prefill_tokens,num_decode_tokens\n10,3\n7,1\n"))
    assert table["prompt_tokens"].tolist() == [10, 7]
    assert table["output_tokens"].tolist() == [3, 1]
    assert str(table["prompt_tokens"].dtype) == "int64"
    assert "timestamp" not in table.columns


def test_lengths_table_with_vidur_arrived_at_has_timestamps(tmp_path):
    text = "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,5,2\n0.5,6,3\n"
    table = read_lengths_table(write(tmp_path, text))
    assert table["timestamp"].tolist() == [0.0, 0.5]


@pytest.mark.parametrize(
    ("reader", "text", "expected"),
    [
        (
            read_lengths_table,
            "num_prefill_tokens,wrong\n1,2\n",
            "missing column 'num_decode_tokens'",
        ),
        (
            read_lengths_table,
            "num_prefill_tokens,num_decode_tokens\n10,3\n-4,2\n",
            "row 3, column 'num_prefill_tokens': -4 is negative",
        ),
        (
            read_lengths_table,
            "num_prefill_tokens,num_decode_tokens\n10,3\n4,abc\n",
            "row 3, column 'num_decode_tokens': 'abc' is not a number",
        ),
        (
            read_lengths_table,
            "num_prefill_tokens,num_decode_tokens\n10.5,3\n",
            "row 2, column 'num_prefill_tokens': 10.5 is not a whole number",
        ),
        (
            read_lengths_table,
            "num_prefill_tokens,num_decode_tokens\n10,3\n4,\n",
            "row 3, column 'num_decode_tokens': empty cell",
        ),
        (
            read_lengths_table,
            "num_prefill_tokens,num_decode_tokens\n0,3\n",
            "row 2, column 'num_prefill_tokens': 0 tokens (must be >= 1)",
        ),
        (
            read_burstgpt,
            "Timestamp,Model,Request tokens,Total tokens,Log Type\n1,GPT-4,5,5,Conversation log\n",
            "missing column 'Response tokens'",
        ),
        (
            read_burstgpt,
            f"{BURST_HEADER}\n1,GPT-4,5,3,8,Conversation log\n2,GPT-4,-5,3,8,Conversation log\n",
            "row 3, column 'Request tokens': -5 is negative",
        ),
        (
            read_burstgpt,
            f"{BURST_HEADER}\n1,GPT-4,5,3,8,Conversation log\nsoon,GPT-4,5,3,8,Conversation log\n",
            "row 3, column 'Timestamp': 'soon' is not a number",
        ),
        (
            read_burstgpt,
            f"{BURST_HEADER}\n1,GPT-4,5,three,8,Conversation log\n",
            "row 2, column 'Response tokens': 'three' is not a number",
        ),
        (
            read_azure,
            "TIMESTAMP,GeneratedTokens\n2023-11-16 18:15:46.6805900,44\n",
            "missing column 'ContextTokens'",
        ),
        (
            read_azure,
            f"{AZURE_HEADER}\n2023-11-16 18:15:46.6805900,374,44\n"
            "2023-11-16 18:15:50.9951690,-1,9\n",
            "row 3, column 'ContextTokens': -1 is negative",
        ),
        (
            read_azure,
            f"{AZURE_HEADER}\n2023-11-16 18:15:46.6805900,374,x\n",
            "row 2, column 'GeneratedTokens': 'x' is not a number",
        ),
        (
            read_azure,
            f"{AZURE_HEADER}\n2023-11-16 18:15:46.6805900,374,44\nyesterday,1,1\n",
            "row 3, column 'TIMESTAMP': 'yesterday' is not a date and time",
        ),
    ],
)
def test_bad_files_name_file_row_and_column(tmp_path, reader, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(TraceError) as info:
        reader(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert expected in message


def test_missing_empty_and_header_only_files(tmp_path):
    with pytest.raises(TraceError, match="trace file not found"):
        read_trace(tmp_path / "absent.csv")
    with pytest.raises(TraceError, match="empty file"):
        read_trace(write(tmp_path, ""))
    with pytest.raises(TraceError, match="no requests"):
        read_lengths_table(write(tmp_path, "num_prefill_tokens,num_decode_tokens\n"))


def test_burstgpt_drops_failures_and_filters_model_and_log_type(tmp_path):
    text = (
        f"{BURST_HEADER}\n"
        "5,ChatGPT,472,18,490,Conversation log\n"
        "6,GPT-4,100,0,100,Conversation log\n"  # failure: 0 response tokens
        "7,GPT-4,417,276,693,Conversation log\n"
        "9,GPT-4,50,20,70,API log\n"
    )
    path = write(tmp_path, text)
    everything = read_burstgpt(path)
    assert everything["prompt_tokens"].tolist() == [472, 417, 50]
    assert everything["timestamp"].tolist() == [5.0, 7.0, 9.0]
    gpt4_conv = read_burstgpt(path, model="GPT-4", log_type="Conversation log")
    assert gpt4_conv["prompt_tokens"].tolist() == [417]
    with pytest.raises(TraceError, match="no rows with Model 'Claude'.*'ChatGPT', 'GPT-4'"):
        read_burstgpt(path, model="Claude")


def test_burstgpt_zero_request_tokens_in_a_served_row_is_an_error(tmp_path):
    path = write(tmp_path, f"{BURST_HEADER}\n1,GPT-4,0,5,5,Conversation log\n")
    with pytest.raises(TraceError, match="row 2, column 'Request tokens': 0 tokens"):
        read_burstgpt(path)


def test_burstgpt_all_failures_leaves_no_requests(tmp_path):
    path = write(tmp_path, f"{BURST_HEADER}\n1,GPT-4,10,0,10,Conversation log\n")
    with pytest.raises(TraceError, match="no requests"):
        read_burstgpt(path)


def test_azure_2023_and_2024_stamps_become_seconds_from_first(tmp_path):
    text_2023 = (
        f"{AZURE_HEADER}\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n"
    )
    table = read_azure(write(tmp_path, text_2023, "a.csv"))
    assert table["timestamp"].tolist() == pytest.approx([0.0, 4.314579])
    text_2024 = (
        f"{AZURE_HEADER}\n2024-05-10 00:00:00.009930+00:00,10,2\n"
        "2024-05-10 00:00:01.009930+00:00,11,3\n"
    )
    assert read_azure(write(tmp_path, text_2024, "b.csv"))["timestamp"].tolist() == [0.0, 1.0]


def test_auto_format_detection(tmp_path):
    assert detect_format(["TIMESTAMP", "ContextTokens", "GeneratedTokens"], "x") == "azure"
    assert detect_format(BURST_HEADER.split(","), "x") == "burstgpt"
    assert detect_format(["num_prefill_tokens", "num_decode_tokens"], "x") == "lengths"
    path = write(tmp_path, "a,b\n1,2\n")
    with pytest.raises(
        TraceError, match=r"cannot tell the trace format from its columns \('a', 'b'\)"
    ):
        read_trace(path)


def test_burstgpt_filters_on_another_format_are_refused(tmp_path):
    path = write(tmp_path, "num_prefill_tokens,num_decode_tokens\n1,2\n")
    with pytest.raises(TraceError, match="apply to BurstGPT traces"):
        read_trace(path, burstgpt_model="GPT-4")
