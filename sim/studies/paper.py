"""The Llumnix paper's quantitative claims, measured on a ``paper`` sweep's index.

Each row is one statistic of one claim: it names the set-up (the grid parts the paper's
claim is about), the statistic llumsim computes on them, and the paper's figure. The
statistic is computed per *point* (a part at one rate, CV or threshold) and per seed on
paired runs — baseline ÷ Llumnix for a ratio, 1 − Llumnix ÷ baseline for a reduction or
saving, Llumnix ÷ baseline − 1 for an increase — and averaged over seeds with its interval
(``sim.studies.agreement``). Every point is graded against the paper's figure; the row gives:

- for a single figure (the paper's "up to" included: the points of the paper's own
  set-up are each graded against it, never the maximum over set-ups), the median over the
  points, taken seed by seed and averaged over seeds with its interval, and its grade;
- for a range (the paper's spread over the CVs), the lowest and the highest point, each
  graded against its own end of the paper's range (the row takes the worse);
- for an upper bound, the worst point;

plus how many points agree and, separately, the direction (Llumnix better, worse or even
at how many points: "even" when the interval spans parity). The grading rule is in
``sim.studies.agreement``. Notes say why a figure differs; every number in one is formatted
from the runs (or a run's config), never typed (``Note``).
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from sim.studies import agreement as grading
from sim.studies.agreement import Estimate

REAL = ("serving-sharegpt", "serving-burstgpt")
SYNTHETIC = ("serving-S-S", "serving-M-M", "serving-L-L", "serving-S-L", "serving-L-S")
SERVING = REAL + SYNTHETIC
PRIORITIES = "priorities"
LCFS_NORMAL = "diagnostic-priorities-lcfs-normal"  # the priority runs, moving normal requests only
# the priority runs with the artifact's load reporting (scheduler.idle_reports: artifact)
ARTIFACT_REPORTS = "diagnostic-priorities-artifact-reports"
X_COLUMN = {  # the swept coordinate of each part
    **{part: "workload.arrival.rate" for part in SERVING},
    PRIORITIES: "workload.arrival.cv",
    LCFS_NORMAL: "workload.arrival.cv",
    ARTIFACT_REPORTS: "workload.arrival.cv",
    "autoscaling-poisson": "workload.arrival.rate",
    "autoscaling-gamma": "workload.arrival.cv",
    "autoscaling": "autoscale.low",
}
X_NAME = {"workload.arrival.rate": "rate", "workload.arrival.cv": "CV", "autoscale.low": "t"}
PRE, DEC, E2E, LOSS = "prefill_latency", "decode_latency_per_token", "e2e_latency", "preemption_loss"
VALUES = ["part", "x", "seed", "value"]  # what a measure returns: one row per point and seed


class Runs:
    """A paper sweep's index and, by run key, its kept tables and resolved configs."""

    def __init__(
        self,
        index: pd.DataFrame,
        table: Callable[[str, str], pd.DataFrame] | None = None,
        config: Callable[[str], Mapping[str, Any]] | None = None,
    ) -> None:
        self.index = index
        self._table, self._config = table, config

    def table(self, key: str, name: str) -> pd.DataFrame:
        if self._table is None:
            raise LookupError(f"no kept tables to read {name} of run {key} from")
        return self._table(key, name)

    def config(self, key: str) -> Mapping[str, Any]:
        if self._config is None:
            raise LookupError(f"no run configs to read run {key}'s from")
        return self._config(key)

    def runs(self, part: str, scheduler: str) -> pd.DataFrame:
        return self.index[(self.index["part"] == part) & (self.index["scheduler"] == scheduler)]


# ------------------------------------------------------------------ kinds of statistic
@dataclass(frozen=True)
class Kind:
    """What a statistic's per-seed values are: how they average over seeds, where parity
    is for the direction column, how the paper's figure is graded and how one prints."""

    name: str
    geometric: bool
    parity: Optional[float]  # None: the statistic compares no two schedulers
    higher_is_better: bool
    gain: Callable[[float], float]  # the effect the grading compares (sim.studies.agreement)
    text: Callable[[float], str]


def _times(value: float) -> str:
    return f"{value:.3g}×"


def _signed(value: float) -> str:
    return f"{value:+.1%}".replace("-", "−")


def _share(value: float) -> str:
    return f"{value:.1%}"


def _milliseconds(value: float) -> str:
    return f"{value * 1e3:.3g} ms"


