"""How one migration moves its request's KV, decided by whoever starts it and carried whole
to the process that does it (``sim.instance.migration.migrate``) and its copies
(``sim.instance.kv_transfer.KvTransfer``): the mode and stage limits, which blocks to skip,
the links each copy holds, and a layer-wise copy's head start."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import simpy


class MigrationMode(StrEnum):
    LIVE = "live"
    BLOCKING = "blocking"
    RECOMPUTE = "recompute"


@dataclass(frozen=True)
class TransferPlan:
    mode: MigrationMode = MigrationMode.LIVE
    last_stage_blocks: int = 16
    max_stages: int = 3
    # after an abort a suspended request rejoins the source's batch; a hand-off's request
    # refused by a full destination stays held there instead, for the next try (Llumnix's
    # PD: add_running_request); any other abort (a failed copy or destination) lets it decode
    # on, so that a link that keeps failing cannot hold it forever
    resume_on_abort: bool = True
    skip_cached: bool = True  # copy only the blocks the destination's prefix cache lacks
    # what each copy holds while it runs (a hand-off: both instances' links, taken in id
    # order; none: copies never wait)
    links: tuple[simpy.Resource, ...] = ()
    # a layer-wise hand-off: seconds of the first copy already done while the source
    # computed, and the share of it that cannot overlap (the last layer's)
    head_start: float = 0.0
    last_share: float = 0.0
