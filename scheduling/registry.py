"""The one registry of scheduling policies and placement strategies.

Adding a policy: write its module, add one line below, and add its hand-worked test; the
conformance battery picks it up from here.
"""

from __future__ import annotations

from typing import Any

from scheduling.afs import AFS
from scheduling.allox import AlloX
from scheduling.base import Placement, Policy
from scheduling.carbon_region import CarbonRegion
from scheduling.carbon_suspend import CarbonSuspend
from scheduling.carbon_wait import CarbonWait
from scheduling.comm_wait import CommWait
from scheduling.drf import DRF
from scheduling.edf import EDF
from scheduling.energy_aware import EnergyAware
from scheduling.fifo import FIFO
from scheduling.gandiva import Gandiva
from scheduling.gandiva_fair import GandivaFair
from scheduling.gavel import GavelFIFO, GavelLAS
from scheduling.gavel_lp import (
    GavelFIFOHet,
    GavelFTF,
    GavelHierarchical,
    GavelMakespan,
    GavelMaxThroughput,
    GavelMinCost,
    GavelMinCostSLO,
    GavelMMF,
)
from scheduling.gavel_mmf_packed import GavelMMFPacked
from scheduling.gavel_packing import GavelGandiva
from scheduling.kube_placement import KubeLeastAllocated, KubeMostAllocated
from scheduling.kubernetes import Kubernetes
from scheduling.las import LAS
from scheduling.optimus import Optimus
from scheduling.placement import (
    FGD,
    BestFit,
    CommAware,
    Consolidate,
    DotProduct,
    FirstFit,
    FreestFirst,
    GpuClustering,
    GpuPacking,
    RandomFit,
    RandomPlacement,
    Spread,
    TopologyAware,
    Yarn,
)
from scheduling.pollux import Pollux
from scheduling.power_cap import PowerCap
from scheduling.power_down import PowerDown
from scheduling.priority import StrictPriority
from scheduling.singularity import Singularity
from scheduling.sjf import SJF
from scheduling.slurm import Slurm
from scheduling.srtf import SRTF
from scheduling.synergy import Synergy, SynergyFair
from scheduling.themis import Themis
from scheduling.tiresias import Tiresias
from scheduling.yarn_capacity import YarnCapacity

POLICIES: dict[str, type[Policy]] = {
    cls.name: cls
    for cls in (
        FIFO,
        SJF,
        SRTF,
        LAS,
        Tiresias,
        StrictPriority,
        EDF,
        GavelFIFO,
        GavelLAS,
        GavelMMF,
        GavelFTF,
        GavelMaxThroughput,
        GavelMakespan,
        GavelMinCost,
        GavelMinCostSLO,
        GavelFIFOHet,
        GavelHierarchical,
        GavelGandiva,
        GavelMMFPacked,
        Gandiva,
        AlloX,
        GandivaFair,
        Themis,
        PowerDown,
        PowerCap,
        EnergyAware,
        CarbonWait,
        CarbonSuspend,
        CarbonRegion,
        CommWait,
        Slurm,
        YarnCapacity,
        Kubernetes,
        AFS,
        Optimus,
        Pollux,
        DRF,
        Singularity,
        Synergy,
        SynergyFair,
    )
}

PLACEMENTS: dict[str, type[Placement]] = {
    cls.name: cls
    for cls in (
        Consolidate,
        Spread,
        RandomPlacement,
        TopologyAware,
        FirstFit,
        Yarn,
        CommAware,
        FGD,
        BestFit,
        DotProduct,
        GpuPacking,
        GpuClustering,
        RandomFit,
        FreestFirst,
        KubeLeastAllocated,
        KubeMostAllocated,
    )
}


def make_policy(name: str, **params: Any) -> Policy:
    """Instantiate the policy registered as ``name`` with hyper-parameters ``params``.

    Raises ``KeyError`` for an unknown policy and ``ValueError`` naming the parameters it
    does not take (or needs), e.g. "fifo takes no parameter 'x'; it takes: backfill".
    """
    from scheduling.params import unknown_parameters

    try:
        cls = POLICIES[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r}; known: {', '.join(sorted(POLICIES))}") from None
    problem = unknown_parameters(cls, params)
    if problem:
        raise ValueError(problem)
    return cls(**params)


def make_placement(name: str) -> Placement:
    """Instantiate the placement strategy registered as ``name``."""
    try:
        return PLACEMENTS[name]()
    except KeyError:
        raise KeyError(
            f"unknown placement {name!r}; known: {', '.join(sorted(PLACEMENTS))}"
        ) from None
