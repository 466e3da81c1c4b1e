"""A llumlet's invariants: every block accounted for, the lazy token accounting exact.

Tests (and ``Simulation(check_every_step=True)``) call ``check``; the run's result reports
``leaked_blocks``.
"""

from __future__ import annotations

from typing import Collection

from mypy_extensions import trait

from sim.instance.request import Request
from sim.instance.state import LlumletState


@trait
class InvariantsMixin(LlumletState):
    """Mixed into ``Llumlet``; reads its request sets and block ledger."""

    def holders(self) -> list[Request]:
        """Every request that may hold blocks here."""
        return [*self.prefilling, *self.running, *self.suspended, *self.joining]

    def leaked_blocks(self, live_reservations: Collection) -> int:
        """Blocks allocated to no resident request, plus blocks reserved under a key that
        is not in ``live_reservations`` (the keys of migrations still in flight)."""
        held = sum(r.blocks for r in self.holders())
        orphaned = sum(
            blocks for key, blocks in self.ledger.reservations.items() if key not in live_reservations
        )
        return self.ledger.allocated - held + orphaned

    def check(self) -> None:
        """Raise if blocks leaked or the lazy accounting drifted (used by tests)."""
        self.ledger.check(self.holders())
        seq_sum = 0
        for request in self.running:
            generated = self.progress(request)
            seq = request.prompt_tokens + generated
            seq_sum += seq
            assert request.blocks * self.limits.block_size >= seq - 1, (
                f"request {request.id} holds {request.blocks} blocks for {seq - 1} resident tokens"
            )
        assert seq_sum == self.seq_sum, f"seq_sum drifted: {self.seq_sum} != {seq_sum}"
        assert sum(self.running_per_tier) == len(self.running)
        assert len(self.waiting) == sum(1 for _ in self.waiting)
