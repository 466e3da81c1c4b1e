"""vLLM V1 against published serving runs: ``llumsim calibrate --engine vllm-v1 --device D``.

Each row of ``sim/hardware/data/v1_references.csv`` is one published measurement of vLLM serving a LLaMA
model on a GPU, cited with its source, vLLM version, workload and statistic. It is played
again in the simulator as it was run: one instance of the row's model, GPU and tensor
parallelism on the ``vllm-v1`` engine with the limits that vLLM version set by default for its
entry point (``max_num_batched_tokens``, ``max_num_seqs``, async scheduling), the row's client
and dataset (``sim.workload.vllm_bench``), and the row's statistic computed from the request
table as the benchmark computes it. A ``check`` row passes within ±15%; ``context`` rows ran
another engine (vLLM 0.6.0's V0 with multi-step scheduling) and are shown, not graded.
Each row is simulated with ``SEEDS`` seeds of the client and dataset draws (the published
number is one draw): the mean is graded, the range printed.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from sim.hardware.catalog import DATA_DIR
from sim.hardware.predictor_settings import MAX_DECODE_BATCH

REFERENCES = DATA_DIR / "v1_references.csv"
TOLERANCE = 0.15
# a GPU is validated by independent organisations' runs of more than one model size
MIN_SOURCES, MIN_MODELS = 3, 2
SEEDS = (0, 1, 2)
ROLES = ("check", "context")
STATISTICS = (
    "median_itl_ms", "median_tpot_ms", "mean_tpot_ms", "median_ttft_ms", "mean_e2e_s", "prompt_tokens_per_s",
)


@dataclass(frozen=True)
class ServingReference:
    """One published serving measurement (a row of ``v1_references.csv``)."""

    id: str
    role: str  # check (graded) or context (another engine: shown only)
    organisation: str
    source: str
    vllm: str
    async_scheduling: bool  # that version's default for its entry point
    max_num_batched_tokens: int
    max_num_seqs: int
    gpu: str
    device: str
    model: str
    tensor_parallel: int
    dataset: str  # random (fixed lengths) or sharegpt (the benchmark's sampler)
    prompt_tokens: int
    output_tokens: int
    requests: int
    client: str  # rate, concurrency or offline
    load: float
    statistic: str
    measured: float
    read: str


def load_references(path: Path = REFERENCES) -> list[ServingReference]:
    """The rows, checked: a bad value names its row and column."""
    rows = []
    with open(path, newline="") as handle:
        for number, raw in enumerate(csv.DictReader(handle), start=2):
            values = {}
            for field in fields(ServingReference):
                text = raw.get(field.name)
                if text is None:
                    raise ValueError(f"{path.name}: no column {field.name!r}")
                try:
                    values[field.name] = (
                        bool(int(text)) if field.type == "bool"
                        else int(text) if field.type == "int"
                        else float(text) if field.type == "float"
                        else text
                    )
                except ValueError:
                    raise ValueError(f"{path.name}: line {number}, column {field.name!r}: {text!r}") from None
            reference = ServingReference(**values)
            if reference.role not in ROLES or reference.statistic not in STATISTICS:
                raise ValueError(
                    f"{path.name}: line {number}: role {reference.role!r} or statistic {reference.statistic!r} "
                    f"unknown (roles: {', '.join(ROLES)}; statistics: {', '.join(STATISTICS)})"
                )
            rows.append(reference)
    return rows


def _lengths(reference: ServingReference, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from sim.workload.vllm_bench import sharegpt_lengths

    if reference.dataset == "sharegpt":
        return sharegpt_lengths(reference.requests, seed)
    if reference.dataset == "random":
        count = reference.requests
        return np.full(count, reference.prompt_tokens), np.full(count, reference.output_tokens)
    raise ValueError(f"{REFERENCES.name}: {reference.id}: unknown dataset {reference.dataset!r}")


def _config(reference: ServingReference):
    from sim.config import load_config

    pool = {
        "name": "v1",
        "instances": 1,
        "engine": "vllm-v1",
        "model": reference.model,
        "device": reference.device,
        "tensor_parallel": reference.tensor_parallel,
        "max_batched_tokens": reference.max_num_batched_tokens,
        # beyond the profiled decode batch the model has no measurement; the rows' loads
        # stay below it (``most_in_flight`` says so per row)
        "max_batch_size": min(reference.max_num_seqs, MAX_DECODE_BATCH),
        "async_scheduling": reference.async_scheduling,
    }
    return load_config(base={"name": f"calibrate-{reference.id}", "pools": [pool], "scheduler": {"name": "round-robin"}})


def statistic(reference: ServingReference, table: pd.DataFrame) -> float:
    """The row's statistic from a run's request table, as the benchmark computes it (TPOT:
    (end − first token) / (output − 1) per request; ITL at concurrency 1 is the same gap)."""
    finished = table[table["status"] == "finished"]
    ttft = finished["first_token"] - finished["arrival"]
    tpot = finished["decode_latency_per_token"].dropna()
    name = reference.statistic
    if name == "median_itl_ms":
        if reference.client != "concurrency" or reference.load != 1:
            raise ValueError(f"{reference.id}: median ITL is graded only one request at a time (it is TPOT then)")
        return float(tpot.median() * 1e3)
    if name == "median_tpot_ms":
        return float(tpot.median() * 1e3)
    if name == "mean_tpot_ms":
        return float(tpot.mean() * 1e3)
    if name == "median_ttft_ms":
        return float(ttft.median() * 1e3)
    if name == "mean_e2e_s":
        return float(finished["e2e_latency"].mean())
    span = finished["finish"].max() - table["arrival"].min()
    return float(finished["prompt_tokens"].sum() / span)  # prompt_tokens_per_s


def simulate(reference: ServingReference, seed: int) -> tuple[float, int, int]:
    """The row's statistic in one run, its unfinished requests and the largest running batch."""
    from sim.engine import Simulation
    from sim.metrics import request_table
    from sim.workload.vllm_bench import benchmark_workload

    prompt, output = _lengths(reference, seed)
    workload = benchmark_workload(prompt, output, reference.client, reference.load, seed)
    result = Simulation(_config(reference), workload=workload).run()
    table = request_table(result)
    unfinished = int((table["status"] != "finished").sum())
    return statistic(reference, table), unfinished, _most_in_flight(table)


