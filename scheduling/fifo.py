"""First in, first out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from scheduling.base import CompatSpec, Decision, Policy, State


class FIFO(Policy):
    """Start queued jobs in arrival order; never preempt.

    Strict FIFO by default: when the job at the head of the queue does not fit, nothing behind
    it starts (head-of-line blocking), as in YARN's FIFO scheduler and the FIFO baseline of
    Tiresias (Gu et al., NSDI'19). ``backfill=True`` lets later jobs that fit start instead.

    Parameters
    ----------
    backfill
        Let jobs behind a blocked head start when they fit.
    """

    name = "fifo"
    citation = "FIFO baseline as in Gu et al., Tiresias, NSDI'19 (§6)"
    preemptive = False
    # the Tiresias simulator's ``fifo`` schedule: strict FIFO, placed by its ``yarn`` scheme
    # (the default) or by counting devices (``count``)
    compat: ClassVar[Mapping[str, CompatSpec]] = {
        "tiresias": CompatSpec(placements=("yarn", "first-fit"))
    }

    def __init__(self, backfill: bool = False) -> None:
        self.backfill = backfill
        self.blocking = not backfill

    def schedule(self, state: State) -> Decision:
        if self.blocking:
            # each start takes at least one device, so the head of the queue is enough
            return Decision(run=state.queued(limit=sum(state.free.tolist()) + 1))
        return Decision(run=state.queued())
