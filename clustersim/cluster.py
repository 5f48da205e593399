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

PURCHASE_HOURS = 5112.5
"""Hours of on-demand rent that cost as much as buying the device, for the default rules.

The A100 SXM4 40 GB's release price in Epoch AI's hardware table ($15,000) over its Google
Cloud on-demand price ($2.934 per GPU-hour, us-central1): 5,112.5 h, about seven months. A type
with no purchase price is assumed to cost ``price_per_hour × PURCHASE_HOURS`` to buy (and the
catalog prices some types the other way round, see ``clustersim/data/NOTICE.md``).
"""

DEFAULT_AMORTISATION_YEARS = 4.0
"""Years over which an owned device's purchase price is spread when none is given.

Shorter than the 5-6-year service lives large cloud operators book for servers, because an
accelerator's economic life ends when a newer generation is cheaper per unit of work; see
``docs/metrics.md``.
"""

HOURS_PER_YEAR = 8760.0
"""Hours in an amortisation year (365 days)."""


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
        On-demand (cloud) price in $ per device-hour.
    release_year
        Year of release.
    aliases
        Other names of the type.
    assumptions
        Human-readable notes on every value that is not from a cited source.
    purchase_usd
        Capital cost of one device in $ (what an owner pays to buy it); ``None`` means
        ``price_per_hour × PURCHASE_HOURS`` (:attr:`capital_usd` applies the rule).
    amortisation_years
        Years over which an owner spreads ``purchase_usd`` (> 0).
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
    purchase_usd: float | None = None
    amortisation_years: float = DEFAULT_AMORTISATION_YEARS

    @property
    def capital_usd(self) -> float:
        """Purchase price of one device: ``purchase_usd``, else ``price_per_hour ×``
        :data:`PURCHASE_HOURS`."""
        if self.purchase_usd is not None:
            return float(self.purchase_usd)
        return float(self.price_per_hour) * PURCHASE_HOURS

    @property
    def capital_per_hour(self) -> float:
        """Amortised capital cost of one owned device, $ per hour of the planning horizon."""
        return self.capital_usd / (self.amortisation_years * HOURS_PER_YEAR)


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
    node_mtbf_h, node_repair_h, node_failure_shape : (n_nodes,) float64
        Failure model of each node (:mod:`clustersim.failures`, used only when a run turns
        failures on): mean time between failures (h), mean repair time (h) and Weibull shape
        of the time to failure (1 = exponential); ``nan`` (or empty arrays) for the
        documented defaults of :func:`clustersim.failures.node_parameters`.
    node_spot_price : (n_nodes,) float64
        Spot price of each node's devices, $ per device-hour (:mod:`clustersim.spot`);
        ``nan`` for an on-demand node, an empty array for a cluster without spot capacity.
    node_spot_reclaim_h, node_spot_return_h, node_spot_notice_s : (n_nodes,) float64
        Reclaims of each spot node (used only by runs with spot reclaims on): mean hours
        between reclaims, mean hours until the capacity returns, and the notice the provider
        gives before a reclaim (s); ``nan`` for on-demand nodes (empty arrays: none).
    node_cpu_cores, node_host_mem_gb : (n_nodes,) float64
        Host CPU cores and host memory (GB) of each node, which jobs' CPU and memory demands
        draw on (:mod:`clustersim.resources`); ``inf`` for a node whose spec gives none
        (unlimited: no job is ever held back by it), and an empty array for a cluster with
        no limit at all (the default, so clusters built without them behave as before).
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
    node_mtbf_h: npt.NDArray[np.float64] = field(
        default_factory=lambda: np.zeros(0, dtype=np.float64)
    )
    node_repair_h: npt.NDArray[np.float64] = field(
        default_factory=lambda: np.zeros(0, dtype=np.float64)
    )
    node_failure_shape: npt.NDArray[np.float64] = field(
        default_factory=lambda: np.zeros(0, dtype=np.float64)
    )
    node_spot_price: npt.NDArray[np.float64] = field(
        default_factory=lambda: np.zeros(0, dtype=np.float64)
    )
    node_spot_reclaim_h: npt.NDArray[np.float64] = field(
        default_factory=lambda: np.zeros(0, dtype=np.float64)
    )
    node_spot_return_h: npt.NDArray[np.float64] = field(
        default_factory=lambda: np.zeros(0, dtype=np.float64)
    )
    node_spot_notice_s: npt.NDArray[np.float64] = field(
        default_factory=lambda: np.zeros(0, dtype=np.float64)
    )
    node_cpu_cores: npt.NDArray[np.float64] = field(
        default_factory=lambda: np.zeros(0, dtype=np.float64)
    )
    node_host_mem_gb: npt.NDArray[np.float64] = field(
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
    def node_spot(self) -> npt.NDArray[np.bool_]:
        """(n_nodes,) whether each node is spot capacity (:mod:`clustersim.spot`)."""
        price = np.asarray(self.node_spot_price, dtype=np.float64)
        if len(price) != self.n_nodes:
            return np.zeros(self.n_nodes, dtype=bool)
        return ~np.isnan(price)

    @property
    def node_cpu(self) -> npt.NDArray[np.float64]:
        """(n_nodes,) host CPU cores of each node, ``inf`` where unlimited."""
        return _per_node(self.node_cpu_cores, self.n_nodes)

    @property
    def node_mem(self) -> npt.NDArray[np.float64]:
        """(n_nodes,) host memory of each node (GB), ``inf`` where unlimited."""
        return _per_node(self.node_host_mem_gb, self.n_nodes)

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


def _per_node(a: npt.NDArray[np.float64], n: int) -> npt.NDArray[np.float64]:
    """``a`` as a (n,) float64 array; an array of another length (empty) is all ``inf``."""
    a = np.asarray(a, dtype=np.float64)
    return a if len(a) == n else np.full(n, np.inf)
