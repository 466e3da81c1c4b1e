"""Predicted TTFT and TPOT of a new request on an instance, from the instance's last load
report and its pool's replica model only — the global scheduler still never sees a request
list (as the SLO-aware scheduling of Llumnix's rewrite predicts from a step-time model).

A report carries how many requests are queued and their total tokens, the running batch and
its blocks. The prediction, for a request of ``prompt_tokens``:

* TTFT = half the iteration under way (one decode step of the running batch, if any: an
  arrival lands uniformly within it, so half of it remains on average) + the
  prefill iterations of everything queued ahead (the queued requests, each of the queue's
  mean length, and the demand dispatched since the report as one more) and of the request
  itself, packed greedily into iterations of at most ``max_batched_tokens`` tokens and
  ``max_batch_size`` sequences, each timed by the replica model. FCFS: with tier-ordered
  local queues a critical request waits behind fewer, so this is an upper bound there.
* TPOT = one decode step of the batch it joins: the running requests, the queued ones and
  itself, over their KV tokens (the running blocks' tokens, the queued tokens, its prompt).
* ``waits_for_memory``: the queue and the request need more blocks than the instance has free
  above its watermark (or its head-of-line request is blocked already), so the prefill waits
  for running requests to finish — which the report cannot time: such an instance is never
  predicted feasible.

It ignores what arrives later (later prefills interleave with decodes and lengthen TPOT)
and the preemptions a full instance makes; its measured error is in docs/schedulers.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

from sim.instance.limits import BatchTimer, LlumletLimits, blocks_for
from sim.instance.load import LoadReport


@dataclass(frozen=True)
class InstanceModel:
    """What the global scheduler knows of an instance besides its reports: its pool's
    replica model and vLLM limits (static, like the step-time model a real scheduler fits)."""

    timer: BatchTimer
    limits: LlumletLimits


class Prediction(NamedTuple):
    ttft: float  # seconds from dispatch to the first token
    tpot: float  # seconds per output token after it
    waits_for_memory: bool  # the prefill must wait for blocks the report cannot time


def _decode_step(model: InstanceModel, batch: int, kv_tokens: int) -> float:
    """One decode step of ``batch`` requests holding ``kv_tokens`` in all (each its new token
    included), the mean context kept within a sequence's limit."""
    longest = model.limits.max_seq_len
    return model.timer.batch_time((), batch, min(kv_tokens, batch * longest))


def _prefill_seconds(model: InstanceModel, lengths: list[int], running: int) -> float:
    """The prefill iterations of ``lengths`` in order, packed greedily under the token budget
    and the batch-size cap (``running`` seats taken already)."""
    limits = model.limits
    seats = max(limits.max_batch_size - running, 1)
    seconds, group, tokens = 0.0, [], 0
    for length in lengths:
        if group and (tokens + length > limits.max_batched_tokens or len(group) == seats):
            seconds += model.timer.batch_time(tuple((n, n) for n in group), 0, 0)
            group, tokens = [], 0
        group.append(length)
        tokens += length
    return seconds + model.timer.batch_time(tuple((n, n) for n in group), 0, 0)


def predict(
    report: Optional[LoadReport], pending_blocks: int, prompt_tokens: int, model: InstanceModel
) -> Prediction:
    """The request's predicted TTFT and TPOT on this instance (``report`` None: it has not
    reported yet, and is taken as empty)."""
    limits = model.limits
    block_size = limits.block_size
    prompt = min(max(prompt_tokens, 1), limits.max_batched_tokens)
    if report is None:
        running = queued = used_blocks = queued_tokens = 0
        free_blocks, blocked, queued_blocks = limits.capacity_blocks, False, 0
    else:
        running, queued, used_blocks = report.num_running, report.num_waiting, report.used_blocks
        queued_tokens = int(report.waiting_tokens)
        free_blocks, blocked = report.free_blocks, report.head_blocked
        queued_blocks = report.waiting_demand_blocks
    if pending_blocks:
        queued += 1
        queued_tokens += pending_blocks * block_size
        queued_blocks += pending_blocks
    used_tokens = used_blocks * block_size
    # a Poisson arrival lands uniformly within the iteration under way: half of it remains
    under_way = _decode_step(model, running, used_tokens + running) / 2 if running else 0.0
    mean_queued = min(max(queued_tokens // queued, 1), limits.max_batched_tokens) if queued else 0
    ttft = under_way + _prefill_seconds(model, [mean_queued] * queued + [prompt], running)
    batch = min(running + queued + 1, limits.max_batch_size)
    tpot = _decode_step(model, batch, used_tokens + queued_tokens + prompt + batch)
    needed = queued_blocks + blocks_for(prompt, block_size)
    waits = blocked or needed > free_blocks - limits.watermark_blocks
    return Prediction(ttft, tpot, waits)


def batch_tpot(report: LoadReport, model: InstanceModel, joining: int = 0, joining_tokens: int = 0) -> float:
    """One decode step of the instance's running batch with ``joining`` more requests
    holding ``joining_tokens`` in all: the TPOT its running requests are predicted to see
    (what SLO-driven migration pairs on)."""
    batch = min(report.num_running + joining, model.limits.max_batch_size)
    if batch == 0:
        return 0.0
    return _decode_step(model, batch, report.used_blocks * model.limits.block_size + joining_tokens + batch)
