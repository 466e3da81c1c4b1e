"""The load record a llumlet reports to the global scheduler: the whole interface upward.

The global scheduler never sees a request list; everything it decides (dispatch, migration
pairing, scaling) comes from these instance-level numbers.
"""

from __future__ import annotations

from typing import NamedTuple


# A NamedTuple rather than a frozen dataclass: just as immutable and built by keyword, but
# every instance files one per load-report interval (50 ms), and a frozen dataclass's
# __init__ (one object.__setattr__ per field) cost ~1.5 us against ~0.5 us — 12% of the
# 10,000-request benchmark's event loop (benchmarks/README.md).
class LoadReport(NamedTuple):
    instance_id: int
    time: float
    capacity_blocks: int
    used_blocks: int  # allocated to resident requests
    reserved_blocks: int  # pre-allocated for inbound migrations
    num_running: int
    num_waiting: int
    waiting_demand_blocks: int  # blocks all queued requests need
    head_demand_blocks: int  # blocks the head-of-line queued request needs
    freeness_full: float  # F over every virtual usage (dispatch, migration)
    freeness_normal: float  # F over physical usage only (auto-scaling)
    draining: bool = False
    migrating: bool = False  # a migration touching this instance is in flight

    @property
    def free_blocks(self) -> int:
        return self.capacity_blocks - self.used_blocks - self.reserved_blocks

    @property
    def memory_load(self) -> float:
        """INFaaS++'s load: used blocks plus the demand of queued requests, over capacity."""
        return (self.used_blocks + self.waiting_demand_blocks) / self.capacity_blocks
