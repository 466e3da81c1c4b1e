"""What a global scheduler knows of the cluster: load reports, and its own dispatches since."""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

from sim.cluster.slo_predictor import InstanceModel
from sim.config import SloTargetConfig
from sim.instance.load import LoadReport


class ClusterView:
    """The latest report of every reporting instance (draining ones too: they are migration
    sources), the instances that accept dispatches, and the demand dispatched to each since
    its last report (so a burst between two reports does not all land on one instance); and
    what is static: each instance's pool, its pool's role (prefill/decode disaggregation),
    replica model and limits, and each tier's SLO targets. Rules that treat pools apart read
    ``pools()``; a rule choosing among some instances only gets ``among(...)``."""

    def __init__(self, slo_targets: Sequence[SloTargetConfig] = ()) -> None:
        self.instances: list[int] = []  # accept dispatches, in id order
        self.reports: dict[int, LoadReport] = {}
        self.pending: dict[int, int] = {}  # blocks dispatched since the instance's last report
        self.models: dict[int, InstanceModel] = {}  # where the engine said (SLO prediction)
        self.pool_of: dict[int, str] = {}  # every instance ever added -> its pool's name
        self.role_of: dict[int, str] = {}  # every instance ever added -> its pool's role
        self.slo_targets = tuple(slo_targets)  # per tier, empty without SLOs

    def add(
        self, instance_id: int, model: Optional[InstanceModel] = None, pool: str = "cluster", role: str = "mixed"
    ) -> None:
        if model is not None:
            self.models[instance_id] = model
        self.pool_of[instance_id] = pool
        self.role_of[instance_id] = role
        if instance_id not in self.instances:
            self.instances.append(instance_id)
            self.instances.sort()
            self.pending[instance_id] = 0

    def remove(self, instance_id: int) -> None:
        """The instance takes no more dispatches (draining, failed or removed)."""
        if instance_id in self.instances:
            self.instances.remove(instance_id)
        self.pending.pop(instance_id, None)
        self.reports.pop(instance_id, None)

    def among(self, instances: list[int]) -> "ClusterView":
        """This view with only ``instances`` taking dispatches (those able to serve a request
        when pools differ, the entry or decode instances of disaggregated pools): what a rule
        choosing among them sees. It shares every report and count with this view."""
        narrowed = ClusterView(self.slo_targets)
        narrowed.instances = instances
        narrowed.reports = self.reports
        narrowed.pending = self.pending
        narrowed.models = self.models
        narrowed.pool_of = self.pool_of
        narrowed.role_of = self.role_of
        return narrowed

    def pools(self) -> dict[str, list[int]]:
        """The instances that accept dispatches, by pool (pools in the order first seen,
        instances in id order)."""
        grouped: dict[str, list[int]] = {}
        for instance_id in self.instances:
            grouped.setdefault(self.pool_of[instance_id], []).append(instance_id)
        return grouped

    def observe(self, reports: Mapping[int, LoadReport]) -> None:
        for report in reports.values():
            self.observe_one(report)

    def observe_one(self, report: LoadReport) -> bool:
        """Keep ``report``; True if its instance takes dispatches (its pending demand is now
        part of the report)."""
        instance_id = report.instance_id
        self.reports[instance_id] = report
        pending = self.pending
        if instance_id in pending:
            pending[instance_id] = 0
            return True
        return False

    def note_dispatch(self, instance_id: int, demand_blocks: int) -> None:
        self.pending[instance_id] = self.pending.get(instance_id, 0) + demand_blocks
