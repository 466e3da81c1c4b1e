"""Figure 10 held out: fit the transfer model on part of the rows and predict the rest.

``sim/bench/fit_transfer.py`` fits the stage latency and per-GPU bandwidth to every LLaMA-7B
blocking-copy and live-migration row and the network bandwidth to the paper's LLaMA-30B
blocking copy, so the bench's agreement on those rows is a residual. Two checks that are
not (``llumsim bench migration --held-out``, or ``python -m sim.bench.holdout``):

1. *lengths*: fit on the 7B rows at three lengths (``FIT_LENGTHS``), predict the 7B rows at
   the other three;
2. *models*: fit on the 7B rows alone, the network left uncapped (no 7B row can say where a
   4-GPU instance's link limits it), and predict LLaMA-30B: its blocking copy at 8k (the
   paper's ~3.2 s) and its live downtime (the paper's 20–30 ms).

Each prediction is judged by the bench's own bounds (``sim.bench.migration.judge``) and its
relative error printed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from sim.bench.fit_transfer import NETWORK_UNCAPPED, Reference, fit_stage_constants
from sim.bench.migration import (
    LENGTHS,
    TRANSFER_FIT_MODEL,
    TRANSFER_FIT_MODES,
    judge,
    reference_ms,
    run_bench,
)

FIT_LENGTHS = (256, 1024, 4096)  # every other length, the ends' neighbours predicted
PREDICTED_MODEL = "llama-30b"


@dataclass(frozen=True)
class Prediction:
    split: str
    model: str
    mode: str
    seq_len: int
    predicted_ms: float
    reference_ms: float
    reference: str
    error: float  # predicted / reference − 1
    ok: bool  # within the bench's bound for the row


@dataclass(frozen=True)
class HeldOut:
    split: str
    fitted_on: str
    constants: dict
    predictions: list[Prediction]

    @property
    def worst_error(self) -> float:
        return max(abs(p.error) for p in self.predictions)

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.predictions)


def _predict(split: str, models: Sequence[str], modes: Sequence[str], lengths: Sequence[int],
             constants: dict, reference: Reference) -> list[Prediction]:
    predictions = []
    for row in run_bench(models, modes, lengths, transfer_overrides=constants):
        ref, source = reference(row.model, row.mode, row.seq_len)
        if math.isnan(ref):
            continue  # nothing published to predict
        error, ok = judge(row.mode, row.downtime_ms, row.stages, ref, source)
        predictions.append(Prediction(split, row.model, row.mode, row.seq_len, row.downtime_ms, ref, source, error, ok))
    return predictions


def held_out_lengths(fit_lengths: Sequence[int] = FIT_LENGTHS, reference: Reference = reference_ms) -> HeldOut:
    """Fit on the 7B rows at ``fit_lengths``; predict the 7B rows at the other lengths."""
    constants = fit_stage_constants(fit_lengths, reference)
    others = [n for n in LENGTHS if n not in fit_lengths]
    fitted_on = f"{TRANSFER_FIT_MODEL} blocking and live at {', '.join(map(str, fit_lengths))} tokens"
    predictions = _predict("lengths", [TRANSFER_FIT_MODEL], TRANSFER_FIT_MODES, others, constants, reference)
    return HeldOut("lengths", fitted_on, constants, predictions)


def held_out_model(reference: Reference = reference_ms) -> HeldOut:
    """Fit on every 7B row, network uncapped; predict the 30B live and blocking rows."""
    constants = {**fit_stage_constants(LENGTHS, reference), "network_bandwidth": NETWORK_UNCAPPED}
    fitted_on = f"{TRANSFER_FIT_MODEL} blocking and live at every length, network uncapped"
    predictions = _predict("models", [PREDICTED_MODEL], ("live", "blocking"), LENGTHS, constants, reference)
    return HeldOut("models", fitted_on, constants, predictions)


def held_out_checks(reference: Reference = reference_ms) -> list[HeldOut]:
    return [held_out_lengths(reference=reference), held_out_model(reference)]


def format_held_out(checks: Sequence[HeldOut]) -> str:
    lines = []
    for check in checks:
        c = check.constants
        network = "uncapped" if c["network_bandwidth"] >= NETWORK_UNCAPPED else f"{c['network_bandwidth'] / 1e9:.2f} GB/s"
        lines += [
            f"held out, {check.split}: fitted on {check.fitted_on}",
            f"  stage latency {c['stage_latency'] * 1e3:.2f} ms, per-GPU bandwidth "
            f"{c['gpu_bandwidth'] / 1e9:.2f} GB/s, network {network}",
            f"  {'model':<10}{'mode':<10}{'seq_len':>8}{'predicted ms':>14}{'reference ms':>14}{'error':>9}  ok  reference",
        ]
        for p in check.predictions:
            lines.append(
                f"  {p.model:<10}{p.mode:<10}{p.seq_len:>8}{p.predicted_ms:>14.1f}{p.reference_ms:>14.0f}"
                f"{p.error * 100:>+8.1f}%  {'yes' if p.ok else 'NO ':<3} {p.reference}"
            )
        lines.append(
            f"  worst held-out error {check.worst_error * 100:.1f}%; "
            f"{sum(p.ok for p in check.predictions)}/{len(check.predictions)} predictions within the bench's bounds"
        )
    return "\n".join(lines)


def main() -> None:
    print(format_held_out(held_out_checks()))


if __name__ == "__main__":
    main()