RATIO = Kind("ratio", True, 1.0, True, grading.ratio_gain, _times)
REDUCTION = Kind("reduction", False, 0.0, True, grading.reduction_gain, lambda v: _signed(-v))
SAVING = Kind("saving", False, 0.0, True, grading.reduction_gain, _share)  # a reduction, printed as saved
INCREASE = Kind("increase", False, 0.0, False, lambda v: v, _signed)
SHARE = Kind("share", False, None, True, lambda v: v, _share)
SECONDS = Kind("seconds", False, None, True, lambda v: v, _milliseconds)


def shown(kind: Kind, estimate: Estimate) -> str:
    """A figure and its interval, ``1.62× (1.40 to 1.88)``; ``—`` without a figure."""
    if math.isnan(estimate.value):
        return "—"
    if not estimate.has_interval:
        return kind.text(estimate.value)
    ends = sorted((estimate.low, estimate.high), reverse=kind is REDUCTION)  # printed as −x%: larger first
    return f"{kind.text(estimate.value)} ({kind.text(ends[0])} to {kind.text(ends[1])})"


# ------------------------------------------------------------------ the paper's figures
@dataclass(frozen=True)
class Paper:
    """The paper's figure for a statistic and how a point is graded against it: one value
    (``equals``), a range over the points (``spans``) or an upper bound (``at_most``)."""

    text: str
    shape: str  # "value", "range" or "bound"
    low: float
    high: float

    def grade(self, kind: Kind, value: float) -> str:
        """One point's (or the median's) grade."""
        if self.shape == "bound":
            return grading.bound_grade(value, self.high)
        if self.shape == "range":
            return grading.range_grade(kind.gain(value), kind.gain(self.low), kind.gain(self.high))
        return grading.effect_grade(kind.gain(value), kind.gain(self.low))

    def end_grade(self, kind: Kind, value: float, end: str) -> str:
        """A range's lowest or highest point against the paper's same end."""
        paper = self.low if end == "low" else self.high
        return grading.effect_grade(kind.gain(value), kind.gain(paper))


def equals(text: str, value: float) -> Paper:
    return Paper(text, "value", value, value)


def spans(text: str, low: float, high: float) -> Paper:
    return Paper(text, "range", low, high)


def at_most(text: str, bound: float) -> Paper:
    return Paper(text, "bound", 0.0, bound)


# ------------------------------------------------------------------ measures
FORMS: dict[str, Callable[[float, float], float]] = {
    "ratio": lambda base, mine: base / mine if mine > 0 else math.nan,
    "reduction": lambda base, mine: 1 - mine / base if base > 0 else math.nan,
    "increase": lambda base, mine: mine / base - 1 if base > 0 else math.nan,
}


def paired_values(
    index: pd.DataFrame,
    parts: Sequence[str],
    column: str,
    baseline: str,
    form: str,
    target: str = "llumnix",
    target_part: Optional[str] = None,
) -> pd.DataFrame:
    """Per point and seed, ``form`` of the baseline's and the target's ``column`` on the
    runs of the same seed (the same request stream); ``target_part`` takes the target's
    runs from another part with the same coordinate (a diagnostic variant)."""
    combine = FORMS[form]
    rows = []
    for part in parts:
        x = X_COLUMN[part]
        base = index[(index["part"] == part) & (index["scheduler"] == baseline)]
        mine = index[(index["part"] == (target_part or part)) & (index["scheduler"] == target)]
        if base.empty or mine.empty or column not in index:
            continue
        joined = pd.to_numeric(base.set_index([x, "seed"])[column], errors="coerce").to_frame("base").join(
            pd.to_numeric(mine.set_index([x, "seed"])[column], errors="coerce").to_frame("mine"), how="inner"
        )
        for (value, seed), row in joined.sort_index().iterrows():
            rows.append((part, float(value), int(seed), combine(float(row["base"]), float(row["mine"]))))
    return pd.DataFrame(rows, columns=VALUES)


def own_values(index: pd.DataFrame, parts: Sequence[str], column: str, scheduler: str = "llumnix") -> pd.DataFrame:
    """Per point and seed, one scheduler's own ``column`` (a share or a downtime)."""
    rows = []
    for part in parts:
        frame = index[(index["part"] == part) & (index["scheduler"] == scheduler)]
        if frame.empty or column not in frame:
            continue
        values = pd.to_numeric(frame[column], errors="coerce")  # None: no migration in the run
        for x, seed, value in zip(frame[X_COLUMN[part]], frame["seed"], values):
            rows.append((part, float(x), int(seed), float(value)))
    return pd.DataFrame(rows, columns=VALUES).sort_values(["part", "x", "seed"], ignore_index=True)


