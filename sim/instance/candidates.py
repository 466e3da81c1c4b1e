"""Which running request a paired source migrates: the source llumlet's own choice.

The global scheduler only pairs instances; the request that moves is picked here from what
the source knows about its running batch. A rule gets the source's batch former and the first tier that
counts as normal priority (0 when priorities are off), and never picks a request already
migrating. The artifact's rules (``vllm/core/scheduler.py::get_migrating_seq_groups``) see
vLLM's running list in arrival order; every running request here has produced a token.
"""

from __future__ import annotations

from typing import Callable, Optional

from sim.config.registry import Registry
from sim.instance.batching import BatchFormer, arrival_order
from sim.instance.request import Request

CandidateRule = Callable[[BatchFormer, int], Optional[Request]]

CANDIDATE_RULES: Registry[CandidateRule] = Registry("candidate", "migration.candidate")


def _free(request: Optional[Request]) -> Optional[Request]:
    return request if request is not None and request.migration is None else None


@CANDIDATE_RULES.register("lcfs")
def last_come_first_served(source: BatchFormer, normal_from: int) -> Optional[Request]:
    """The artifact's default, as its code ran: if any running request is decoding at normal
    priority, the last one in arrival order (``running[-1]``) — whatever its own priority."""
    if not any(request.tier >= normal_from for request in source.running):
        return None
    return _free(max(source.running, key=arrival_order, default=None))


@CANDIDATE_RULES.register("lcfs-normal")
def last_normal_request(source: BatchFormer, normal_from: int) -> Optional[Request]:
    """What the artifact's LCFS evidently meant: the latest-arriving normal-priority request."""
    normal = [r for r in source.running if r.tier >= normal_from and r.migration is None]
    return max(normal, key=arrival_order, default=None)


@CANDIDATE_RULES.register("sjf")
def shortest_job_first(source: BatchFormer, normal_from: int) -> Optional[Request]:
    """The artifact's SJF: the shortest sequence (prompt + output), the earliest on ties."""
    return _free(min(source.running, key=lambda r: (_length(source, r), arrival_order(r)), default=None))


@CANDIDATE_RULES.register("ljf")
def longest_job_first(source: BatchFormer, normal_from: int) -> Optional[Request]:
    """The artifact's LJF: the longest sequence, the latest on ties."""
    return _free(max(source.running, key=lambda r: (_length(source, r), arrival_order(r)), default=None))


@CANDIDATE_RULES.register("lowest-tier-shortest")
def lowest_tier_shortest(source: BatchFormer, normal_from: int) -> Optional[Request]:
    """The paper's prose (§4.4.3): lower priority first, then the shortest sequence
    (cheapest to move), then the lowest id; never one already migrating."""
    return _first_by(source, lambda request: (-request.tier, _length(source, request), request.id))


@CANDIDATE_RULES.register("least-critical-longest")
def least_critical_longest(source: BatchFormer, normal_from: int) -> Optional[Request]:
    """SLO-driven migration's: the least critical request whose move relieves the source
    most — of the least critical tier running, the longest sequence (a decode step's time
    grows with the batch's KV tokens), then the lowest id; never one already migrating."""
    return _first_by(source, lambda request: (-request.tier, -_length(source, request), request.id))


def _first_by(source: BatchFormer, key: Callable[[Request], tuple]) -> Optional[Request]:
    """The running request not already migrating with the smallest ``key``."""
    best: Optional[Request] = None
    best_key = None
    for request in source.running:
        if request.migration is not None:
            continue
        request_key = key(request)
        if best_key is None or request_key < best_key:
            best, best_key = request, request_key
    return best


def _length(source: BatchFormer, request: Request) -> int:
    return request.prompt_tokens + source.progress(request)
