"""An option that means something only beside another is never accepted and ignored
without a word: without its prerequisite it is refused naming both keys, or the run says
once — in its header and in ``summary.json``'s ``ignored`` — that it had no effect."""

from __future__ import annotations

import json

import pytest

from sim.cli.main import main
from sim.cluster.dispatch import DISPATCH_RULES
from sim.config import load_config
from sim.config.prerequisites import check
from sim.config.schema import CACHE_READING_DISPATCH
from tests.test_bad_inputs import exits_2_with_one_line

BASE = "name: needs\ncluster: {instances: 2}\nworkload: {source: synthetic, num_requests: 20}\n"

# id: (--set overrides, (the option's key, its prerequisite's key))
IGNORED = {
    "cache-aware dispatch without a cache": (["scheduler.dispatch=cache-aware"], ("scheduler.dispatch", "cluster.ledger")),
    "cache-blind copies without a cache": (["migration.skip_cached=false"], ("migration.skip_cached", "cluster.ledger")),
    "a scale-out pool without scaling": (["autoscale.pool=least-free"], ("autoscale.pool", "autoscale.enabled")),
    "system prompts of no tokens": (["workload.system_prompt.prompts=4"], ("workload.system_prompt.prompts", "tokens")),
}


@pytest.mark.parametrize(("overrides", "keys"), IGNORED.values(), ids=IGNORED.keys())
def test_an_option_without_its_prerequisite_is_named_in_the_header_and_summary(overrides, keys, tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(BASE)
    argv = ["run", str(config), "--no-plots", "--quiet", "--out", str(tmp_path / "out")]
    for override in overrides:
        argv += ["--set", override]
    assert main(argv) == 0
    (line,) = json.loads((tmp_path / "out" / "summary.json").read_text())["ignored"]
    option, prerequisite = keys
    assert line.startswith(f"{option}: ") and prerequisite in line and "no effect" in line
    printed = capsys.readouterr().out
    assert printed.count(f"note: {line}") == 1


def test_an_option_with_its_prerequisite_is_not_named(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(BASE)
    with_cache = ["cluster.ledger=prefix-caching", "scheduler.dispatch=cache-aware", "migration.skip_cached=false"]
    assert check(load_config(config, with_cache)) == []
    assert check(load_config(config, ["autoscale.enabled=true", "autoscale.pool=least-free"])) == []


def test_a_flat_price_beside_list_prices_is_refused_naming_both(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(BASE)
    argv = ["run", str(config), "--quiet", "--out", str(tmp_path / "out"), "--set", "cost.gpu_hour_price=3",
            "--set", "cost.sku_prices=true"]
    line = exits_2_with_one_line(argv, capsys)
    assert "cost.gpu_hour_price: 3.0 needs cost.sku_prices: false" in line


def test_the_cache_reading_dispatch_rules_are_the_ones_that_need_a_cache():
    """The schema names them (the config layer cannot import the rules); a new rule that
    reads the cache must be added there."""
    reading = {name for name in DISPATCH_RULES.names() if DISPATCH_RULES.get(name).reads_cache}
    assert reading == set(CACHE_READING_DISPATCH)


def test_a_mooncake_row_sharing_more_blocks_than_its_prompt_holds_is_refused(tmp_path, capsys):
    """A claim of 3 blocks of 512 tokens by a 700-token prompt (2 blocks) was cut to the
    prompt without a word."""
    trace = tmp_path / "m.csv"
    trace.write_text(
        "timestamp,input_length,output_length,prefix_of,shared_blocks\n0,1000,10,-1,0\n1,600,10,0,2\n2,700,10,0,3\n"
    )
    config = tmp_path / "c.yaml"
    config.write_text(f"name: m\ncluster: {{instances: 2}}\nworkload: {{source: timestamped, trace: {trace}, "
                      "arrival: {process: trace, rate: null}, num_requests: 3}\n")
    line = exits_2_with_one_line(["run", str(config), "--quiet", "--out", str(tmp_path / "out")], capsys)
    assert f"{trace}: row 4, column 'shared_blocks': 3 shared blocks of 512 tokens exceed" in line