def _most_in_flight(table: pd.DataFrame) -> int:
    """The most requests admitted and not yet ended at once."""
    starts = table["first_admitted"].dropna().to_numpy()
    ends = table["finish"].dropna().to_numpy()
    times = np.concatenate((starts, ends))
    steps = np.concatenate((np.ones(len(starts)), -np.ones(len(ends))))
    order = np.lexsort((steps, times))  # an end before a start at the same time
    return int(np.cumsum(steps[order]).max()) if len(order) else 0


def validation(device: str, model: Optional[str] = None) -> dict:
    """Every row of ``device`` (and ``model``) beside the simulator's answer."""
    rows = []
    for reference in load_references():
        if reference.device != device or (model is not None and reference.model != model):
            continue
        runs = [simulate(reference, seed) for seed in SEEDS]
        values = [value for value, _, _ in runs]
        predicted = float(np.mean(values))
        rows.append({
            **reference.__dict__,
            "predicted": predicted,
            "predicted_range": [min(values), max(values)],
            "unfinished": max(unfinished for _, unfinished, _ in runs),
            "most_in_flight": max(most for _, _, most in runs),
            "rel_error": predicted / reference.measured - 1,
        })
    checks = [row for row in rows if row["role"] == "check"]
    return {
        "device": device,
        "model": model,
        "references": rows,
        "sources": sorted({row["organisation"] for row in checks}),
        "models": sorted({row["model"] for row in checks}),
    }


def within_bound(row: dict) -> bool:
    return row["role"] != "check" or (row["unfinished"] == 0 and abs(row["rel_error"]) <= TOLERANCE)


def covered(result: dict) -> bool:
    """Check rows from ``MIN_SOURCES`` organisations and ``MIN_MODELS`` model sizes (one when
    the run was asked for one model)."""
    models = 1 if result["model"] else MIN_MODELS
    return len(result["sources"]) >= MIN_SOURCES and len(result["models"]) >= models


def passes(result: dict) -> bool:
    """Every check row within ±15% (and every request of its runs finished), from enough
    sources and model sizes: a device measured by fewer is not validated."""
    checks = [row for row in result["references"] if row["role"] == "check"]
    return covered(result) and all(map(within_bound, checks))


def _value(row: dict, value: float) -> str:
    unit = row["statistic"].rsplit("_", 1)[-1]
    if row["statistic"] == "prompt_tokens_per_s":
        return f"{value:,.0f} tok/s"
    return f"{value:.3g} {unit}" if not math.isnan(value) else "nan"


def format_validation(result: dict) -> str:
    lines = [
        f"vLLM V1 on {result['device']}: published serving runs played again (checks ±{100 * TOLERANCE:.0f}%, "
        f"mean of {len(SEEDS)} seeds; context rows ran another engine and are not graded)",
    ]
    if not [row for row in result["references"] if row["role"] == "check"]:
        lines.append("  no published measurement of vLLM V1 on this device: not validated (exit 1)")
    for row in result["references"]:
        low, high = row["predicted_range"]
        mark = "" if within_bound(row) else "  OUTSIDE"
        if row["unfinished"]:
            mark += f"  ({row['unfinished']} requests unfinished)"
        if row["most_in_flight"] >= MAX_DECODE_BATCH < row["max_num_seqs"]:
            mark += f"  (held to the profiles' {MAX_DECODE_BATCH} sequences; that vLLM runs {row['max_num_seqs']})"
        load = {"rate": f"{row['load']:g} req/s", "concurrency": f"concurrency {row['load']:g}", "offline": "all at once"}[row["client"]]
        lines.append(
            f"{row['role']:<7} {row['id']:<7} {row['organisation']}, vLLM {row['vllm']}, {row['model']} TP{row['tensor_parallel']}, "
            f"{row['dataset']} {load}: {row['statistic']} measured {_value(row, row['measured'])}, model "
            f"{_value(row, row['predicted'])} [{_value(row, low)}..{_value(row, high)}] ({100 * row['rel_error']:+.1f}%){mark}"
        )
    lines.append(
        f"sources graded: {len(result['sources'])} ({'; '.join(result['sources'])}); "
        f"model sizes: {', '.join(result['models']) or 'none'}"
        + ("" if covered(result) else f" — fewer than {MIN_SOURCES} sources or {MIN_MODELS} model sizes: not validated")
    )
    return "\n".join(lines)
