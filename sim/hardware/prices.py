"""What a GPU-hour costs in each pool of a config: hardware data (each device SKU entry's list
price, ``skus.py``) read against the config's ``cost`` section. Here rather than in the metrics,
so the engine can reject a pool without a list price before a run without importing them."""

from __future__ import annotations

from sim.config import ConfigError, SimulationConfig
from sim.hardware.catalog import UnknownHardwareError, find_layout


def gpu_hour_prices(config: SimulationConfig, on_demand: bool = False) -> dict[str, float]:
    """What a GPU-hour costs in each pool, by name: a spot pool's own price (``pools[*].spot``)
    unless ``on_demand`` asks what it would cost on demand; a ConfigError where
    ``cost.sku_prices`` meets a pool whose device has no list price (or no entry)."""
    prices = _on_demand_prices(config)
    if not on_demand:
        prices.update({pool.name: pool.spot.price for pool in config.instance_pools() if pool.spot is not None})
    return prices


def _on_demand_prices(config: SimulationConfig) -> dict[str, float]:
    pools = config.instance_pools()
    if not config.cost.sku_prices:
        return {pool.name: config.cost.gpu_hour_price for pool in pools}
    prices = {}
    for pool in pools:
        try:
            price = find_layout(pool.model, pool.device, pool.tensor_parallel).device_sku.gpu_hour_price
        except UnknownHardwareError as exc:
            raise ConfigError(f"cost.sku_prices: pool {pool.name}: {exc}") from None
        if price is None:
            raise ConfigError(
                f"cost.sku_prices: pool {pool.name}'s device {pool.device} has no list price in its "
                "SKU entry; set cost.gpu_hour_price instead"
            )
        prices[pool.name] = price
    return prices
