"""Carrying out the scaling rule's decisions: scale out after a cold start, drain, remove.

The policy (when to act, how many, which instance) is a ``sim.cluster.ScalingRule``; this
module keeps the state of acting on it (instances still starting, the scaling log) and
changes the cluster only through ``ClusterActions``.
"""

from __future__ import annotations

from typing import Callable, Mapping, NamedTuple, Optional, Protocol

import simpy

from sim.cluster.scaling import CANCEL_DRAIN, SCALE_OUT, ScaleOutPool, ScalingDecision, ScalingRule
from sim.engine.actions import ClusterActions
from sim.engine.sections import result_section
from sim.instance.load import LoadReport


class ScalingEvent(NamedTuple):
    time: float
    action: str  # scale_out (decided), ready, scale_in (drain starts), removed
    instance: int  # -1 for a scale-out decision (the instance has no id yet)


class Scaler:
    def __init__(
        self,
        env: simpy.Environment,
        rule: ScalingRule,
        actions: ClusterActions,
        cold_start: float,
        pool: ScaleOutPool,
        leaving: Callable[[int], bool] = lambda instance_id: False,
    ) -> None:
        self.env = env
        # whether a draining instance is leaving whatever the rule wants (a spot instance
        # under notice): its drain is not the rule's to cancel
        self.leaving = leaving
        self.rule = rule
        self.pool = pool  # which pool a scale-out adds to
        self.actions = actions
        self.cold_start = cold_start
        self.starting = 0  # scale-outs still in their cold start
        self.log: list[ScalingEvent] = []

    def on_reports(self, now: float, reports: Mapping[int, LoadReport], instances: int) -> None:
        """Ask the rule (every load-report period) and act on its answer. ``reports``: the
        latest known report of each live instance; ``instances``: how many are live."""
        decision = self.rule.decide(now, reports, instances, self.starting)
        if decision is None:
            return
        if decision.action == CANCEL_DRAIN and self.leaving(decision.instance):
            # the rule wants the instance back; the cloud takes it: one new instance instead
            decision = ScalingDecision(SCALE_OUT, count=1)
        if decision.action == SCALE_OUT:
            pool = self.pool.choose(reports, self.actions.pool_of, self.actions.pool_names)
            for _ in range(decision.count):
                self.starting += 1
                self.log.append(ScalingEvent(now, SCALE_OUT, -1))
                self.env.process(self._scale_out(now, pool))
            return
        if decision.action == CANCEL_DRAIN:
            self.actions.undrain(decision.instance)
        else:
            self.actions.drain(decision.instance)
        self.log.append(ScalingEvent(now, decision.action, decision.instance))

    def removed(self, instance_ids: list[int]) -> None:
        """Drained instances the engine removed (empty, nothing migrating)."""
        for instance_id in instance_ids:
            self.log.append(ScalingEvent(self.env.now, "removed", instance_id))

    def _scale_out(self, decided_at: float, pool: str):
        """A new instance of ``pool`` serves after the cold start; it is paid for from the decision."""
        yield self.env.timeout(self.cold_start)
        self.starting -= 1
        instance_id = self.actions.add_instance(pool, billed_from=decided_at)
        self.log.append(ScalingEvent(self.env.now, "ready", instance_id))


class _Scaled(Protocol):
    scaler: Optional[Scaler]  # None without auto-scaling


def _scaling_log(run: _Scaled) -> Optional[list[ScalingEvent]]:
    return None if run.scaler is None else run.scaler.log


# the auto-scaler's decisions and their outcomes, when (None: no auto-scaling)
SCALING_LOG = result_section("scaling_log", _scaling_log)
