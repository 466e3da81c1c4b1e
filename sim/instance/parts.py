"""The llumlet's replaceable parts, by name: the batch former and the block ledger each
pool builds its instances from (``cluster.batch_former`` and ``cluster.ledger``, or a
pool's own in ``pools:``), as dispatch rules are chosen by ``scheduler.dispatch``.

A part is a class the llumlet builds with the arguments the shipped one takes, so a new one
is a subclass of it — ``BatchFormer`` for a prefill-only or decode-only former,
``BlockLedger`` for one that shares blocks — and one registration:

    @BATCH_FORMERS.register("prefill-only")
    class PrefillOnly(BatchFormer): ...

The shipped classes allow subclasses written in Python even when the engine is compiled
(``mypyc_attr(allow_interpreted_subclasses=True)``). A config naming an unknown part is a
``ConfigError`` that names the key and lists the known ones.
"""

from __future__ import annotations

from sim.config.registry import Registry
from sim.instance.batching import BatchFormer
from sim.instance.blocks import BlockLedger
from sim.instance.prefix_cache import PrefixCachingLedger

BATCH_FORMERS: Registry[type[BatchFormer]] = Registry("batch former", "cluster.batch_former", noun="part")
LEDGERS: Registry[type[BlockLedger]] = Registry("block ledger", "cluster.ledger", noun="part")

BATCH_FORMERS.register("vllm")(BatchFormer)  # vLLM 0.1.2's continuous batching, preemption by recompute
LEDGERS.register("paged")(BlockLedger)  # paged KV blocks, one table per resident request
LEDGERS.register("prefix-caching")(PrefixCachingLedger)  # vLLM's automatic prefix caching
