"""Workload shaping: reshape request lengths by scaling, filtering, matching and capping.

A trace is what it is; an experiment sometimes needs it different — longer prompts, no
requests an instance cannot hold, or the published statistics of a data set that cannot be
shipped. ``workload.shape`` says how, per field (``input``, ``output``), and every step is
deterministic. The steps run in this fixed order:

1. **scale** (table): ``ceil(length · scale)``, at least 1 token (products are rounded to 1e-9
   first, so 10 × 1.1 is 11, not 12).
2. **min / max** (table): drop requests whose scaled length lies outside [min, max] — in either
   field, so a request is kept or dropped whole. This happens before requests are drawn, so
   ``num_requests`` still gets N (a length table draws N from the rows left; a timestamped
   trace takes the first N left by time — a dropped request leaves its gap in a replayed
   clock). Synthetic lengths have no table to filter: filters there are an error.
3. **match** (drawn requests): a monotone map onto a target mean and 95th percentile, fitted
   on the requests the run receives (see ``match_mean_p95``), so the targets hold for any N
   and seed.
4. **cap** (drawn requests): ``min(length, cap)`` — truncation, as the Llumnix artifact's
   client does at 6,144 tokens (``benchmark_throughput.py``: ``sample_burstgpt_request`` and
   the synthetic generators). A match is fitted with its cap included, so the mean holds
   after truncation. To drop long requests instead, use ``max``; to keep them and let the
   simulator abort them, leave both unset (an instance aborts a request whose prompt exceeds
   its batch token budget or KV capacity, or whose sequence outgrows the model's length,
   with reason ``exceeds_instance_limits``).
5. **total_below** (drawn requests): drop every request whose prompt + output has reached
   ``total_below`` tokens — the artifact's ShareGPT client keeps a pair only if prompt +
   answer < 12,800 (``sample_dataset_requests``), so the run has fewer requests, as the
   artifact's had. (That client counts a BOS token in each field; the shipped lengths do not,
   a 2-token difference left unmodelled.)

With nothing set, every step is skipped and the workload is byte-identical to an unshaped one.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Optional

import numpy as np
import pandas as pd

from sim.config import ConfigError
from sim.config.workload_schema import FieldShapeConfig, MatchConfig, ShapeConfig

FIELDS = {"input": "prompt_tokens", "output": "output_tokens"}  # config key -> table column
MAX_BODY_EXPONENT = 64.0  # the match's exponent is sought in [0, 64] (0.93**64 < 1%)

# Named shapings. Each says which published numbers it targets; see traces/PROVENANCE.md.
PRESETS: dict[str, ShapeConfig] = {
    # The Llumnix paper's Table 1, ShareGPT (GPT-4, first turn): input mean 306 / P95 1,484,
    # output mean 500 / P95 988 — meant for the shipped ShareGPT V3 first turns (the default
    # trace). No cap: the artifact's ShareGPT client (benchmark_throughput.py,
    # ``sample_dataset_requests``) truncates nothing; it drops first turns with prompt +
    # answer >= 12,800 tokens, and so does this preset (``total_below``). Mapped V3 requests
    # reach that only rarely (the longest prompt lands at 11–12.5k tokens, depending on the
    # draw). The artifact's engine limits (prompt <= min(max_model_len 16,384 — hard-coded in
    # its vllm/config.py, not LLaMA-1's 2,048 — and max_num_batched_tokens)) are the
    # simulator's own (an instance aborts what exceeds them).
    "sharegpt-gpt4": ShapeConfig(
        preset="sharegpt-gpt4",
        input=FieldShapeConfig(match=MatchConfig(mean=306, p95=1484)),
        output=FieldShapeConfig(match=MatchConfig(mean=500, p95=988)),
        total_below=12800,
    ),
}


@dataclass(frozen=True)
class Shape:
    """A resolved shaping: the preset's keys overlaid with the config's own."""

    input: FieldShapeConfig
    output: FieldShapeConfig
    preset: Optional[str] = None
    total_below: Optional[int] = None

    def field(self, name: str) -> FieldShapeConfig:
        return getattr(self, name)

    def kept_by_total(self, prompt: np.ndarray, output: np.ndarray) -> np.ndarray:
        """Step 5: which drawn requests ``total_below`` keeps (all, when unset)."""
        if self.total_below is None:
            return np.ones(len(prompt), dtype=bool)
        return prompt + output < self.total_below

    @property
    def filters(self) -> bool:
        return any(self.field(f).min is not None or self.field(f).max is not None for f in FIELDS)

    @property
    def is_identity(self) -> bool:
        return self.total_below is None and all(
            getattr(self.field(f), key.name) is None
            for f in FIELDS
            for key in fields(FieldShapeConfig)
        )

    def describe(self) -> str:
        """One clause for a workload's description (empty when nothing is shaped)."""
        if self.is_identity:
            return ""
        parts = []
        for name in FIELDS:
            spec = self.field(name)
            steps = []
            if spec.scale is not None:
                steps.append(f"scale {spec.scale:g}")
            if spec.min is not None or spec.max is not None:
                steps.append(f"keep {spec.min or 1}..{spec.max if spec.max is not None else '∞'}")
            if spec.match is not None:
                steps.append(f"match mean {spec.match.mean:g}/P95 {spec.match.p95:g}")
            if spec.cap is not None:
                steps.append(f"cap {spec.cap}")
            if steps:
                parts.append(f"{name} " + ", ".join(steps))
        if self.total_below is not None:
            parts.append(f"input + output < {self.total_below}")
        preset = f" ({self.preset})" if self.preset else ""
        return f"shaped{preset}: " + "; ".join(parts)


