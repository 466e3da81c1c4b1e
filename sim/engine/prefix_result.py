"""What requests sharing tokens did in a run: each caching instance's counters (hits,
evictions, transfers: ``sim.instance.prefix_cache``) and the workload's sharing
(conversations and system prompts, ``sim.workload.sessions``) that labels its requests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol

from sim.engine.instances import InstanceRuntime
from sim.engine.sections import result_section
from sim.workload.sessions import Sharing

if TYPE_CHECKING:
    from sim.workload.build import Workload


class _Run(Protocol):
    instances: dict[int, InstanceRuntime]
    workload: "Workload"


def _counters(run: _Run) -> Optional[dict[int, dict]]:
    counters = {i: runtime.llumlet.ledger.counters() for i, runtime in run.instances.items()}
    caching = {i: c for i, c in counters.items() if c is not None}
    return caching or None


def _sharing(run: _Run) -> Optional[Sharing]:
    return run.workload.sharing


# each caching instance's counters, by instance id (None: no instance caches)
PREFIX_CACHE = result_section("prefix_cache", _counters)
# the workload's conversations and system prompts (None: its requests share nothing)
SHARING = result_section("sharing", _sharing)
