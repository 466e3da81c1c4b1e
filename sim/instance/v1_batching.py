"""The batch former of vLLM's V1 engine: one token budget per step, running requests first,
prompts chunked to what is left of the budget, prefill chunks and decodes in one batch.

Semantics, as the pinned wheel vLLM 0.10.1.1 runs them (``vllm/v1/core/sched/scheduler.py``,
``Scheduler.schedule``, lines 164-593; ``vllm/v1/core/kv_cache_manager.py``):
* every step starts with a budget of ``max_num_batched_tokens`` tokens (line 191);
* the running requests go first, in the order they were admitted: a decoding request takes
  one token, a request part-way through its prompt the rest of it, cut to the budget left
  (lines 201-219); blocks are allocated for the scheduled tokens only (kv_cache_manager.py
  227-241), so a prompt takes its blocks chunk by chunk and a decode one block every
  ``block_size`` tokens;
* when a running request cannot get its blocks, the tail of the running list — the last
  admitted — is preempted by recompute (its blocks freed, its progress reset, back at the
  front of the queue), and the request tries again; if it was the tail itself, no further
  running request is scheduled this step (lines 246-281);
* waiting requests are admitted only if nobody was preempted this step (line 331), first come
  first served, while fewer than ``max_num_seqs`` run (333); each needs its tokens not found
  in the prefix cache (411), cut to the budget left (425, chunked prefill is always on for
  generative models: ``vllm/engine/arg_utils.py`` 1588-1592); if its chunk's blocks do not
  fit, admission stops for the step, and nothing is preempted for it (457-459). V1 keeps no
  watermark of free blocks;
* a request's first token comes from the step that completes its prompt (a partial step's
  sampled token is discarded: ``vllm/v1/worker/gpu_model_runner.py`` 1700-1742).

Running requests all decode in every step (``max_num_seqs`` ≤ ``max_num_batched_tokens``,
which the config checks), so the lazy decode calendar of the 0.1.2 former carries over:
every step is one decode iteration of the running set, and at most one request is part-way
through its prompt — the one admitted last, whose chunk used up the budget — at the tail of
the running list. The host-side detokenizer runs in the frontend process, off the critical
path (``vllm/v1/engine/output_processor.py`` 406-411): no per-output-token cost here.
"""

from __future__ import annotations

from typing import Any, Optional

from sim.instance.batch import Batch
from sim.instance.batching import BatchFormer
from sim.instance.limits import blocks_for
from sim.instance.request import Request