def paired(parts: Sequence[str], column: str, baseline: str, form: str) -> Callable[[Runs], pd.DataFrame]:
    return lambda runs: paired_values(runs.index, parts, column, baseline, form)


def tier(column: str, tier_: int, stat: str) -> str:
    return f"latency_by_tier.{tier_}.{column}.{stat}"


FRAGMENTATION_WINDOW = 1000.0  # seconds: the paper's Fig. 12 reads the busiest 1,000 s


def fragmentation(runs: Runs, scheduler: str) -> pd.DataFrame:
    """Per seed, ``scheduler``'s mean fragmented share of memory over the busiest 1,000 s of
    INFaaS++'s M-M 7.5 req/s run of that seed (most queued requests); the same window for
    Llumnix."""
    part, rate = "serving-M-M", 7.5  # the paper's Fig. 12 set-up
    rows = []
    chosen = runs.index[runs.index["part"] == part]
    chosen = chosen[np.isclose(chosen["workload.arrival.rate"], rate)] if len(chosen) else chosen
    for seed, frame in chosen.groupby("seed"):
        keys = dict(zip(frame["scheduler"], frame["config_hash"]))
        if not {"infaas++", scheduler} <= set(keys):
            continue
        busiest = runs.table(keys["infaas++"], "cluster")
        start = _busiest_start(busiest)
        mine = busiest if scheduler == "infaas++" else runs.table(keys[scheduler], "cluster")
        window = mine[(mine["time"] >= start) & (mine["time"] < start + FRAGMENTATION_WINDOW)]
        rows.append((part, rate, int(seed), float(window["fragmented_fraction"].mean())))
    return pd.DataFrame(rows, columns=VALUES)


def _busiest_start(cluster: pd.DataFrame) -> float:
    """The start of the window of ``FRAGMENTATION_WINDOW`` with the most queued requests."""
    times = cluster["time"].to_numpy()
    cumulative = np.concatenate([[0], np.cumsum(cluster["queued"].to_numpy())])
    ends = np.searchsorted(times, times + FRAGMENTATION_WINDOW)
    return float(times[int(np.argmax(cumulative[ends] - cumulative[: len(times)]))])


def saving_at_equal_tail(runs: Runs) -> pd.DataFrame:
    """Fig. 15, per INFaaS++ threshold t and seed: 1 − Llumnix's cost ÷ INFaaS++'s, Llumnix's
    read off its own cost-vs-P99-prefill line over the thresholds (same seed) at INFaaS++'s
    P99; NaN where that P99 lies outside Llumnix's line."""
    frame = runs.index[runs.index["part"] == "autoscaling"]
    p99, cost = f"latency.{PRE}.p99", "cost.average_instances"
    rows = []
    for seed, runs_of_seed in frame.groupby("seed"):
        mine = runs_of_seed[runs_of_seed["scheduler"] == "llumnix"].sort_values(p99)
        if mine.empty:
            continue
        for _, row in runs_of_seed[runs_of_seed["scheduler"] == "infaas++"].iterrows():
            inside = mine[p99].min() <= row[p99] <= mine[p99].max()
            value = 1 - np.interp(row[p99], mine[p99], mine[cost]) / row[cost] if inside else math.nan
            rows.append(("autoscaling", float(row["autoscale.low"]), int(seed), float(value)))
    return pd.DataFrame(rows, columns=VALUES)


# ------------------------------------------------------------------ notes
@dataclass(frozen=True)
class Note:
    """Why a figure differs. ``text`` holds no number; ``template``'s numbers are fields
    filled by ``values`` from the runs (None, or a LookupError: the runs, tables or configs
    it reads are not there, and the template is left out). tests/test_paper_claims.py
    fails on a digit typed in either."""

    text: str
    template: str = ""
    values: Optional[Callable[[Runs], Optional[dict]]] = None

    def render(self, runs: Runs) -> str:
        try:
            filled = self.values(runs) if self.values else None
        except LookupError:  # a kept table or config it reads is not there
            filled = None
        computed = self.template.format(**filled) if filled is not None else ""
        return "; ".join(part for part in (self.text, computed) if part)

    def literal_text(self) -> str:
        """Everything of the note that is typed rather than formatted from data."""
        literal = "".join(part for part, *_ in string.Formatter().parse(self.template))
        return f"{self.text} {literal}"