def _overlay(base: FieldShapeConfig, own: FieldShapeConfig, key: str) -> FieldShapeConfig:
    """``own``'s set keys over ``base``'s, re-validated (a preset's match + an own scale clash)."""
    merged = {f.name: getattr(own, f.name) for f in fields(own) if getattr(own, f.name) is not None}
    try:
        return replace(base, **merged)
    except ConfigError as exc:
        raise ConfigError(f"{key}.{exc}") from None


def resolve_shape(cfg: ShapeConfig, source: str = "lengths") -> Shape:
    """The shaping a run applies: ``cfg.preset`` (if any) with ``cfg``'s own keys on top.

    ``source`` is the workload's source: synthetic lengths cannot be filtered (a generator has
    no table to drop rows from before N are drawn), so ``min``/``max`` there are an error.
    """
    base = ShapeConfig()
    if cfg.preset is not None:
        if cfg.preset not in PRESETS:
            known = ", ".join(sorted(PRESETS))
            raise ConfigError(
                f"workload.shape.preset: unknown preset {cfg.preset!r} (known: {known})"
            )
        base = PRESETS[cfg.preset]
    shape = Shape(
        input=_overlay(base.input, cfg.input, "workload.shape.input"),
        output=_overlay(base.output, cfg.output, "workload.shape.output"),
        preset=cfg.preset,
        total_below=cfg.total_below if cfg.total_below is not None else base.total_below,
    )
    if source == "synthetic":
        for name in FIELDS:
            for key in ("min", "max"):
                if getattr(shape.field(name), key) is not None:
                    raise ConfigError(
                        f"workload.shape.{name}.{key}: filters need a trace; synthetic lengths "
                        "are drawn N at a time (bound them with cap instead)"
                    )
    return shape


def _round_up(values: np.ndarray) -> np.ndarray:
    """Whole tokens, at least 1: ceil after rounding away float noise (10 × 1.1 → 11)."""
    return np.maximum(1, np.ceil(np.round(values, 9))).astype(np.int64)


def scale_lengths(lengths: np.ndarray, factor: float) -> np.ndarray:
    """Every length times ``factor``, rounded up, at least 1 token."""
    return _round_up(np.asarray(lengths, dtype=np.float64) * factor)


def _mapped(
    ratio: np.ndarray, body: np.ndarray, p95: float, exponent: float, cap: int | None
) -> np.ndarray:
    """The match's map for one exponent: p95·r^exponent at or below the P95, p95·r above it."""
    scaled = np.where(body, ratio**exponent, ratio) * p95
    lengths = _round_up(scaled)
    return lengths if cap is None else np.minimum(lengths, cap)


