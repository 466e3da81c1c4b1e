"""Cache-aware dispatch: the instance holding the longest cached prefix of the request, among
those not busy; the load rule when none holds any.

As Llumnix's ``CacheAware`` dispatch policy does it (AlibabaPAI/llumnix main 24220fb,
``llumnix/global_scheduler/dispatch_policy.py`` 286-350; added in 0b491814): it asks which
instances hold each of the request's chained prefix hashes, counts each instance's leading
hits, drops instances whose dispatch load is busy (``dispatch_filter.py``
``MetricBasedFilter``: remaining steps below ``REMAININGSTEPS_BUSY_THRESHOLD`` = 10,
``constants.py`` 108), and takes the instance with the most hits; with no hit it dispatches
by the load metric. Llumnix hashes 256-token chunks and asks a meta service; here the
instances' own 16-token blocks are looked up (``DispatchInfo.cached_blocks``), so the
locality is exact and current. Ties in hits go to the lower load. The load is the ``load``
rule's, the artifact's dispatch load: −(free − watermark − queued blocks) / (running +
queued), Llumnix's remaining steps negated.
"""

from __future__ import annotations

from typing import Final

from sim.cluster.dispatch import DISPATCH_RULES, ArtifactLoad, DispatchInfo
from sim.cluster.view import ClusterView

BUSY_REMAINING_STEPS: Final = 10.0  # Llumnix's REMAININGSTEPS_BUSY_THRESHOLD


class CacheAware(ArtifactLoad):
    """The longest cached prefix among instances that are not busy (module docstring)."""

    reads_cache = True
    reads_tiers = False  # only through its priority mode, in the load (as the ``load`` rule)

    def choose(self, view: ClusterView, request: DispatchInfo) -> int:
        cached = request.cached_blocks or {}
        holding = [i for i in view.instances if cached.get(i, 0) > 0]
        if holding:
            loads = {i: self.load(view, i, request.tier) for i in holding}
            available = [i for i in holding if -loads[i] >= BUSY_REMAINING_STEPS]
            if available:
                return min(reversed(available), key=lambda i: (-cached[i], loads[i]))
        return super().choose(view, request)


DISPATCH_RULES.register("cache-aware")(CacheAware)
