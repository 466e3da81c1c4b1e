"""Cost: GPUs per instance is the tensor-parallel degree; money and cost-per-latency follow."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from sim.config import ConfigError, load_config
from sim.metrics.cost import cost_summary, gpus_per_instance


@pytest.mark.parametrize(
    ("overrides", "gpus"),
    [
        ([], 1),
        (["cluster.model=llama-30b"], 4),
        (["cluster.model=llama-30b", "cluster.tensor_parallel=4"], 4),
    ],
)
def test_gpus_per_instance_is_the_tensor_parallel_degree(overrides, gpus):
    assert gpus_per_instance(load_config(base={}, overrides=overrides).cluster) == gpus


def test_cost_per_latency_is_cost_per_request_times_mean_e2e():
    config = load_config(base={"cluster": {"model": "llama-30b"}, "cost": {"gpu_hour_price": 2.0}})
    # 2 instances for 900 s each = 1800 instance-s = 0.5 instance-hours = 2 GPU-hours (TP 4)
    cost = cost_summary(config, {"cluster": 1800.0}, 900.0, pd.Series([1.0, 3.0, float("nan")]))
    assert cost["average_instances"] == 2.0
    assert cost["gpu_hours"] == pytest.approx(2.0)
    assert cost["cost"] == pytest.approx(4.0)
    assert cost["cost_per_request"] == pytest.approx(2.0)  # NaN (unfinished) is not a request
    assert cost["cost_per_latency"] == pytest.approx(2.0 * 2.0)


def test_no_finished_request_gives_nan_not_an_error():
    cost = cost_summary(load_config(base={}), {"cluster": 10.0}, 10.0, pd.Series([], dtype=float))
    assert math.isnan(cost["cost_per_latency"])


def test_a_negative_price_is_a_config_error_naming_the_key():
    with pytest.raises(ConfigError, match="cost.gpu_hour_price"):
        load_config(base={"cost": {"gpu_hour_price": -1}})


def test_sku_prices_bill_each_pool_at_its_devices_list_price():
    """``cost.sku_prices``: the A10 entry's on-demand price instead of ``gpu_hour_price``."""
    config = load_config(base={"cluster": {"model": "llama-30b"}, "cost": {"sku_prices": True}})
    cost = cost_summary(config, {"cluster": 1800.0}, 900.0, pd.Series([1.0, 3.0]))
    assert cost["gpu_hours"] == pytest.approx(2.0)
    assert cost["gpu_hour_price"] == 1.29 and cost["cost"] == pytest.approx(2.0 * 1.29)


def test_the_default_prices_are_unchanged_and_leave_the_config_hash_alone():
    from sim.config.loader import to_dict

    default = load_config(base={})
    assert "sku_prices" not in to_dict(default)["cost"]  # runs stored before keep their keys
    cost = cost_summary(default, {"cluster": 7200.0}, 3600.0, pd.Series([1.0]))
    assert cost["gpu_hour_price"] == 1.0 and cost["cost"] == cost["gpu_hours"] == 2.0