@dataclass(frozen=True)
class Notes:
    """Several reasons a figure differs, each a ``Note``, rendered one after the other."""

    notes: tuple[Note, ...]

    def render(self, runs: Runs) -> str:
        return "; ".join(filter(None, (note.render(runs) for note in self.notes)))

    def literal_text(self) -> str:
        return " ".join(note.literal_text() for note in self.notes)


def _lcfs_normal_values(column: str) -> Callable[[Runs], Optional[dict]]:
    def values(runs: Runs) -> Optional[dict]:
        ratios = paired_values(runs.index, (PRIORITIES,), column, "llumnix-base", "ratio", target_part=LCFS_NORMAL)
        shares = None if ratios.empty else _high_priority_migrations(runs)
        if shares is None:
            return None
        means = ratios.groupby("x")["value"].apply(lambda v: grading.estimate(v, True).value)
        return {"cv": shares[0], "share": shares[1], "low": means.min(), "high": means.max()}

    return values


def _high_priority_migrations(runs: Runs) -> Optional[tuple[float, float]]:
    """At the lowest CV, the share of Llumnix's committed migrations (all seeds) that moved
    a high-priority (tier 0) request."""
    frame = runs.runs(PRIORITIES, "llumnix")
    if frame.empty:
        return None
    cv = float(frame["workload.arrival.cv"].min())
    moved = high = 0
    for key in frame[np.isclose(frame["workload.arrival.cv"], cv)]["config_hash"]:
        migrations = runs.table(key, "migrations")
        committed = migrations[migrations["outcome"] == "committed"]
        moved, high = moved + len(committed), high + int((committed["request_tier"] == 0).sum())
    return (cv, high / moved) if moved else None


def _normal_queueing(runs: Runs) -> Optional[dict]:
    """Normal requests' mean queueing delay under both schedulers at the CV where their
    mean request latency grows most (means over seeds)."""
    increases = paired_values(runs.index, (PRIORITIES,), tier(E2E, 1, "mean"), "llumnix-base", "increase")
    point = increases.groupby("x")["value"].mean().dropna()
    if point.empty:
        return None
    cv = float(point.idxmax())
    column = tier("queueing_delay", 1, "mean")
    means = {}
    for scheduler in ("llumnix", "llumnix-base"):
        frame = runs.runs(PRIORITIES, scheduler)
        means[scheduler] = float(frame[np.isclose(frame["workload.arrival.cv"], cv)][column].mean())
    return {"cv": cv, "mine": means["llumnix"], "base": means["llumnix-base"]}


def _config_value(part: str, path: str) -> Callable[[Runs], Optional[dict]]:
    """A setting of a part's Llumnix runs (the first run's resolved config)."""

    def values(runs: Runs) -> Optional[dict]:
        frame = runs.runs(part, "llumnix")
        if frame.empty:
            return None
        value: Any = runs.config(frame["config_hash"].iloc[0])
        for key in path.split("."):
            value = value[key]
        return {"value": value}

    return values


ROUND_ROBIN_TAIL = Note(
    "the P99 ratio is round-robin's own tail: its longest prompts queue behind each other on "
    "the instances it fills blindly, and the artifact's engine length limits keep every one of "
    "these requests (traces/length_limits.py), so the tail is the one the artifact served"
)
FRAGMENTATION_DEFINITION = (
    "the paper's fragmentation definition is in its unpublished plot code; llumsim counts every "
    "free block whenever some queued head-of-line request would fit in the pooled free memory "
    "(an upper bound)"
)
LCFS_PRIORITIES = "the artifact's LCFS rule migrates the latest arrival of any priority, high-priority requests included"
COLD_START = Note(
    "auto-scaling adds the cold start (Llumnix's own simulator's value; the artifact reloaded the "
    "model, time unrecorded)",
    "the presets' cold start is {value:g} s (autoscale.cold_start)",
    _config_value("autoscaling-poisson", "autoscale.cold_start"),
)


def _lcfs_note(column: str) -> Note:
    return Note(
        LCFS_PRIORITIES,
        "at CV {cv:g} {share:.0%} of Llumnix's committed migrations moved such a request; with "
        "migration.candidate=lcfs-normal (grid part " + LCFS_NORMAL + ") this ratio is "
        "{low:.3g}–{high:.3g}× over the CVs",
        _lcfs_normal_values(column),
    )


