"""Switch off nodes idle longer than a threshold; wake them when the queue needs them."""

from __future__ import annotations

from typing import Annotated

from clustersim.power import PowerConfig
from scheduling.params import NON_NEGATIVE
from scheduling.wrapped import PowerWrapper


class PowerDown(PowerWrapper):
    """Run ``base`` (any policy of the registry but the co-locating ones), switch off every
    node that has held no job for ``idle_off_s`` seconds, and wake off nodes when jobs the
    base wants to run cannot start on the devices that are on.

    The scheme of Slurm's power saving (nodes idle for ``SuspendTime`` are powered down and
    resumed on demand, paying ``ResumeTimeout``), motivated by Meisner, Gold and Wenisch,
    "PowerNap: Eliminating Server Idle Power", ASPLOS'09 (idle servers draw a large share of
    their peak power). Consolidation: off nodes hold their devices out of the free counts,
    so jobs are packed on the nodes that are on (with the default ``consolidate``
    placement, on the fullest node that fits), and a wake-up takes the fewest nodes that
    hold the gang. Departures: running jobs are never migrated to empty a node; a node
    switches off at once and draws its idle power while waking (wake-up latency per
    accelerator kind, :data:`clustersim.power.KIND_PROFILES`); the base's decisions are
    otherwise unchanged.

    Parameters
    ----------
    base
        Name of the policy that decides which jobs run (built with its defaults).
    idle_off_s
        Seconds a node must stay idle before it is switched off (0: as soon as it is idle).
    """

    name = "power-down"
    citation = "Slurm power saving (SuspendTime/ResumeTimeout); Meisner et al., PowerNap, ASPLOS'09"

    def __init__(
        self, base: str = "fifo", idle_off_s: Annotated[float, NON_NEGATIVE] = 600.0
    ) -> None:
        super().__init__(base)
        self.idle_off_s = float(idle_off_s)
        self.power = PowerConfig(idle_off_s=self.idle_off_s)
