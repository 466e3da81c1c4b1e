"""Bad values of the keys the features since 2026-12-02 added — serving engines and the
llumlet's parts, the prefix cache, PD roles and hand-offs, sessions and system prompts,
inference-perf profiles, SLO contracts, per-SKU prices, the scale-out pool, error bands —
stop ``llumsim run`` with exit code 2 and one line naming the key, as every older key does
(``test_bad_inputs.py``). ``test_every_key_added_since_2026_12_02_has_a_bad_value_case``
keeps the list whole."""

from __future__ import annotations

import pytest

from tests.test_bad_inputs import refused_run

BASE = "name: bad-input\ncluster: {instances: 2}\nworkload: {source: synthetic, num_requests: 20}\n"
PD_BASE = (
    "name: bad-input\nworkload: {source: synthetic, num_requests: 20}\npools:\n"
    "  - {name: p, instances: 1, role: prefill}\n  - {name: d, instances: 1, role: decode}\n"
)
SPOT = "{price: 0.5, preemption: {rate_per_hour: 1}}"
SPOT_BASE = "name: bad-input\nworkload: {source: synthetic, num_requests: 20}\n"


def spot_pools(spot: str, first: str = "", second: str = "{name: d, instances: 1}") -> list[str]:
    """A spot pool (``spot``: its section) beside an on-demand one."""
    return [f"pools=[{{name: s, instances: 1, {first}spot: {spot}}}, {second}]"]


SESSIONS = ["workload.source=sessions", "workload.trace=traces/sharegpt/sharegpt_v3_sessions.csv"]