def _artifact_reports_values(column: str) -> Callable[[Runs], Optional[dict]]:
    """The high-priority ratio over the CVs of the diagnostic part, both schedulers with the
    artifact's reporting (mean over seeds per CV, geometric)."""

    def values(runs: Runs) -> Optional[dict]:
        ratios = paired_values(runs.index, (ARTIFACT_REPORTS,), column, "llumnix-base", "ratio")
        if ratios.empty:
            return None
        means = ratios.groupby("x")["value"].apply(lambda v: grading.estimate(v, True).value)
        return {"low": means.min(), "high": means.max()}

    return values


def _artifact_reports_note(column: str) -> Note:
    return Note(
        "llumsim's instances report themselves when they empty (INV-4 idle-view, "
        "scheduler.idle_reports: always); the artifact's keep their last busy snapshot in the "
        "view, which its priority dispatch reads",
        "with the artifact's reporting for both schedulers (grid part " + ARTIFACT_REPORTS + ") "
        "this ratio is {low:.3g}–{high:.3g}× over the CVs",
        _artifact_reports_values(column),
    )


NORMAL_QUEUES = Note(
    "normal requests avoid the instances high-priority ones gather on (the artifact's priority "
    "load charges those the reservation) and queue longer on the others",
    "their mean queueing delay at CV {cv:g} is {mine:.3g} s under Llumnix against {base:.3g} s "
    "under Llumnix-base",
    _normal_queueing,
)


# ------------------------------------------------------------------ claims
@dataclass(frozen=True)
class Claim:
    id: str
    figure: str
    text: str  # the claim, short
    setup: str  # the set-up: the grid parts it is measured on
    statistic: str  # what is computed per point and seed
    paper: Paper
    kind: Kind
    measure: Callable[[Runs], pd.DataFrame]  # VALUES rows
    note: Optional[Note | Notes] = None


def _parts(parts: Sequence[str]) -> str:
    return ", ".join(parts)


def _ratio_claim(
    id_: str, figure: str, text: str, parts: Sequence[str], column: str, stat: str,
    baseline: str, label: str, paper: Paper, note: Optional[Note] = None,
) -> Claim:
    """A ratio baseline ÷ Llumnix of ``latency.<column>.<stat>`` on ``parts``."""
    statistic = f"{label}, {baseline} ÷ Llumnix"
    return Claim(id_, figure, text, _parts(parts), statistic, paper, RATIO,
                 paired(parts, f"latency.{column}.{stat}", baseline, "ratio"), note)


def _mean_and_p99(
    id_: str, text: str, parts: Sequence[str], column: str, baseline: str, label: str,
    papers: tuple[float, float], p99_note: Optional[Note] = None,
) -> list[Claim]:
    """A claim of the paper's "a× mean, b× P99" form: its two rows."""
    return [
        _ratio_claim(id_, "11", text, parts, column, stat, baseline, f"{stat_label} {label}",
                     equals(f"{paper:g}×", paper), note)
        for stat, stat_label, paper, note in (("mean", "mean", papers[0], None), ("p99", "P99", papers[1], p99_note))
    ]


def _priority_claim(id_: str, text: str, column: str, stat: str, label: str, paper: Paper) -> Claim:
    """High-priority (tier 0) Llumnix-base ÷ Llumnix over the CVs of Fig. 13."""
    return Claim(id_, "13", text, PRIORITIES, f"high-priority {label}, Llumnix-base ÷ Llumnix", paper, RATIO,
                 paired((PRIORITIES,), tier(column, 0, stat), "llumnix-base", "ratio"),
                 Notes((_artifact_reports_note(tier(column, 0, stat)), _lcfs_note(tier(column, 0, stat)))))


def _normal_claim(column: str, label: str, paper: Paper) -> Claim:
    """Normal (tier 1) requests' mean under Llumnix over Llumnix-base's, minus one."""
    return Claim("C30", "13", "normal requests' mean latency under Llumnix vs Llumnix-base", PRIORITIES,
                 f"normal {label}: Llumnix ÷ Llumnix-base − 1", paper, INCREASE,
                 paired((PRIORITIES,), tier(column, 1, "mean"), "llumnix-base", "increase"), NORMAL_QUEUES)


def _saving_claim(part: str, label: str, paper: Paper) -> Claim:
    return Claim("C34", "14", f"instances saved vs INFaaS++ with auto-scaling, {label}", part,
                 "1 − Llumnix's ÷ INFaaS++'s average instances", paper, SAVING,
                 paired((part,), "cost.average_instances", "infaas++", "reduction"), COLD_START)


