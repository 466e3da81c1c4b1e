"""What a run shows of itself: instances and requests to tests, a stall description to the
watchdog, and, at the end, the ``SimulationResult``.

Read-only views of ``Simulation``'s state, kept apart from the kernel that changes it.
"""

from __future__ import annotations

from sim.engine.result import SimulationResult
from sim.instance.llumlet import Llumlet
from sim.instance.migration import MigrationRecord
from sim.instance.request import Request


class RunInspectionMixin:
    """Mixed into ``Simulation``; reads its instances, requests and logs."""

    def llumlet(self, instance_id: int) -> Llumlet:
        return self.instances[instance_id].llumlet

    @property
    def live_ids(self) -> list[int]:
        """Instances alive now (serving or draining), in id order."""
        return list(self.live)

    def request(self, request_id: int) -> Request:
        """A request that has arrived (requests are created at their arrival)."""
        return self.requests[request_id]

    @property
    def migration_records(self) -> list[MigrationRecord]:
        return self.migrations.records

    def _progress(self) -> tuple[int, int, int, int]:
        """Changes whenever a request moves on: arrives, is batched, migrates or ends."""
        return self._done_count, len(self.requests), self.steps.batches, len(self.migrations.records)

    def _pending(self) -> int:
        """Requests arrived and not ended."""
        return len(self.requests) - self._done_count

    def _instance_state(self, instance_id: int) -> str:
        llumlet = self.instances[instance_id].llumlet
        if llumlet.status.failed:
            return "failed"
        if instance_id not in self.live:
            return "removed"
        return "draining" if llumlet.status.draining else "serving"

    def _describe_stuck(self, shown: int = 10) -> str:
        """The pending requests (the first ``shown``), where each is, and the live instances."""
        pending = [r for r in self.requests if not self._done[r.id]]
        parts = []
        for request in pending[:shown]:
            where = request.instance
            place = "" if where is None else f" on instance {where} ({self._instance_state(where)})"
            parts.append(f"request {request.id} {request.state.value}{place}")
        more = f" and {len(pending) - shown} more" if len(pending) > shown else ""
        live = ", ".join(f"{i} ({self._instance_state(i)})" for i in self.live) or "none"
        return f"{len(pending)} pending: {', '.join(parts)}{more}; live instances: {live}"

    def _check_all_ended(self) -> None:
        """Invariant of a run that drained: every request is finished or aborted, and no
        instance, live or removed, still holds one."""
        unended = [r.id for r in self.requests if not r.done]
        held = [i for i, r in self.instances.items() if not r.llumlet.is_empty]
        if unended or held:
            raise AssertionError(
                f"run drained with requests {unended[:10]} not ended and instances {held} not empty"
            )

    def _result(self, wall_seconds: float, interrupted: bool) -> SimulationResult:
        end = self.env.now
        lifetimes = {
            instance_id: (runtime.started_at, end if runtime.stopped_at is None else runtime.stopped_at)
            for instance_id, runtime in self.instances.items()
        }
        live_keys = self.migrations.live_reservation_keys()
        return SimulationResult(
            config=self.config,
            requests=self.requests,
            load_samples=self.load_samples,
            instance_lifetimes=lifetimes,
            end_time=end,
            wall_seconds=wall_seconds,
            capacity_blocks=self.limits.capacity_blocks,
            workload_description=self.workload.description,
            interrupted=interrupted,
            not_arrived=len(self.workload) - len(self.requests),
            batches=self.steps.batches,
            migrations=self.migrations.records,
            batch_log=self.steps.batch_log,
            scaling_log=self.scaler.log if self.scaler is not None else [],
            fault_log=self.faults.log,
            leaked_blocks=sum(r.llumlet.leaked_blocks(live_keys) for r in self.instances.values()),
        )
