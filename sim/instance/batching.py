"""The llumlet's batch former: vLLM-style continuous batching over paged KV blocks.

Semantics (vLLM 0.2, which Llumnix builds on; the artifact's fork, AlibabaPAI/llumnix branch
osdi24ae at 92f6f9d, ``vllm/core/scheduler.py`` ``Scheduler._schedule``, lines 197-263 and 265-291):
* an iteration is either a prefill batch (waiting requests admitted in queue order while the
  token budget, the batch-size cap and ``free - watermark`` blocks allow: lines 226-240, with
  ``BlockSpaceManager.can_allocate`` in ``vllm/core/block_manager.py``, lines 97-105) or a
  decode step of every running request; prefills go first whenever one can be admitted, and a
  step with any prompt runs prompts only (line 263 returns before the decode part): there are
  no mixed batches, so every prefill step stalls every running request's decode;
* blocks persist and grow: a request needs ``ceil((prompt + generated) / block_size)`` blocks
  before each iteration, so it takes one more block every ``block_size`` decode steps;
* when a running request cannot get its next block, the latest arrival among the running
  requests (of the least critical tier, when tiers are honoured) is preempted by recompute
  (lines 273-291: ``self.running.pop(-1)`` of the FCFS-sorted list):
  its blocks are freed and it goes back to the head of the queue, to be prefilled again over
  ``prompt + generated`` tokens.

With ``priority`` on (Llumnix's scheduling priority) the queue is ordered by tier, FCFS
within a tier; off, it is one FCFS queue whatever the tier.

Speed: a decode step does not touch every running request. Each request's progress is kept
lazily (``generated = base_generated + iterations since it joined``), and the two things that
can happen to it — needing a block, finishing — are put on a calendar keyed by the decode
iteration at which they happen. A step costs O(events due), not O(batch size).

The former owns which requests the instance batches: running, being prefilled, suspended by
a migration's last stage or held for a hand-off (they hold blocks and seats but are not
batched) and joining from the next step (committed inbound migrations, aborted outbound
ones); a migration changes these only at iteration boundaries, through
``sim.instance.endpoint``. It reports what happened to whom to its ``BatchEvents``
(``sim.instance.former_io``) and learns its pool's role from its ``Role``: it writes no
migration record and calls no policy.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Callable, Collection, Optional

from mypy_extensions import mypyc_attr

from sim.instance.batch import Batch
from sim.instance.blocks import BlockLedger
from sim.instance.former_io import MIXED, BatchEvents, Role
from sim.instance.limits import BatchTimer, LlumletLimits, blocks_for
from sim.instance.request import Request
from sim.instance.waiting import WaitingQueue

# vLLM's FCFS order of requests: arrival time, then id (a C-level key: max() and sort() over
# running requests call it once per request on every preemption)
arrival_order: Callable[[Request], tuple[float, int]] = attrgetter("order")


@mypyc_attr(allow_interpreted_subclasses=True)  # a pool's own part subclasses it (sim.instance.parts)
class BatchFormer:
    """Forms each iteration of one instance and applies its effects when it ends."""

    def __init__(
        self,
        instance_id: int,
        limits: LlumletLimits,
        timer: BatchTimer,
        clock: Callable[[], float],
        waiting: WaitingQueue,
        ledger: BlockLedger,
        events: BatchEvents,
        priority: bool = False,
        colocated_slowdown: float = 0.0,
        role: Role = MIXED,
    ) -> None:
        self.id = instance_id
        self.limits = limits
        self.timer = timer
        self._decode_step = Batch([], [])
        # a decode step's time: the replica model's own fast path when it has one
        self._decode_time = getattr(timer, "decode_batch_time", None) or (
            lambda num_decodes, kv_tokens: timer.batch_time((), num_decodes, kv_tokens)
        )
        # the engine's CPU work per output token its batched requests hold (vLLM 0.1.x turns
        # each whole output back into text every step); the replica model states it, and only
        # the former knows the outputs
        self._per_output_token: float = getattr(timer, "overhead_per_output_token", 0.0)
        self.clock = clock
        self.waiting = waiting
        self.ledger = ledger
        self.events = events
        self.priority = priority
        self.colocated_slowdown = colocated_slowdown
        # a sequence stops where its next block would hold tokens past max_seq_len
        self._max_blocks_per_sequence = limits.max_seq_len // limits.block_size
        self.running: dict[Request, None] = {}  # an ordered set (the latest arrival is preempted)
        self.running_per_tier = [0] * limits.tiers
        self.suspended: dict[Request, None] = {}  # in a migration's last stage: hold blocks, not batched
        self.joining: list[Request] = []  # batched from the next step (migrated in, or back)
        self.prefilling: list[Request] = []  # admitted by the prefill iteration running now
        self._suspensions: list[tuple[Request, Callable[[bool], None]]] = []
        self.iteration = 0  # completed decode iterations
        self.seq_sum = 0  # sum of seq_len over running requests
        self.prompt_sum = 0  # sum of prompt_tokens over running requests (outputs: the rest)
        self._block_due: dict[int, list[tuple[Request, int]]] = {}
        self._finish_due: dict[int, list[tuple[Request, int]]] = {}
        self.copying = 0  # migration stages copying to or from this instance right now
        self.batch_started = 0.0
        self.preemptions = 0
        self.drops = 0  # requests aborted as exceeding the instance (the artifact's ignored)
        # request-seconds running requests waited behind prefill iterations here (no mixed
        # batches: a prefill step stalls every decode; what disaggregation removes)
        self.decode_stall = 0.0
        self.role = role
        self.holds_prefilled = role.holds_prefilled

    # ------------------------------------------------------------------ iterations
    def next_batch(self) -> Optional[Batch]:
        """Form the next iteration at a step boundary, timed by the replica model (None:
        nothing to run)."""
        if self._suspensions:
            self._apply_suspensions()
        if self.joining:
            for request in self.joining:
                self._join_running(request)
                self.events.joined(request)
            self.joining.clear()
        running = self.running
        while True:
            if self.waiting.count:
                batch = self._prefill_batch()
                if batch is not None:
                    return batch
            if not running:
                return None
            # a decode step (written out here: it is most steps): blocks due now, then the batch
            step = self.iteration + 1
            block_due = self._block_due
            due = block_due.get(step)
            if due is not None:
                del block_due[step]
                if len(due) <= self.ledger.free:
                    self._grow(due, step)
                else:
                    self._grow_or_preempt(due, step)
                if not running:
                    continue  # every running request was preempted (or aborted): queued now
            batch = self._decode_step  # one object per former, refilled every decode step
            num_decodes = batch.num_decodes = len(running)
            kv_tokens = batch.kv_tokens = self.seq_sum
            seconds = self._decode_time(num_decodes, kv_tokens)
            if self._per_output_token:  # each request's output so far, and this step's token
                seconds += self._per_output_token * (kv_tokens - self.prompt_sum + num_decodes)
            batch.seconds = self._slowed_by_copying(seconds) if self.copying else seconds
            return batch

    def plans_its_steps(self) -> bool:
        """Whether ``decode_stretch`` plans what this former's steps do: not when a subclass
        forms or applies steps its own way (vLLM V1's former, a pool's own part)."""
        return type(self).next_batch is BatchFormer.next_batch and type(self).complete is BatchFormer.complete

    def quiet(self) -> bool:
        """Nothing but the running requests' decodes can change a step here: none queued,
        joining, suspended or being prefilled, no copy slowing steps, no shared cached blocks
        (what a prefix cache's growth publishes, dispatch reads)."""
        return not (
            self.waiting.count or self.joining or self._suspensions or self.suspended or self.prefilling
            or self.copying or self.ledger.shares_blocks
        )

    def decode_stretch(self, limit: int) -> list[float]:
        """The seconds of the decode steps that will follow the one just formed while nothing
        can happen at their boundaries but the decodes themselves — no request finishes, any
        block due is granted to every holder (no preemption, none at vLLM's length limit) —
        computed as ``next_batch`` will compute them, nothing applied; at most ``limit``.

        Why: a lone or quiet batch's steps are events only the instance itself sees; the step
        loop forms them later in one go (``sim.engine.instances``), from this same arithmetic.
        The caller has checked that nothing is queued, joining, suspended or copying, and that
        only a decode step was formed; what touches the instance before then cuts the stretch."""
        seconds: list[float] = []
        if limit <= 0:
            return seconds
        step = self.iteration + 1  # the step just formed (its blocks are granted)
        finish_due, block_due = self._finish_due, self._block_due
        last = min(finish_due) if finish_due else step + limit  # a request may finish at its end
        if last <= step:
            return seconds
        last = min(last, step + limit)
        num_decodes = len(self.running)
        kv_tokens = self.seq_sum
        free = self.ledger.free
        block_size = self.limits.block_size
        # the steps with a block due, in order: the calendar's, and those this plan grants
        calendar = sorted(due_step for due_step in block_due if step < due_step <= last)
        granted: dict[int, list[Request]] = {}  # steps -> requests whose next block this plan grants
        held: dict[Request, int] = {}  # blocks a request holds after this plan's grants
        next_calendar = calendar[0] if calendar else last + 1
        taken = 0  # of ``calendar``
        next_granted = last + 1  # granted steps only grow: the earliest is the oldest
        granted_steps: list[int] = []
        while step < last:
            step += 1
            kv_tokens += num_decodes
            if step == next_calendar or step == next_granted:
                due = block_due.get(step)
                regrown = granted.pop(step, None)
                growing: list[Request] = []
                for request, epoch in due or ():
                    if request.epoch != epoch:
                        return seconds  # an entry of a request gone since: the former's slow case
                    growing.append(request)
                if regrown is not None:
                    growing.extend(regrown)
                if len(growing) > free:
                    return seconds
                for request in growing:
                    blocks = held.get(request)
                    if blocks is None:
                        blocks = self.ledger.held(request)
                    if blocks >= self._max_blocks_per_sequence:
                        return seconds
                    held[request] = blocks + 1
                free -= len(growing)
                if step + block_size <= last:
                    granted[step + block_size] = growing
                    granted_steps.append(step + block_size)
                if step == next_calendar:
                    taken += 1
                    next_calendar = calendar[taken] if taken < len(calendar) else last + 1
                if regrown is not None:
                    granted_steps.pop(0)
                next_granted = granted_steps[0] if granted_steps else last + 1
            time = self._decode_time(num_decodes, kv_tokens)
            if self._per_output_token:
                time += self._per_output_token * (kv_tokens - self.prompt_sum + num_decodes)
            seconds.append(time)
        return seconds

    def _grow(self, due: list[tuple[Request, int]], step: int) -> None:
        """Blocks due at ``step`` with one free for each: nobody can be preempted, order does
        not matter: the ledger grows the entries still current and keeps them, as the next
        bucket; a request at vLLM's max_model_len is aborted after the others grew (only
        which free block ids they got can differ)."""
        at_limit = self.ledger.grow_current(due, self._max_blocks_per_sequence)
        if at_limit is not None:
            for request in at_limit:
                self.abort(request, "exceeds_instance_limits")
        if due:
            block_due = self._block_due
            bucket = block_due.get(step + self.limits.block_size)
            if bucket is None:
                block_due[step + self.limits.block_size] = due
            else:
                bucket.extend(due)

    def decoded(self, steps: int, seconds: float) -> Batch:
        """``steps`` decode steps of a stretch ended and as many formed (``decode_stretch``
        planned them: no request finishes, every block due is granted): what ``complete``
        and ``next_batch`` would do to this state for each, without timing any — the last
        one formed is the one running, ``seconds`` long."""
        num_decodes = len(self.running)
        block_due = self._block_due
        for _ in range(steps):
            self.iteration += 1
            self.seq_sum += num_decodes
            step = self.iteration + 1
            due = block_due.get(step)
            if due is not None:
                del block_due[step]
                self._grow(due, step)
        batch = self._decode_step
        batch.num_decodes = num_decodes
        batch.kv_tokens = self.seq_sum
        batch.seconds = seconds
        return batch

    def _slowed_by_copying(self, seconds: float) -> float:
        """An iteration's time while a migration stage copies to or from this instance."""
        return seconds * (1.0 + self.colocated_slowdown)

    def copy_started(self) -> None:
        """A migration stage copies to or from this instance: its iterations run slower."""
        self.copying += 1

    def copy_ended(self) -> None:
        self.copying -= 1

    def complete(self, batch: Batch) -> None:
        """Apply the effects of a finished iteration: tokens generated, requests finished."""
        if batch.is_prefill:
            now = self.clock()
            seconds = now - self.batch_started
            self.prefilling = []
            for request in batch.requests:
                request.prefilled(now)
                if request.generated >= request.output_tokens:
                    self._finish(request, now, joined=False)
                elif self.holds_prefilled:  # until its hand-off
                    self.suspended[request] = None
                    request.suspended()
                else:
                    self._join_running(request)
                self.events.prefilled(request, seconds)
            return
        self.iteration += 1
        self.seq_sum += batch.num_decodes
        # dict.get and del are C calls in the compiled engine, dict.pop a method lookup
        due = self._finish_due.get(self.iteration)
        if due is not None:
            del self._finish_due[self.iteration]
            now = self.clock()
            for request, epoch in due:
                if request.epoch == epoch:
                    self._finish(request, now, joined=True)

    def _prefill_batch(self) -> Optional[Batch]:
        limits = self.limits
        admitted: list[Request] = []
        tokens: list[int] = []  # each admitted request's tokens (its KV after the prefill)
        computed: list[int] = []  # of which not found cached (what the prefill computes)
        outputs = 0  # output tokens the admitted requests hold once their first is out
        budget = limits.max_batched_tokens
        seats = limits.max_batch_size - len(self.running) - len(self.suspended)
        while self.waiting:
            request = self.waiting.head()
            q = request.seq_len
            need = blocks_for(q, limits.block_size)
            if not limits.can_prefill(q):
                self.waiting.pop_head()
                self.abort(request, "exceeds_instance_limits")
                continue
            # vLLM's budget counts the tokens a prefill computes, not those found cached
            new = q - self.ledger.cached_tokens(request) if self.ledger.shares_blocks else q
            if seats <= 0 or new > budget or self.ledger.free - need < limits.watermark_blocks:
                break
            self.waiting.pop_head()
            cached = self.ledger.allocate(request, need)
            if cached:
                request.found_cached(cached)
            request.admitted(self.clock())
            admitted.append(request)
            tokens.append(q)
            computed.append(q - cached)
            outputs += q - request.prompt_tokens + 1
            budget -= q - cached
            seats -= 1
        if not admitted:
            return None
        self.prefilling = admitted
        self.batch_started = self.clock()  # the prefill's seconds are reported when it ends
        batch = Batch(admitted, tokens)
        # a cached prefix is not computed again, but the new tokens attend to all of it
        prefills = [(new, q) for new, q in zip(computed, tokens)]
        seconds = self.timer.batch_time(prefills, 0, 0) + self._per_output_token * outputs
        batch.seconds = self._slowed_by_copying(seconds) if self.copying else seconds
        if self.running:
            self.decode_stall += batch.seconds * len(self.running)
        return batch

    def _grow_or_preempt(self, due: list[tuple[Request, int]], step: int) -> None:
        """Too few free blocks for everyone due: vLLM walks its running requests in arrival
        order (most critical tier first, if tiered), giving each its next block or
        preempting from the back."""
        if self.priority:
            due.sort(key=lambda item: (item[0].tier, *item[0].order))
        else:
            due.sort(key=lambda item: item[0].order)
        for request, epoch in due:
            if request.epoch != epoch:
                continue  # left the batch (finished, preempted, suspended) meanwhile
            if self.ledger.held(request) >= self._max_blocks_per_sequence:
                self.abort(request, "exceeds_instance_limits")  # vLLM: max_model_len
                continue
            while self.ledger.free < 1:
                victim = self._preemption_victim()
                self._preempt(victim)
                if victim is request:
                    break
            else:
                self.ledger.allocate(request, 1)
                self._calendar(self._block_due, step + self.limits.block_size, request)

    # ------------------------------------------------------------------ running set
    def progress(self, request: Request) -> int:
        """Output tokens a running request has produced so far (lazy decode accounting)."""
        return request.base_generated + (self.iteration - request.base_iteration)

    def _join_running(self, request: Request) -> None:
        request.joined(self.iteration)
        self.running[request] = None
        self.running_per_tier[request.tier] += 1
        self.seq_sum += request.seq_len
        self.prompt_sum += request.prompt_tokens
        first_block_step = (
            self.iteration + self.limits.block_size * self.ledger.held(request) - request.seq_len + 2
        )
        self._calendar(self._block_due, max(first_block_step, self.iteration + 1), request)
        self._calendar(
            self._finish_due, self.iteration + request.output_tokens - request.generated, request
        )

    def _leave_running(self, request: Request) -> None:
        request.left(self.progress(request))  # a new epoch: its calendar entries are void
        del self.running[request]
        self.running_per_tier[request.tier] -= 1
        self.seq_sum -= request.seq_len
        self.prompt_sum -= request.prompt_tokens

    def _calendar(self, calendar: dict[int, list[tuple[Request, int]]], step: int, request: Request) -> None:
        entry = (request, request.epoch)
        bucket = calendar.get(step)
        if bucket is None:
            calendar[step] = [entry]
        else:
            bucket.append(entry)

    def _preemption_victim(self) -> Request:
        """vLLM's choice: the latest arrival among the running requests (it keeps them in
        arrival order and preempts from the back), of the least critical tier if tiered."""
        candidates: Collection[Request] = self.running
        if self.priority:
            lowest = max(t for t, count in enumerate(self.running_per_tier) if count)
            candidates = [r for r in self.running if r.tier == lowest]
        return max(candidates, key=arrival_order)

    def _preempt(self, request: Request) -> None:
        """Preemption by recompute: free the blocks, requeue at the head."""
        self._leave_running(request)
        self.ledger.release(request)
        request.preempted(self.clock())
        self.preemptions += 1
        self.waiting.push(request, front=True)

    def _finish(self, request: Request, now: float, joined: bool) -> None:
        if joined:
            self._leave_running(request)
        self.ledger.release(request)
        request.finish(now)
        self.events.ended(request)

    def abort(self, request: Request, reason: str) -> None:
        """End a queued or running request that can never be served here."""
        if request in self.running:
            self._leave_running(request)
        self.ledger.release(request)
        request.abort(reason, self.clock())
        self.drops += 1
        self.events.ended(request)

    # ------------------------------------------------------------------ migration boundary
    def suspend_at_boundary(self, request: Request, answer: Callable[[bool], None]) -> None:
        """Take a running request out of the batch at the next iteration boundary (the next
        ``next_batch``: while any request runs, the step loop always has an iteration in
        flight); ``answer`` gets False if it is no longer running by then. A request held out
        of the batch for its hand-off is out already."""
        if request in self.suspended:
            answer(True)
            return
        if request not in self.running:
            answer(False)
            return
        self._suspensions.append((request, answer))

    def _apply_suspensions(self) -> None:
        pending, self._suspensions = self._suspensions, []
        for request, answer in pending:
            if request in self.running:
                self._leave_running(request)
                self.suspended[request] = None
                request.suspended()
                answer(True)
            else:
                answer(False)

    def resume(self, request: Request) -> None:
        """A suspended request (its migration aborted) is batched again from the next step."""
        del self.suspended[request]
        self.joining.append(request)

    def release_suspended(self, request: Request) -> None:
        """A suspended request left for good (its migration committed): free its blocks."""
        del self.suspended[request]
        self.ledger.release(request)

    def join(self, request: Request) -> None:
        """A request arriving with its blocks (a committed migration) is batched from the
        next step."""
        self.joining.append(request)

    # ------------------------------------------------------------------ whole instance
    def holders(self) -> list[Request]:
        """Every request that may hold blocks here."""
        return [*self.prefilling, *self.running, *self.suspended, *self.joining]

    @property
    def holds_nothing(self) -> bool:
        return not (self.running or self.suspended or self.joining or self.prefilling)

    def clear(self) -> None:
        """The instance died: nothing is batched any more, and pending suspensions fail
        (their requests are the caller's, with their blocks gone)."""
        pending, self._suspensions = self._suspensions, []
        for _, answer in pending:
            answer(False)
        self.running.clear()
        self.suspended.clear()
        self.joining.clear()
        self.prefilling = []
        self.running_per_tier = [0] * self.limits.tiers
        self.seq_sum = self.prompt_sum = 0
        self._block_due.clear()
        self._finish_due.clear()

    def check(self) -> None:
        """Raise if the lazy accounting drifted: every running request holds the blocks its
        tokens need, and the running totals match the running set (used by tests)."""
        seq_sum = prompt_sum = 0
        for request in self.running:
            seq = request.prompt_tokens + self.progress(request)
            seq_sum += seq
            prompt_sum += request.prompt_tokens
            held = self.ledger.held(request)
            assert held * self.limits.block_size >= seq - 1, (
                f"request {request.id} holds {held} blocks for {seq - 1} resident tokens"
            )
        assert seq_sum == self.seq_sum, f"seq_sum drifted: {self.seq_sum} != {seq_sum}"
        assert prompt_sum == self.prompt_sum, f"prompt_sum drifted: {self.prompt_sum} != {prompt_sum}"
        assert sum(self.running_per_tier) == len(self.running)
