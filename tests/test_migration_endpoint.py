"""The migration endpoint (``sim.instance.endpoint``): suspension at a step boundary,
resume, release, and accepting a migrated request."""

from __future__ import annotations

from sim.instance.request import Request, RequestState
from tests.instance_support import make_parts, run_prefill


def test_the_endpoint_suspends_at_a_boundary_resumes_releases_and_accepts():
    _, waiting, batches, endpoint, _ = make_parts()
    moving, staying = Request(0, 0.0, 32, 50), Request(1, 0.0, 32, 50)
    run_prefill(batches, waiting, moving, staying)
    answers: list[bool] = []
    endpoint.request_suspension(moving, answers.append)
    assert answers == [] and moving in batches.running  # waits for the iteration boundary
    batches.next_batch()
    assert answers == [True] and moving.state is RequestState.SUSPENDED and batches.ledger.held(moving) == 2
    endpoint.resume(moving)  # the migration aborted: batched again from the next step
    batches.next_batch()
    assert moving in batches.running
    endpoint.request_suspension(moving, answers.append)
    batches.next_batch()
    endpoint.release_suspended(moving)  # committed elsewhere: its blocks come back
    assert answers == [True, True] and batches.ledger.held(moving) == 0 and batches.holders() == [staying]
    arriving = Request(2, 0.0, 32, 50)
    endpoint.accept_migrated(arriving, rebuild=True)  # recompute: queued at the head
    assert arriving.instances == [0] and waiting.head() is arriving
    endpoint.request_suspension(arriving, answers.append)  # not running: refused at once
    assert answers[-1] is False