def match_mean_p95(
    lengths: np.ndarray, mean: float, p95: float, cap: int | None = None, key: str = "match"
) -> np.ndarray:
    """Map ``lengths`` monotonically so that their mean is ``mean`` and their P95 is ``p95``.

    With x₉₅ the sample's 95th percentile (numpy's linear interpolation) and r = x / x₉₅:

    * r ≤ 1 (the body): y = p95 · r^a;
    * r > 1 (the tail): y = p95 · r — the tail keeps its shape relative to the P95;

    then y is rounded up (and truncated at ``cap``). The map is continuous and increasing, so
    rank order — and with it the rank correlation between a request's input and output — is
    kept, and the P95 lands on ``p95`` up to interpolation and rounding (a token or two). The
    body exponent a ≥ 0 is the one free parameter: the mean falls as a grows (the body is
    pulled towards 1 token), so a bisection finds the a that gives ``mean`` (to one token's
    step in a single request). Not kept: the median and every other quantile below the P95
    (set by a), the absolute tail (it moves with the P95), the shortest lengths, and linear
    (Pearson) correlations. A target the map cannot reach — a mean above p95 times the
    tail's average share, say — is a ConfigError naming ``key`` and the reachable range.
    """
    x = np.asarray(lengths, dtype=np.float64)
    x95 = float(np.percentile(x, 95))
    ratio = x / x95
    body = ratio <= 1.0

    def mean_at(exponent: float) -> float:
        return float(_mapped(ratio, body, p95, exponent, cap).mean())

    highest, lowest = mean_at(0.0), mean_at(MAX_BODY_EXPONENT)
    if not lowest <= mean <= highest:
        raise ConfigError(
            f"{key}: mean {mean:g} cannot be reached with P95 {p95:g} from these "
            f"{len(x)} requests (reachable means: {lowest:.1f} to {highest:.1f})"
        )
    lo, hi = 0.0, MAX_BODY_EXPONENT  # mean_at(lo) >= mean >= mean_at(hi)
    for _ in range(80):
        mid = (lo + hi) / 2
        if mean_at(mid) >= mean:
            lo = mid
        else:
            hi = mid
    best = lo if abs(mean_at(lo) - mean) <= abs(mean_at(hi) - mean) else hi
    return _mapped(ratio, body, p95, best, cap)


def shape_table(table: pd.DataFrame, shape: Shape, origin: str = "the table") -> pd.DataFrame:
    """Steps 1–2 on a trace's table: scaled lengths, rows outside [min, max] dropped."""
    if all(shape.field(f).scale is None for f in FIELDS) and not shape.filters:
        return table
    table = table.copy()
    keep = np.ones(len(table), dtype=bool)
    for name, column in FIELDS.items():
        spec = shape.field(name)
        if spec.scale is not None:
            table[column] = scale_lengths(table[column].to_numpy(), spec.scale)
        values = table[column].to_numpy()
        if spec.min is not None:
            keep &= values >= spec.min
        if spec.max is not None:
            keep &= values <= spec.max
    if not keep.any():
        raise ConfigError(
            f"workload.shape: the min/max filters keep none of {origin}'s {len(table)} requests"
        )
    return table[keep].reset_index(drop=True)


def shape_lengths(
    prompt: np.ndarray, output: np.ndarray, shape: Shape
) -> tuple[np.ndarray, np.ndarray]:
    """Steps 3 and 4 on the drawn requests' lengths (no-ops when unset)."""
    shaped = []
    for name, values in (("input", prompt), ("output", output)):
        spec = shape.field(name)
        if spec.match is not None:
            values = match_mean_p95(
                values, spec.match.mean, spec.match.p95, spec.cap, f"workload.shape.{name}.match"
            )
        elif spec.cap is not None:
            values = np.minimum(values, spec.cap)
        shaped.append(values)
    return shaped[0], shaped[1]