def claims() -> list[Claim]:
    """Every claim the paper grid can test (ids as in docs/paper.md's claims table), one row
    per statistic."""
    rr, inf = "round-robin", "infaas++"
    return [
        *_mean_and_p99("C13", "prefill latency vs Round-Robin, real traces, up to", REAL, PRE, rr, "prefill",
                       (26.6, 34.4), ROUND_ROBIN_TAIL),
        *_mean_and_p99("C14", "prefill latency vs INFaaS++, real traces, up to", REAL, PRE, inf, "prefill",
                       (2.2, 5.5)),
        *_mean_and_p99("C12", "end-to-end latency vs Round-Robin, real traces, up to", REAL, E2E, rr,
                       "end-to-end", (2.0, 2.9), ROUND_ROBIN_TAIL),
        _ratio_claim("C15a", "11", "P99 decode latency vs Round-Robin, real traces, up to", REAL, DEC, "p99",
                     rr, "P99 decode per token", equals("2×", 2.0)),
        _ratio_claim("C15b", "11", "P99 decode latency vs INFaaS++, real traces, up to", REAL, DEC, "p99",
                     inf, "P99 decode per token", equals("1.3×", 1.3)),
        Claim("C16", "11", "preemption loss vs Round-Robin, real traces, mean reduction", _parts(REAL),
              "mean preemption loss, 1 − Llumnix ÷ round-robin", equals("−84%", 0.84), REDUCTION,
              paired(REAL, f"latency.{LOSS}.mean", rr, "reduction")),
        *_mean_and_p99("C18", "end-to-end latency vs INFaaS++, synthetic traces, up to", SYNTHETIC, E2E, inf,
                       "end-to-end", (1.5, 1.6)),
        _ratio_claim("C19", "11", "mean prefill latency vs INFaaS++, up to (L-S)", ("serving-L-S",), PRE, "mean",
                     inf, "mean prefill", equals("7.7×", 7.7)),
        _ratio_claim("C20", "11", "P99 prefill latency vs INFaaS++, up to (M-M): the headline", ("serving-M-M",),
                     PRE, "p99", inf, "P99 prefill", equals("14.8×", 14.8)),
        _ratio_claim("C22", "11", "P99 decode latency vs INFaaS++, up to (M-M)", ("serving-M-M",), DEC, "p99",
                     inf, "P99 decode per token", equals("2×", 2.0)),
        Claim("C23", "11", "preemption loss vs INFaaS++, synthetic traces, mean reduction", _parts(SYNTHETIC),
              "mean preemption loss, 1 − Llumnix ÷ INFaaS++", equals("−70.4%", 0.704), REDUCTION,
              paired(SYNTHETIC, f"latency.{LOSS}.mean", inf, "reduction")),
        Claim("C25", "12", "fragmented memory, M-M at 7.5 req/s, busiest 1,000 s: INFaaS++", "serving-M-M",
              "INFaaS++'s mean fragmented share of memory", equals("7.9%", 0.079), SHARE,
              lambda runs: fragmentation(runs, "infaas++"), Note(FRAGMENTATION_DEFINITION)),
        Claim("C25", "12", "fragmented memory, M-M at 7.5 req/s, busiest 1,000 s: Llumnix", "serving-M-M",
              "Llumnix's mean fragmented share of memory", equals("0.7%", 0.007), SHARE,
              lambda runs: fragmentation(runs, "llumnix"), Note(FRAGMENTATION_DEFINITION)),
        _priority_claim("C26", "high-priority mean request latency vs Llumnix-base", E2E, "mean",
                        "mean end-to-end", spans("1.2–1.5×", 1.2, 1.5)),
        _priority_claim("C27", "high-priority prefill latency vs Llumnix-base", PRE, "mean",
                        "mean prefill", spans("2.9–8.6×", 2.9, 8.6)),
        _priority_claim("C27", "high-priority prefill latency vs Llumnix-base", PRE, "p99",
                        "P99 prefill", spans("3.6–10×", 3.6, 10.0)),
        _priority_claim("C28", "high-priority decode latency vs Llumnix-base", DEC, "mean",
                        "mean decode per token", spans("1.2–1.5×", 1.2, 1.5)),
        _normal_claim(E2E, "request latency", at_most("≤ +4.5%", 0.045)),
        _normal_claim(PRE, "prefill latency", at_most("≤ +13%", 0.13)),
        _normal_claim(DEC, "decode latency per token", at_most("≤ +2%", 0.02)),
        _ratio_claim("C32", "14", "P99 prefill vs INFaaS++ with auto-scaling, Poisson, up to",
                     ("autoscaling-poisson",), PRE, "p99", inf, "P99 prefill", equals("12.2×", 12.2), COLD_START),
        _ratio_claim("C33", "14", "P99 prefill vs INFaaS++ with auto-scaling, Gamma, up to",
                     ("autoscaling-gamma",), PRE, "p99", inf, "P99 prefill", equals("11×", 11.0), COLD_START),
        _saving_claim("autoscaling-poisson", "Poisson, up to", equals("16%", 0.16)),
        _saving_claim("autoscaling-gamma", "Gamma, up to", equals("18%", 0.18)),
        Claim("C35", "15", "cost saving at equal P99 prefill over thresholds t", "autoscaling",
              "1 − Llumnix's ÷ INFaaS++'s instances at INFaaS++'s P99 prefill", equals("36%", 0.36),
              SAVING, saving_at_equal_tail,
              Note("the saving depends on the P99 prefill it is read at, and " + COLD_START.text,
                   COLD_START.template, COLD_START.values)),
        Claim("C6", "10/11", "live migration downtime in serving", _parts(SERVING),
              "Llumnix's mean downtime of a committed migration", spans("20–30 ms", 0.020, 0.030), SECONDS,
              lambda runs: own_values(runs.index, SERVING, "migration.downtime.mean"),
              Note("the downtime is the transfer model's last stage, fitted to the paper's migration measurements "
                   "(sim/bench/fit_transfer.py); the paper's stage count is an input here "
                   "(migration.max_stages in the presets)")),
        Claim("C11", "11", "share of time an instance has a migration in flight", _parts(SERVING),
              "Llumnix's mean share of instance time migrating", equals("≈ 10%", 0.10), SHARE,
              lambda runs: own_values(runs.index, SERVING, "migration.migrating_fraction.mean"),
              Note("the artifact pairs sources with destinations, one migration per pair, once every "
                   "few rounds of load reports; llumsim counts the same reports",
                   "here every {value:g} × instances reports (scheduler.pairing_every)",
                   _config_value("serving-sharegpt", "scheduler.pairing_every"))),
    ]


