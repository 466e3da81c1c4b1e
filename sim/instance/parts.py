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
from sim.instance.v1_batching import V1BatchFormer

BATCH_FORMERS: Registry[type[BatchFormer]] = Registry("batch former", "cluster.batch_former", noun="part")
LEDGERS: Registry[type[BlockLedger]] = Registry("block ledger", "cluster.ledger", noun="part")
# a serving engine, by name: the batch former it forms its steps with (its host work is the
# replica model's, ``sim.hardware.replica_model.load_replica_model(engine=...)``)
ENGINES: Registry[str] = Registry("serving engine", "cluster.engine", noun="part")

BATCH_FORMERS.register("vllm")(BatchFormer)  # vLLM 0.1.2's continuous batching, preemption by recompute
BATCH_FORMERS.register("vllm-v1")(V1BatchFormer)  # vLLM V1's token budget, chunked prefills in mixed batches
ENGINES.register("vllm-0.1.2")("vllm")  # the Llumnix artifact's engine (osdi24ae)
ENGINES.register("vllm-v1")("vllm-v1")  # vLLM V1, as vLLM 0.10.1.1 runs it
LEDGERS.register("paged")(BlockLedger)  # paged KV blocks, one table per resident request
LEDGERS.register("prefix-caching")(PrefixCachingLedger)  # vLLM's automatic prefix caching
