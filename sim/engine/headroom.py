"""Adaptive headroom in a run: the controller (``sim.cluster.adaptive_headroom``) hears every
ended request's TTFT and TPOT, and every ``priority.adaptive.interval`` a moved allocation
reaches every pool (its new instances) and every live instance's reports."""

from __future__ import annotations

from typing import Mapping, Optional

from sim.cluster.adaptive_headroom import HeadroomController
from sim.engine.instances import InstanceRuntime
from sim.engine.setup import InstancePool
from sim.instance.load import LoadReport
from sim.instance.request import Request, RequestState


class HeadroomAdapter:
    def __init__(
        self,
        controller: HeadroomController,
        interval: float,
        pools: Mapping[str, InstancePool],
        live: Mapping[int, InstanceRuntime],
    ) -> None:
        self.controller = controller
        self.interval = interval
        self.pools = pools
        self.live = live
        self._next_adapt = interval  # when the controller next ends its window

    def observe(self, request: Request) -> None:
        """An ended request's latencies, as the frontend that streamed it knows them."""
        self.controller.observe(request.tier, *slo_times(request))

    def adapt(self, now: float, reports: Optional[dict[int, LoadReport]]) -> None:
        """The tick's job: the controller ends its window, and a moved allocation reaches
        every pool and every live instance's reports."""
        if now < self._next_adapt:
            return
        self._next_adapt = now + self.interval
        if not self.controller.adjust():
            return
        for pool in self.pools.values():
            pool.adapt_headroom(self.controller.fractions)
        for runtime in self.live.values():
            runtime.loop.cut()  # its reports change from its next step
            runtime.llumlet.reporter.set_headroom(runtime.pool.headroom)


def slo_times(request: Request) -> tuple[Optional[float], Optional[float]]:
    """An ended request's TTFT (None: no first token) and TPOT after it (None: not
    finished; 0 for a one-token request)."""
    first = request.first_token_time
    ttft = None if first is None else first - request.arrival
    if request.state is not RequestState.FINISHED or first is None:
        return ttft, None
    tokens_after = request.output_tokens - 1
    return ttft, (request.finish_time - first) / tokens_after if tokens_after else 0.0