# id: (base config, --set overrides, what the one line must contain)
BAD_VALUES: dict[str, tuple[str, list[str], str]] = {
    "a scale-out pool that is not there": (
        BASE, ["autoscale.enabled=true", "autoscale.pool=nowhere"], "autoscale.pool: 'nowhere' is neither"
    ),
    "an unknown batch former": (BASE, ["cluster.batch_former=magic"], "cluster.batch_former: unknown batch former part 'magic'"),
    "an unknown engine": (BASE, ["cluster.engine=vllm-9"], "cluster.engine: unknown serving engine part 'vllm-9'"),
    "no KV at all": (BASE, ["cluster.kv_scale=0"], "cluster.kv_scale: must be > 0, got 0"),
    "an unknown ledger": (BASE, ["cluster.ledger=lru"], "cluster.ledger: unknown block ledger part 'lru'"),
    "a second per output token": (
        BASE, ["cluster.overhead.per_output_token=1"], "cluster.overhead.per_output_token: must be <= 0.001 s, got 1"
    ),
    "endless prefills": (BASE, ["cluster.prefill_scale=.inf"], "cluster.prefill_scale: must be <= 100, got inf"),
    "maybe list prices": (BASE, ["cost.sku_prices=maybe"], "cost.sku_prices: expected true or false, got 'maybe'"),
    "a flat price beside list prices": (
        BASE, ["cost.gpu_hour_price=2", "cost.sku_prices=true"],
        "cost.gpu_hour_price: 2.0 needs cost.sku_prices: false (per-SKU list prices replace a flat price)",
    ),
    "skip cached twice": (BASE, ["migration.skip_cached=2"], "migration.skip_cached: expected true or false, got 2"),
    "sometimes adaptive": (PD_BASE, ["pd.adaptive=sometimes"], "pd.adaptive: expected true or false, got 'sometimes'"),
    "a teleported copy": (PD_BASE, ["pd.copy=teleport"], "pd.copy: 'teleport' is not one of 'blocking', 'live'"),
    "layer-wise copies a rule cannot start": (
        PD_BASE, ["pd.layerwise=true", "pd.pairing=llumnix"], "pd.layerwise: streams the KV during the prefill"
    ),
    "an unknown hand-off rule": (PD_BASE, ["pd.pairing=nobody"], "pd.pairing: unknown hand-off rule 'nobody'"),
    "an unknown role": (PD_BASE, ["pools=[{name: p, instances: 1, role: judge}]"], "pools[0].role: 'judge' is not one of"),
    "only decode pools": (
        PD_BASE, ["pools=[{name: d, instances: 1, role: decode}]"], "pools[*].role: decode pools, but no prefill pool"
    ),
    "hand-offs between models": (
        PD_BASE,
        ["pools=[{name: p, instances: 1, role: prefill}, {name: d, instances: 1, role: decode, model: llama-30b}]"],
        "pools[1].model: llama-30b differs from pools[0]'s llama-7b, and its pools hand requests over "
        "(pools[*].role), which cannot move a KV cache between models",
    ),
    "idle reports sometimes": (BASE, ["scheduler.idle_reports=sometimes"], "scheduler.idle_reports: 'sometimes' is not one of"),
    "a contract of no classes": (
        BASE, ["slo={contract: {classes: 0}}"], "slo.contract.classes: must be >= 1"
    ),
    "a contract with a zero TTFT": (
        BASE, ["slo={contract: {ttft: [0, 1]}}"], "slo.contract.ttft[0]: must be > 0"
    ),
    "a contract with a NaN TPOT": (
        BASE, ["slo={contract: {tpot: [0.1, .nan]}}"], "slo.contract.tpot[1]: must be a number"
    ),
    "a contract span upside down": (
        BASE, ["slo={contract: {tpot: [0.8, 0.1]}}"], "slo.contract.tpot: a span is [tightest, loosest]"
    ),
    "a profile of no file": (
        BASE, ["workload.source=inference-perf", "workload.profile=nope.yaml"], "nope.yaml: inference-perf profile not found"
    ),
    "a profile for a synthetic source": (
        BASE, ["workload.profile=experiments/configs/inference_perf.yaml"],
        "workload.profile: set, but source is 'synthetic'",
    ),
    "no turns": (BASE, [*SESSIONS, "workload.sessions.max_turns=0"], "workload.sessions.max_turns: must be >= 1 turns, got 0"),
    "a think time of years": (
        BASE, [*SESSIONS, "workload.sessions.think_time=1e9"], "workload.sessions.think_time: must be <= 86400 seconds"
    ),
    "a negative system prompt": (
        BASE, ["workload.system_prompt.tokens=-1"], "workload.system_prompt.tokens: must be >= 0 tokens, got -1"
    ),
    "no system prompts to draw from": (
        BASE, ["workload.system_prompt={tokens: 100, prompts: 0}"], "workload.system_prompt.prompts: must be >= 1"
    ),
    "a free lunch": (SPOT_BASE, spot_pools("{price: -1, preemption: {rate_per_hour: 1}}"), "pools[0].spot.price: must be >= 0"),
    "a spot price nobody cited": (SPOT_BASE, spot_pools("{preemption: {rate_per_hour: 1}}"), "pools[0].spot.price: required key missing"),
    "no preemption source": (SPOT_BASE, spot_pools("{price: 0.5}"), "pools[0].spot.preemption: required key missing"),
    "two preemption sources": (
        SPOT_BASE, spot_pools("{price: 0.5, preemption: {rate_per_hour: 1, trace: t.csv}}"),
        "pools[0].spot.preemption.rate_per_hour/trace: a preemption source is one of them",
    ),
    "a rate of nothing": (
        SPOT_BASE, spot_pools("{price: 0.5, preemption: {rate_per_hour: 0}}"), "pools[0].spot.preemption.rate_per_hour: must be > 0"
    ),
    "a rate replayed from a second": (
        SPOT_BASE, spot_pools("{price: 0.5, preemption: {rate_per_hour: 1, start: 5}}"),
        "pools[0].spot.preemption.start: only a trace is replayed",
    ),
    "a trace that is not there": (
        SPOT_BASE, spot_pools("{price: 0.5, preemption: {trace: nowhere.csv}}"), "nowhere.csv",
    ),
    "a grace period before the notice": (
        SPOT_BASE, spot_pools("{price: 0.5, preemption: {rate_per_hour: 1}, grace: -1}"), "pools[0].spot.grace: must be >= 0"
    ),
    "a teleporting evacuation": (
        SPOT_BASE, spot_pools("{price: 0.5, preemption: {rate_per_hour: 1}, evacuation: teleport}"),
        "pools[0].spot.evacuation: 'teleport' is not one of",
    ),
    "evacuation by lottery": (
        SPOT_BASE, spot_pools("{price: 0.5, preemption: {rate_per_hour: 1}, order: lottery}"),
        "pools[0].spot.order: 'lottery' is not one of",
    ),
    "a replacement from nowhere": (
        SPOT_BASE, spot_pools("{price: 0.5, preemption: {rate_per_hour: 1}, replacement: on-demand}",
                         second="{name: d, instances: 1, spot: " + SPOT + "}"),
        "pools[0].spot.replacement: on-demand replaces a preempted instance with one of the first pool without spot",
    ),
    "a replacement of another kind": (
        SPOT_BASE, spot_pools("{price: 0.5, preemption: {rate_per_hour: 1}, replacement: reserved}"),
        "pools[0].spot.replacement: 'reserved' is not one of",
    ),
    "a cold start of years": (
        SPOT_BASE, spot_pools("{price: 0.5, preemption: {rate_per_hour: 1}, cold_start: 1e9}"),
        "pools[0].spot.cold_start: must be <= 86400",
    ),
    "losses ignored": (
        SPOT_BASE, spot_pools("{price: 0.5, preemption: {rate_per_hour: 1}, on_failure: ignore}"),
        "pools[0].spot.on_failure: 'ignore' is not one of",
    ),
    "a spot prefill pool": (
        SPOT_BASE, spot_pools(SPOT, first="role: prefill, ", second="{name: d, instances: 1, role: decode}"),
        "pools[0].spot: not with pool roles",
    ),
    "evacuation between models": (
        SPOT_BASE, spot_pools(SPOT, second="{name: d, instances: 1, model: llama-30b}"),
        "pools[1].model: llama-30b differs from pools[0]'s llama-7b, and pools[0] evacuates by live migration",
    ),
}

