"""Trace readers: accepted formats, and validation errors that name file, row and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.cli.main import main
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
LENGTHS_HEADER = "num_prefill_tokens,num_decode_tokens"
VIDUR_HEADER = "arrived_at,num_prefill_tokens,num_decode_tokens"
QUICKSTART = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "quickstart.yaml"


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


# Corrupt files (issue 10): one case per class of damage. Each must stop the run with
# ``<file>: row <n>, column '<col>': <problem>`` instead of being read wrongly.
CORRUPT = {
    "extra cell in the first row (pandas would shift the columns)": (
        f"{LENGTHS_HEADER}\n10,3,7\n4,2\n",
        "row 2, column #3 (not in the header): extra cell '7' (the row has 3 cells, the header 2)",
    ),
    "extra cell in a later row": (
        f"{BURST_HEADER}\n1,GPT-4,5,3,8,Conversation log\n2,GPT-4,5,3,8,Conversation log,x\n",
        "row 3, column #7 (not in the header): extra cell 'x'",
    ),
    "missing cell": (
        f"{LENGTHS_HEADER}\n10,3\n4\n",
        "row 3, column 'num_decode_tokens': missing cell (the row has 1 cells, the header 2)",
    ),
    "absurd token count": (
        f"{LENGTHS_HEADER}\n10,3\n1e30,2\n",
        "row 3, column 'num_prefill_tokens': 1e30 tokens is more than 10,000,000",
    ),
    "token count just past the bound": (
        f"{AZURE_HEADER}\n2023-11-16 18:15:46.0,10,10000001\n",
        "row 2, column 'GeneratedTokens': 10000001 tokens is more than 10,000,000",
    ),
    "infinite timestamp": (
        f"{BURST_HEADER}\ninf,GPT-4,5,3,8,Conversation log\n",
        "row 2, column 'Timestamp': 'inf' is not a finite number",
    ),
    "NaN timestamp": (
        f"{VIDUR_HEADER}\n0.0,5,2\nnan,6,3\n",
        "row 3, column 'arrived_at': 'nan' is not a number",
    ),
    "timestamp after 2100 (a stamp in milliseconds)": (
        f"{VIDUR_HEADER}\n1700000000000,5,2\n",
        "row 2, column 'arrived_at': 1700000000000 s is after 4102444800",
    ),
    "negative timestamp": (
        f"{BURST_HEADER}\n-5,GPT-4,5,3,8,Conversation log\n",
        "row 2, column 'Timestamp': -5 s is negative",
    ),
    "date outside 1970-2099": (
        f"{AZURE_HEADER}\n2023-11-16 18:15:46.0,10,1\n2150-01-01 00:00:00.0,10,1\n",
        "row 3, column 'TIMESTAMP': '2150-01-01 00:00:00.0' is outside 1970–2099",
    ),
    "non-UTF-8 byte in a cell": (
        f"{BURST_HEADER}\n1,GPT-4,5,3,8,Conversation log\n2,GPT\xff4,5,3,8,Conversation log\n"
        .encode("latin-1"),
        "row 3, column 'Model': not UTF-8 text (byte 0xff)",
    ),
    "non-UTF-8 byte in the header": (
        "num_prefill_tokens,num_d\xe9code_tokens\n1,2\n".encode("latin-1"),
        "row 1, column #2: not UTF-8 text (byte 0xe9)",
    ),
    "blank lines keep row numbers equal to line numbers": (
        f"{LENGTHS_HEADER}\n10,3\n\n\n-4,2\n",
        "row 5, column 'num_prefill_tokens': -4 is negative",
    ),
    "repeated column": (
        "num_prefill_tokens,num_decode_tokens,num_decode_tokens\n1,2,3\n",
        "row 1: column 'num_decode_tokens' appears more than once",
    ),
}


@pytest.mark.parametrize(("content", "expected"), CORRUPT.values(), ids=CORRUPT.keys())
def test_corrupt_files_are_refused_naming_file_row_and_column(tmp_path, content, expected):
    path = tmp_path / "trace.csv"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert str(info.value).startswith(f"{path}: {expected}")
    assert "\n" not in str(info.value)


def test_a_byte_order_mark_and_crlf_line_ends_are_fine(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_bytes(b"\xef\xbb\xbf" + f"{LENGTHS_HEADER}\r\n10,3\r\n 7 , 1 \r\n".encode())
    table = read_lengths_table(path)
    assert table["prompt_tokens"].tolist() == [10, 7]
    assert table["output_tokens"].tolist() == [3, 1]


def test_the_cli_exits_2_with_one_line_for_a_corrupt_trace(tmp_path, capsys):
    path = tmp_path / "shifted.csv"
    path.write_text(f"{LENGTHS_HEADER}\n10,3,7\n")
    args = ["run", str(QUICKSTART), "--quiet", "--out", str(tmp_path / "out"), "--set"]
    assert main([*args, f"workload.trace={path}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"{path}: row 2, column #3 (not in the header): extra cell '7'" in err