# ------------------------------------------------------------------ grading a claim
@dataclass(frozen=True)
class PointGrade:
    part: str
    x: float
    estimate: Estimate
    grade: str
    direction: str


def grade_points(claim: Claim, values: pd.DataFrame) -> list[PointGrade]:
    """Each point's seed-mean, interval, grade and direction."""
    graded = []
    for (part, x), group in values.groupby(["part", "x"], sort=True):
        estimate = grading.estimate(group["value"].to_numpy(), claim.kind.geometric)
        if math.isnan(estimate.value):
            continue  # undefined at this point (a zero baseline): no figure to grade
        direction = (
            grading.direction(estimate, claim.kind.parity, claim.kind.higher_is_better)
            if claim.kind.parity is not None
            else grading.NOT_AVAILABLE
        )
        graded.append(PointGrade(part, float(x), estimate, claim.paper.grade(claim.kind, estimate.value), direction))
    return graded


def median_over_points(claim: Claim, values: pd.DataFrame, points: Sequence[PointGrade]) -> Estimate:
    """The median over the graded points, seed by seed, averaged over the seeds that ran
    every point."""
    keep = {(p.part, p.x) for p in points}
    frame = values[[(part, x) in keep for part, x in zip(values["part"], values["x"])]]
    per_seed = frame.pivot_table(index=["part", "x"], columns="seed", values="value").dropna(axis=1)
    return grading.estimate(per_seed.median(axis=0).to_numpy(), claim.kind.geometric)


def _point_where(point: PointGrade) -> str:
    x = X_NAME.get(X_COLUMN.get(point.part, ""), "x")
    return f"{point.part} at {x} {point.x:g}"


def _counts(labels: Sequence[str], order: Sequence[str]) -> str:
    """``1/5 match, 3 near, 1 differs``: the first label always, the others where present."""
    counts = [(name, sum(1 for label in labels if label == name)) for name in order]
    (first, n_first), *rest = counts
    return ", ".join([f"{n_first}/{len(labels)} {first}", *[f"{n} {name}" for name, n in rest if n]])


