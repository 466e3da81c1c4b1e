"""Which running request a paired source migrates: the source llumlet's own choice.

The global scheduler only pairs instances; the request that moves is picked here from what
the source knows about its running batch. A request already migrating is never picked.
"""

from __future__ import annotations

from typing import Callable, Optional

from sim.config.registry import Registry
from sim.instance.llumlet import Llumlet
from sim.instance.request import Request

CandidateRule = Callable[[Llumlet], Optional[Request]]

CANDIDATE_RULES: Registry[CandidateRule] = Registry("candidate", "migration.candidate")


@CANDIDATE_RULES.register("lowest-tier-shortest")
def lowest_tier_shortest(source: Llumlet) -> Optional[Request]:
    """The paper's prose (§4.4.3): lower priority first, then the shortest sequence
    (cheapest to move), then the lowest id."""
    best: Optional[Request] = None
    best_key = None
    for request in source.running:
        if request.migration is not None:
            continue
        key = (-request.tier, request.prompt_tokens + source.progress(request), request.id)
        if best_key is None or key < best_key:
            best, best_key = request, key
    return best
