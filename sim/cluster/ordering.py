"""Arrival ordering: in which order requests that arrive at the same instant are dispatched."""

from __future__ import annotations

from typing import Callable, Sequence

from sim.config.registry import Registry
from sim.instance.request import Request

ArrivalOrdering = Callable[[Sequence[Request]], Sequence[Request]]

ARRIVAL_ORDERINGS: Registry[ArrivalOrdering] = Registry("ordering", "scheduler.ordering")


@ARRIVAL_ORDERINGS.register("arrival")
def in_arrival_order(group: Sequence[Request]) -> Sequence[Request]:
    """As the trace lists them."""
    return group


TIER_BLIND_ORDERINGS = frozenset({"arrival"})  # orderings that never read a request's tier


@ARRIVAL_ORDERINGS.register("tier-first")
def most_critical_first(group: Sequence[Request]) -> Sequence[Request]:
    """Most critical tier first, arrival order within a tier (requests ordered by scheduling
    priority, then arrival: Llumnix §4.4.1)."""
    return sorted(group, key=lambda request: request.tier) if len(group) > 1 else group