def grade_claim(claim: Claim, runs: Runs) -> dict:
    """The claim's row of the table (and its points, for claim_points.csv)."""
    values = claim.measure(runs)
    points = grade_points(claim, values) if not values.empty else []
    row = {
        "id": claim.id,
        "figure": claim.figure,
        "claim": claim.text,
        "set-up": claim.setup,
        "statistic": claim.statistic,
        "paper": claim.paper.text,
        "llumsim": "not run",
        "where": "",
        "points": "",
        "agreement": grading.NOT_AVAILABLE,
        "direction": "",
    }
    if not points:
        return {**row, "why it differs": "", "_points": points}
    seeds = max(p.estimate.seeds for p in points)
    row["points"] = _counts([p.grade for p in points], grading.GRADES) + f" ({seeds} seed{'s' if seeds > 1 else ''})"
    if claim.kind.parity is not None:
        row["direction"] = "Llumnix " + _counts([p.direction for p in points], ("better", "even", "worse"))
    if claim.paper.shape == "range":
        low = min(points, key=lambda p: p.estimate.value)
        high = max(points, key=lambda p: p.estimate.value)
        row["llumsim"] = f"{shown(claim.kind, low.estimate)} – {shown(claim.kind, high.estimate)}"
        row["where"] = f"lowest {_point_where(low)}; highest {_point_where(high)}"
        row["agreement"] = grading.worst(
            [claim.paper.end_grade(claim.kind, low.estimate.value, "low"),
             claim.paper.end_grade(claim.kind, high.estimate.value, "high")]
        )
    elif claim.paper.shape == "bound":
        top = max(points, key=lambda p: p.estimate.value)
        row["llumsim"] = shown(claim.kind, top.estimate)
        row["where"] = f"worst: {_point_where(top)}"
        row["agreement"] = top.grade
    else:
        median = median_over_points(claim, values, points)
        row["llumsim"] = shown(claim.kind, median)
        row["where"] = f"median over {len(points)} point{'s' if len(points) > 1 else ''}"
        row["agreement"] = claim.paper.grade(claim.kind, median.value)
    note = claim.note.render(runs) if claim.note and row["agreement"] != "match" else ""
    return {**row, "why it differs": note, "_points": points}


def claims_table(runs: Runs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The claims table (one row per claim statistic) and every graded point behind it."""
    rows, point_rows = [], []
    for claim in claims():
        row = grade_claim(claim, runs)
        for point in row.pop("_points"):
            point_rows.append(
                {
                    "id": claim.id,
                    "statistic": claim.statistic,
                    "part": point.part,
                    "x": point.x,
                    "value": point.estimate.value,
                    "low": point.estimate.low,
                    "high": point.estimate.high,
                    "seeds": point.estimate.seeds,
                    "paper": claim.paper.text,
                    "grade": point.grade,
                    "direction": point.direction,
                }
            )
        rows.append(row)
    return pd.DataFrame(rows), pd.DataFrame(point_rows)


def grade_counts(table: pd.DataFrame) -> str:
    """``12 match, 5 near, 8 differs, 1 n/a``: the rows' agreements."""
    counts = table["agreement"].value_counts()
    return ", ".join(f"{counts.get(g, 0)} {g}" for g in (*grading.GRADES, grading.NOT_AVAILABLE))


def runs_table(index: pd.DataFrame) -> pd.DataFrame:
    """Per run: the request lengths it received (Table 1's statistics), its mean KV
    occupancy and headline latencies."""
    columns = {
        "part": "part",
        "scheduler": "scheduler",
        "seed": "seed",
        "lengths.prompt_tokens.mean": "input mean",
        "lengths.prompt_tokens.p95": "input P95",
        "lengths.output_tokens.mean": "output mean",
        "lengths.output_tokens.p95": "output P95",
        "memory.mean_kv_occupancy": "KV occupancy",
        f"latency.{PRE}.p99": "P99 prefill (s)",
        "cost.average_instances": "instances",
    }
    frame = index.copy()
    frame["point"] = [
        f"{row[X_COLUMN[row['part']]]:g}" if row["part"] in X_COLUMN else "" for _, row in frame.iterrows()
    ]
    keep = [c for c in columns if c in frame]
    out = frame[["point", *keep]].rename(columns=columns)
    first = [columns[c] for c in ("part", "scheduler") if c in keep]
    return out[[*first, "point", *[columns[c] for c in keep if columns[c] not in first]]]