# every key added since 2026-12-02 (a pool takes every cluster key: cluster.* covers pools[*].*)
ADDED_SINCE_2026_12_02 = (
    "autoscale.pool", "cluster.batch_former", "cluster.engine", "cluster.kv_scale", "cluster.ledger",
    "cluster.overhead.per_output_token", "cluster.prefill_scale", "cost.sku_prices", "migration.skip_cached",
    "pd.adaptive", "pd.copy", "pd.layerwise", "pd.pairing", "pools[*].role", "scheduler.idle_reports",
    "slo.contract.classes", "slo.contract.ttft", "slo.contract.tpot", "workload.profile",
    "workload.sessions.max_turns", "workload.sessions.think_time", "workload.system_prompt.prompts",
    "workload.system_prompt.tokens",
    # a spot pool's keys, named on the first pool
    "pools[0].spot", "pools[0].spot.price", "pools[0].spot.preemption", "pools[0].spot.preemption.rate_per_hour",
    "pools[0].spot.preemption.start", "pools[0].spot.grace", "pools[0].spot.evacuation", "pools[0].spot.order",
    "pools[0].spot.replacement", "pools[0].spot.cold_start", "pools[0].spot.on_failure",
)


@pytest.mark.parametrize(("base", "overrides", "expected"), BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_a_bad_value_of_a_new_key_exits_2_naming_it(base, overrides, expected, tmp_path, capsys):
    assert expected in refused_run(base, overrides, tmp_path, capsys)


def test_every_key_added_since_2026_12_02_has_a_bad_value_case():
    named = " ".join(expected for _, _, expected in BAD_VALUES.values())
    missing = [key for key in ADDED_SINCE_2026_12_02 if f"{key}:" not in named and f"{key}[" not in named]
    assert not missing, missing
