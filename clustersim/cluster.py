"""Cluster inventory as the engine sees it: accelerator types, nodes, racks and regions.

The engine works on :class:`Cluster`, whose per-node data are parallel numpy arrays. A cluster
is built from a plain JSON-compatible spec by :func:`clustersim.spec.cluster_from_spec`
(that same dict is what the REST API accepts), from a preset (:mod:`clustersim.presets`), or
from Gavel-style shorthand such as ``"v100:8,p100:8,k80:8"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class AcceleratorType:
    """One accelerator model from the catalog.

    Attributes
    ----------
    name
        Catalog key, e.g. ``"V100-SXM2-16GB"``.
    kind
        ``"gpu"``, ``"tpu"``, ``"npu"`` or ``"edge"``.
    fp16_tflops
        Peak dense FP16/BF16 tensor TFLOPS.
    memory_gb, memory_bw_tbs
        Device memory (GB) and its bandwidth (TB/s).
    busy_w, idle_w
        Power drawn while busy / idle (W).
    price_per_hour
        On-demand price in $ per device-hour.
    release_year
        Year of release.
    assumptions
        Human-readable notes on every value that is not from a cited source.
    """

    name: str
    kind: str
    fp16_tflops: float
    memory_gb: float
    memory_bw_tbs: float
    busy_w: float
    idle_w: float
    price_per_hour: float
    release_year: int
    aliases: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Region:
    """Where nodes draw power from.

    Attributes
    ----------
    name
        Region name.
    carbon_zone
        Electricity Maps zone id for the hourly carbon intensity (e.g. ``"US-CAL-CISO"``),
        ``""`` for none (carbon then uses ``carbon_g_per_kwh``).
    pue
        Power usage effectiveness (>= 1).
    price_per_kwh
        Electricity price in $/kWh.
    carbon_g_per_kwh
        Constant intensity used when there is no zone.
    """

    name: str
    carbon_zone: str = ""
    pue: float = 1.2
    price_per_kwh: float = 0.10
    carbon_g_per_kwh: float = 400.0


@dataclass(frozen=True, eq=False)
class Cluster:
    """A cluster as parallel per-node arrays.

    Attributes
    ----------
    name
        Display name.
    types : tuple of AcceleratorType
        The accelerator types present; a type index ``t`` refers to ``types[t]``.
    node_type : (n_nodes,) int64
        Accelerator type index of each node (a node holds one type).
    node_devices : (n_nodes,) int64
        Devices per node.
    node_rack : (n_nodes,) int64
        Rack index of each node.
    node_region : (n_nodes,) int64
        Region index of each node.
    node_intra_gbs : (n_nodes,) float64
        Intra-node interconnect bandwidth per device, GB/s (NVLink, PCIe, ICI).
    node_nic_gbps : (n_nodes,) float64
        Network bandwidth of the node, Gbit/s.
    node_overhead_w : (n_nodes,) float64
        Power of the node other than its accelerators (CPU, memory, fans), W.
    rack_oversub : (n_racks,) float64
        Oversubscription ratio of each rack's uplink (1.0 = non-blocking).
    regions : tuple of Region
        Region index ``r`` refers to ``regions[r]``.
    node_availability : (n_nodes,) float64
        Probability a node is online (1.0 for data-centre nodes; edge devices less).
    """

    name: str
    types: tuple[AcceleratorType, ...]
    node_type: npt.NDArray[np.int64]
    node_devices: npt.NDArray[np.int64]
    node_rack: npt.NDArray[np.int64]
    node_region: npt.NDArray[np.int64]
    node_intra_gbs: npt.NDArray[np.float64]
    node_nic_gbps: npt.NDArray[np.float64]
    node_overhead_w: npt.NDArray[np.float64]
    rack_oversub: npt.NDArray[np.float64]
    regions: tuple[Region, ...]
    node_availability: npt.NDArray[np.float64] = field(
        default_factory=lambda: np.zeros(0, dtype=np.float64)
    )

    @property
    def n_nodes(self) -> int:
        return len(self.node_type)

    @property
    def n_types(self) -> int:
        return len(self.types)

    @property
    def type_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.types)

    def devices_per_type(self) -> npt.NDArray[np.int64]:
        """(n_types,) total devices of each type."""
        return np.bincount(
            self.node_type, weights=self.node_devices, minlength=self.n_types
        ).astype(np.int64)

    @property
    def total_devices(self) -> int:
        return int(self.node_devices.sum())

    def type_index(self, name: str) -> int:
        """Index of the type called ``name`` (key or alias, any case); -1 if absent."""
        key = name.strip().lower()
        for i, t in enumerate(self.types):
            if t.name.lower() == key or key in (a.lower() for a in t.aliases):
                return i
        return -1
