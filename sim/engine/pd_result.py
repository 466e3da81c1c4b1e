"""What prefill/decode disaggregation leaves in a run's result (``sim.engine.handoffs``):
each pool's role, the bytes of a KV block a hand-off copies, how long each instance's link
carried copies, and the requests adaptive PD served in the other role's place. The
hand-offs themselves are migration records of kind ``handoff``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol

from sim.engine.handoffs import Handoffs
from sim.engine.sections import result_section
from sim.engine.setup import InstancePool


@dataclass(frozen=True)
class PdResult:
    pool_roles: dict[str, str]  # every pool's role: prefill, decode or mixed
    pool_block_bytes: dict[str, int]  # bytes of one KV block of the pool's instances (pools that migrate)
    link_busy_seconds: dict[int, float]  # each instance's hand-off link, by instance id
    role_swaps: dict[str, int]  # adaptive PD: work done in the other role's place, by kind


class _Run(Protocol):
    pools: dict[str, InstancePool]
    handoffs: Optional[Handoffs]  # None without pool roles


def _collect(run: _Run) -> Optional[PdResult]:
    roles: dict[str, str] = {name: pool.config.role for name, pool in run.pools.items()}
    if set(roles.values()) <= {"mixed"}:
        return None
    handoffs = run.handoffs
    return PdResult(
        pool_roles=roles,
        pool_block_bytes={
            name: getattr(pool.transfer, "block_bytes", 0) for name, pool in run.pools.items() if pool.transfer is not None
        },
        link_busy_seconds={} if handoffs is None else {i: link.busy_seconds for i, link in handoffs.links.items()},
        role_swaps={} if handoffs is None else dict(handoffs.swaps),
    )


# None: no pool has a role other than mixed
PD = result_section("pd", _collect)