class V1BatchFormer(BatchFormer):
    """vLLM V1's scheduler over the llumlet's queue and ledger (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """The 0.1.2 former's arguments (``BatchFormer``)."""
        super().__init__(*args, **kwargs)
        # V1's running list, in admission order: the decoding requests and, at its tail, the
        # one part-way through its prompt (the preemption order)
        self.admission: dict[Request, None] = {}
        self.partial: Optional[Request] = None  # part-way through its prompt
        self.partial_computed = 0  # of its tokens, those computed or found cached
        # this step's prompt pieces: (request, tokens computed, tokens it holds after), in order
        self._pieces: list[tuple[Request, int, int]] = []

    # ------------------------------------------------------------------ a step
    def next_batch(self) -> Optional[Batch]:
        """Schedule the next step: running requests, then waiting ones, within the budget."""
        if self._suspensions:
            self._apply_suspensions()
        if self.joining:
            for request in self.joining:
                self._join_running(request)
                self.events.joined(request)
            self.joining.clear()
        while True:
            pieces = self._pieces = []
            self.prefilling = []  # admitted by this step (they hold blocks while it runs)
            preempted = self._grow_decodes()
            budget = self.limits.max_batched_tokens - len(self.running)  # a token per decode
            if self.partial is not None:
                budget, preempted_here = self._continue_prompt(budget)
                preempted = preempted or preempted_here
            if not preempted:  # the prompt part-way through, if any, took what it needed or all
                self._admit(budget)
            if pieces or self.running:
                break
            if not (preempted and self.waiting):
                return None
            # everything running was preempted: the engine schedules an empty step, and its next
            # schedule admits again (``EngineCore`` steps while it has requests, core.py 712-750)
        num_decodes, kv_tokens = len(self.running), self.seq_sum
        if pieces:
            batch = Batch([p[0] for p in pieces], [p[1] for p in pieces], num_decodes, kv_tokens)
            seconds = self.timer.batch_time([(computed, held) for _, computed, held in pieces], num_decodes, kv_tokens)
            self.batch_started = self.clock()
        else:
            batch = self._decode_step
            batch.num_decodes, batch.kv_tokens = num_decodes, kv_tokens
            seconds = self._decode_time(num_decodes, kv_tokens)
        batch.seconds = self._slowed_by_copying(seconds) if self.copying else seconds
        return batch

    def _grow_decodes(self) -> bool:
        """Each running request due for a block gets one, in admission order; when the free
        blocks run out, the running tail is preempted until it fits (or it was the tail).
        Returns whether anyone was preempted."""
        step = self.iteration + 1
        due = self._block_due.pop(step, None)
        if due is None:
            return False
        if len(due) <= self.ledger.free:  # nobody can be preempted: one call grows them all
            at_limit = self.ledger.grow_current(due, self._max_blocks_per_sequence)
            for request in at_limit or ():
                self.abort(request, "exceeds_instance_limits")  # vLLM: max_model_len
            if due:
                self._block_due.setdefault(step + self.limits.block_size, []).extend(due)
            return False
        position = {request: i for i, request in enumerate(self.admission)}
        due.sort(key=lambda item: position.get(item[0], -1))
        preempted = False
        for request, epoch in due:
            if request.epoch != epoch:
                continue  # left the batch (finished, preempted, suspended) meanwhile
            if self.ledger.held(request) >= self._max_blocks_per_sequence:
                self.abort(request, "exceeds_instance_limits")  # vLLM: max_model_len
                continue
            while self.ledger.free < 1:
                victim = next(reversed(self.admission))
                self._preempt_tail(victim)
                preempted = True
                if victim is request:
                    break
            else:
                self.ledger.allocate(request, 1)
                self._calendar(self._block_due, step + self.limits.block_size, request)
        return preempted

    def _continue_prompt(self, budget: int) -> tuple[int, bool]:
        """The request part-way through its prompt takes the rest of it, cut to the budget;
        without blocks for its chunk the running tail is preempted until they fit, or until it
        was the tail itself. Returns the budget left and whether anyone was preempted."""
        request = self.partial
        assert request is not None
        preempted = False
        while True:
            chunk = min(request.seq_len - self.partial_computed, budget)
            need = blocks_for(self.partial_computed + chunk, self.limits.block_size) - self.ledger.held(request)
            if need <= self.ledger.free:
                break
            victim = next(reversed(self.admission))
            self._preempt_tail(victim)
            preempted = True
            if victim is request:
                return budget, True
            budget += 1  # a running request preempted: its decode token is free again
        if chunk <= 0:
            return budget, preempted
        if need > 0:
            self.ledger.allocate(request, need)
        self.partial_computed += chunk
        self._pieces.append((request, chunk, self.partial_computed))
        return budget - chunk, preempted

    def _admit(self, budget: int) -> None:
        """Waiting requests, first come first served, while the budget and the seats last;
        the first whose chunk's blocks do not fit stops admission (no watermark in V1)."""
        limits = self.limits
        now = self.clock()
        seats = limits.max_batch_size - len(self.admission) - len(self.suspended)
        while self.waiting and budget > 0 and seats > 0:
            request = self.waiting.head()
            tokens = request.seq_len
            if tokens > limits.max_seq_len or blocks_for(tokens, limits.block_size) > limits.capacity_blocks:
                self.waiting.pop_head()
                self.abort(request, "exceeds_instance_limits")
                continue
            cached = self.ledger.cached_tokens(request) if self.ledger.shares_blocks else 0
            chunk = min(tokens - cached, budget)
            need = blocks_for(cached + chunk, limits.block_size)
            if need > self.ledger.free:
                break
            self.waiting.pop_head()
            found = self.ledger.allocate(request, need)
            if found:
                request.found_cached(found)
            request.admitted(now)
            self.admission[request] = None
            self.prefilling.append(request)
            chunk = min(tokens - found, budget)
            self._pieces.append((request, chunk, found + chunk))
            if found + chunk < tokens:  # the budget is spent: no other prompt is part-way now
                assert self.partial is None or self.partial.seq_len == self._pieces[0][2]
                self.partial, self.partial_computed = request, found + chunk
            budget -= chunk
            seats -= 1

    def _preempt_tail(self, request: Request) -> None:
        """Preemption by recompute of the running tail: its blocks freed, back at the head of
        the queue to compute all its tokens again."""
        if request is self.partial:
            del self.admission[request]
            self.partial = None
            self.partial_computed = 0
        else:
            self._leave_running(request)
        self.ledger.release(request)
        request.preempted(self.clock())
        self.preemptions += 1
        self.waiting.push(request, front=True)

    # ------------------------------------------------------------------ its effects
    def complete(self, batch: Batch) -> None:
        """Every running request decoded a token; a prompt completed this step gives its first
        token, and its request decodes from the next step (or is held for its hand-off)."""
        now = self.clock()
        if batch.num_decodes:
            self.iteration += 1
            self.seq_sum += batch.num_decodes
            due = self._finish_due.get(self.iteration)
            if due is not None:
                del self._finish_due[self.iteration]
                for request, epoch in due:
                    if request.epoch == epoch:
                        self._finish(request, now, joined=True)
        if not batch.is_prefill:
            return
        pieces, self._pieces = self._pieces, []
        self.prefilling = []
        for request, _, held in pieces:
            if held < request.seq_len:
                continue  # part-way through its prompt: no token yet
            if request is self.partial:
                self.partial, self.partial_computed = None, 0
            request.prefilled(now)
            seconds = now - self.batch_started
            if request.generated >= request.output_tokens:
                del self.admission[request]
                self._finish(request, now, joined=False)
            elif self.holds_prefilled:  # until its hand-off
                del self.admission[request]
                self.suspended[request] = None
                request.suspended()
            else:
                self._join_running(request)
            self.events.prefilled(request, seconds)

    # ------------------------------------------------------------------ the running list
    def _join_running(self, request: Request) -> None:
        super()._join_running(request)
        self.admission[request] = None  # already there when admitted here; last when it arrives

    def _leave_running(self, request: Request) -> None:
        super()._leave_running(request)
        del self.admission[request]

    def holders(self) -> list[Request]:
        """The 0.1.2 former's, the prompt part-way through, and every request this step
        computes prompt tokens of: one whose last chunk runs now is in neither the running nor
        the prefilling list (another request took the part-way slot), yet holds its blocks."""
        held = super().holders()
        seen = set(held)
        for request in (*(piece[0] for piece in self._pieces), self.partial):
            if request is not None and request not in seen:
                held.append(request)
                seen.add(request)
        return held

    @property
    def holds_nothing(self) -> bool:
        return super().holds_nothing and self.partial is None

    def clear(self) -> None:
        super().clear()
        self.admission.clear()
        self.partial, self.partial_computed = None, 0
        self._pieces = []

    def check(self) -> None:
        """The 0.1.2 former's checks, and the running list: every running request once, and
        the one part-way through its prompt holding the blocks of what it computed."""
        super().check()
        listed = [r for r in self.admission if r is not self.partial]
        assert set(listed) == set(self.running), "the running list and the running set differ"
        if self.partial is not None:
            assert self.partial in self.admission, "the partial prompt is not in the running list"
            held = self.ledger.held(self.partial)
            assert held * self.limits.block_size >= self.partial_computed, (
                f"request {self.partial.id} holds {held} blocks for {self.partial_computed} computed tokens"
            )
