"""Ready-made clusters built from real, published clusters.

Each preset is a function returning a spec dict (see :mod:`clustersim.spec`), registered in
:data:`PRESETS` with a description (what it is, its size, every assumption) and its source.
The node lists of the Alibaba presets ship in ``clustersim/data/`` as counts per node shape,
derived from ``shared/data/traces/`` (see ``clustersim/data/NOTICE.md``); nothing is read from
the shared folder at run time.

GPU model names in the traces resolve through the catalog's aliases. Names the catalog leaves
unmapped on purpose (Alibaba's undisclosed ``G2``, ``G3``, ``MISC``, ``GPU-series-*``) are
skipped, and every description says which and how many; pass a catalog extended with
:meth:`~clustersim.catalog.Catalog.with_aliases` to include them.

Examples
--------
>>> preset("gavel-testbed").total_devices
108
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Mapping
from importlib import resources
from types import MappingProxyType
from typing import Any, NamedTuple

from clustersim.catalog import Catalog, load_catalog
from clustersim.cluster import Cluster
from clustersim.spec import cluster_from_spec, spec_from_shorthand

SpecFunction = Callable[[Catalog | None], dict[str, Any]]


class Preset(NamedTuple):
    """A registered preset.

    Attributes
    ----------
    description
        What the cluster is, its size, and every assumption made.
    source
        Where its numbers come from.
    spec
        Function ``(catalog=None) -> spec dict``.
    """

    description: str
    source: str
    spec: SpecFunction


# -- Philly ---------------------------------------------------------------------------------------

PHILLY_TRACE_JOBS = 82_247
"""Jobs in ``shared/data/traces/philly/philly.csv``."""
PHILLY_TRACE_GPU_SECONDS = 3_521_082_502
"""Sum of its ``gpu_time`` column (GPU-seconds)."""
PHILLY_TRACE_SPAN_S = 9_408_690
"""From its first submission (2017-09-04 10:30:41) to its last (2017-12-22 08:02:11), s."""
PHILLY_TRACE_MAX_GANG = 128
"""Its largest ``num_gpus``."""

PHILLY_8GPU_SERVERS = 64
PHILLY_2GPU_SERVERS = 24
PHILLY_SERVERS_PER_RACK = 16
"""Servers per rack (RDMA domain): 16 x 8 GPUs = 128 GPUs, the trace's largest gang, so every
gang of the trace fits one rack and crosses only the 100 Gbit/s NIC, as the reference
placement of :mod:`clustersim.perf` does (identity replay, ``docs/identity-replay.md``)."""
PHILLY_NIC_GBPS = 100.0
PHILLY_RACK_OVERSUBSCRIPTION = 4.0


def philly_spec(catalog: Catalog | None = None) -> dict[str, Any]:
    """A Philly-like cluster sized for the full Philly trace.

    Microsoft's Philly (Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for
    DNN Training Workloads", USENIX ATC'19) was shared by several virtual clusters (the trace
    has 15 ``cluster`` hashes) on 2-GPU and 8-GPU servers; servers in a rack share an RDMA
    (InfiniBand) domain, jobs crossing racks do not get RDMA. The trace's machine list
    (``README.philly-traces.upstream.md``) records per server only its GPU count and per-GPU
    memory; the raw machine list is not in the shared data, so the size is reasoned from the
    workload:

    - the trace (82,247 jobs) offers 3,521,082,502 GPU-seconds over 9,408,690 s (first to last
      submission), a mean load of 374.2 busy GPUs; in 7-day bins from the first submission
      the mean ranges from 34 to 738 (busiest: the week of 2017-10-23);
    - its largest gang is 128 GPUs.

    The preset has 560 GPUs = 1.50x the mean load (heavily loaded, and overloaded in the
    busiest weeks, as Philly was) and 4.4x the largest gang:

    - 64 servers x 8 GPUs in 4 racks of 16 servers (128 GPUs a rack) and 24 servers x 2 GPUs
      in 2 racks (16 and 8 servers) (assumed split; the paper gives no counts). A rack is an
      RDMA domain; Philly's scheduler kept a job inside one where it could (the paper's
      locality constraint), and the trace's largest gang (128 GPUs) ran, so a domain of at
      least 128 GPUs is assumed: every gang of the trace then fits one rack, and a job
      replayed alone on this cluster with consolidated placement runs exactly its recorded
      duration (the performance model's reference placement, ``docs/identity-replay.md``);
    - every GPU is a ``P100``, the performance model's reference type, so trace durations map
      1:1 to work (Philly was not all P100: the machine list's example row is an 8-GPU server
      of 24 GB GPUs, a P40/M40-class card);
    - ``nic_gbps`` 100 (an InfiniBand EDR-class RDMA link inside a rack, assumed), uplink
      oversubscription 4.0 between racks (assumed: TCP without RDMA across racks, 25 Gbit/s
      effective);
    - intra-node bandwidth: the catalog default for P100 (PCIe 3.0, 32 GB/s, the reference
      placement's); node overhead:
      the spec default; one region without a carbon zone (Philly's location is not public);
    - virtual-cluster quotas are not modelled by the cluster (that is a policy matter).
    """
    del catalog
    racks: list[dict[str, Any]] = []
    pools: list[dict[str, Any]] = []
    for label, servers, gpus in (
        ("8gpu", PHILLY_8GPU_SERVERS, 8),
        ("2gpu", PHILLY_2GPU_SERVERS, 2),
    ):
        for r in range(math.ceil(servers / PHILLY_SERVERS_PER_RACK)):
            name = f"{label}-rack{r}"
            n = min(PHILLY_SERVERS_PER_RACK, servers - r * PHILLY_SERVERS_PER_RACK)
            racks.append({"name": name, "oversubscription": PHILLY_RACK_OVERSUBSCRIPTION})
            pools.append(
                {
                    "name": f"p100-{name}",
                    "accelerator": "P100",
                    "nodes": n,
                    "devices_per_node": gpus,
                    "rack": name,
                    "nic_gbps": PHILLY_NIC_GBPS,
                }
            )
    return {"name": "philly", "racks": racks, "pools": pools}


#: Accelerator generation of each rack of :func:`philly_hetero_spec`, by rack name.
PHILLY_HETERO_RACKS: Mapping[str, str] = MappingProxyType(
    {
        "8gpu-rack0": "V100",
        "8gpu-rack1": "P100",
        "8gpu-rack2": "P100",
        "8gpu-rack3": "K80",
        "2gpu-rack0": "K80",
        "2gpu-rack1": "K80",
    }
)


def philly_hetero_spec(catalog: Catalog | None = None) -> dict[str, Any]:
    """The ``philly`` preset's shape with three GPU generations: 128 V100, 256 P100, 176 K80.

    For the full Philly trace (82,247 jobs) under heterogeneity-aware policies. Everything
    but the accelerator of each rack is :func:`philly_spec`'s (560 GPUs: 64 servers x 8 in 4
    racks of 16, 24 servers x 2 in 2 racks; 100 Gbit/s RDMA inside a rack, oversubscription
    4.0 between racks), so results compare with the homogeneous ``philly`` preset rack for
    rack. The mix is an assumption: Philly's public data give no per-generation counts (its
    machine list records per server only the GPU count and per-GPU memory, see
    :func:`philly_spec`), so the three generations are those Gavel (Narayanan et al.,
    OSDI'20) evaluates on (V100, P100, K80), split by rack: one rack of the newest generation
    (V100), two of the reference type (P100, so most trace durations keep their recorded
    meaning), and the oldest (K80) on the remaining 8-GPU rack and on every 2-GPU server
    (older, smaller servers). Each rack is one generation,
    so a gang never mixes types; every 8-GPU rack (128 GPUs) holds the trace's largest gang.
    """
    spec = philly_spec(catalog)
    for pool in spec["pools"]:
        generation = PHILLY_HETERO_RACKS[pool["rack"]]
        pool["accelerator"] = generation
        pool["name"] = f"{generation.lower()}-{pool['rack']}"
    spec["name"] = "philly-hetero-560"
    return spec


# -- Gavel ----------------------------------------------------------------------------------------

GAVEL_TESTBED = "v100:36:8,p100:36:8,k80:36:8"
"""Gavel's simulated cluster in Gavel's shorthand (``-c 36:36:36`` in its artifact), with
servers of 8 GPUs (:data:`GAVEL_SERVER_DEVICES`)."""
GAVEL_SERVER_DEVICES = 8
"""GPUs per server of the Gavel testbed preset: the largest scale factor of Gavel's
throughput table, whose consolidated measurements put all 8 workers on one server."""


def gavel_testbed_spec(catalog: Catalog | None = None) -> dict[str, Any]:
    """Gavel's simulated heterogeneous cluster: 36 V100 + 36 P100 + 36 K80 GPUs (108 GPUs).

    Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
    Workloads", OSDI'20. The artifact's ``EXPERIMENTS.md`` runs every simulated experiment of
    the paper on "a cluster with 36 V100 GPUs, 36 P100 GPUs, and 36 K80 GPUs" (``-c 36:36:36``).
    Servers hold :data:`GAVEL_SERVER_DEVICES` (8) GPUs each, so four servers of 8 and one of
    4 per type (an assumption: Gavel's sweep scripts take the server size as a parameter and
    default to one GPU per server, and its simulator ignores placement). 8 is the largest
    scale factor of Gavel's throughput table, whose "consolidated" throughputs were measured
    with all workers on one server: on these servers every job of a Gavel trace replayed
    alone runs at its measured consolidated rate, as in Gavel's simulator (identity replay,
    ``docs/identity-replay.md``; with 4-GPU servers an 8-GPU job crossed the network and ran
    up to 23 % slower). Each type is one rack; types map to
    the catalog as V100 -> V100-SXM2-16GB, P100 -> P100, K80 -> K80, matching the
    ``v100``/``p100``/``k80`` keys of Gavel's throughput table.
    """
    spec = spec_from_shorthand(GAVEL_TESTBED, catalog)
    spec["name"] = "gavel-testbed"
    return spec


# -- Alibaba node lists ---------------------------------------------------------------------------

ALIBABA_NODES_PER_RACK = 16
"""Servers per rack assumed for the Alibaba presets (their topology is not published)."""

NVLINK_CAPPED_GBS: Mapping[str, float] = MappingProxyType(
    {"A800-SXM4-80GB": 400.0, "A800": 400.0, "H800": 400.0}
)
"""Intra-node bandwidth of export variants whose NVLink is capped at 400 GB/s (GB/s)."""


def _read_rows(filename: str) -> list[dict[str, str]]:
    text = resources.files("clustersim").joinpath("data", filename).read_text("utf-8")
    return list(csv.DictReader(text.splitlines()))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def node_list_spec(
    name: str,
    filename: str,
    model_column: str,
    catalog: Catalog | None = None,
) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """A spec from a shipped node-shape file, and the models it had to skip.

    Parameters
    ----------
    name
        Cluster name.
    filename
        CSV in ``clustersim/data/`` with columns ``<model_column>, gpus_per_node, cpu_cores,
        [host_mem_gb,] nodes``.
    model_column
        Column holding the GPU model name.
    catalog
        Resolves model names; default :func:`~clustersim.catalog.load_catalog`.

    Returns
    -------
    spec : dict
        One pool per node shape of a known model, spread over racks of
        :data:`ALIBABA_NODES_PER_RACK` servers.
    skipped : dict
        ``{model: (nodes, devices)}`` of models the catalog does not resolve and of
        machines without GPUs (model ``"CPU"`` or 0 GPUs).
    """
    cat = catalog if catalog is not None else load_catalog()
    pools: list[dict[str, Any]] = []
    skipped: dict[str, tuple[int, int]] = {}
    for row in _read_rows(filename):
        model = row[model_column]
        gpus, nodes = int(row["gpus_per_node"]), int(row["nodes"])
        t = cat.resolve(model) if gpus > 0 else None
        if t is None:
            n0, d0 = skipped.get(model, (0, 0))
            skipped[model] = (n0 + nodes, d0 + nodes * gpus)
            continue
        shape = f"{model}-{gpus}g-{row['cpu_cores']}c"
        pool: dict[str, Any] = {
            "accelerator": t.name,
            "nodes": nodes,
            "devices_per_node": gpus,
            "racks": math.ceil(nodes / ALIBABA_NODES_PER_RACK),
            "cpu_cores": int(row["cpu_cores"]),
        }
        if row.get("host_mem_gb"):
            mem = float(row["host_mem_gb"])
            pool["host_mem_gb"] = mem
            shape += f"-{mem:g}gb"
        if model in NVLINK_CAPPED_GBS and gpus > 1:
            pool["intra_gbs"] = NVLINK_CAPPED_GBS[model]
        pools.append({"name": _slug(shape), **pool})
    return {"name": name, "pools": pools}, skipped


def alibaba_pai_2020_spec(catalog: Catalog | None = None) -> dict[str, Any]:
    """Alibaba PAI 2020 GPU cluster from ``pai_machine_spec.csv`` (see :data:`PRESETS`)."""
    return node_list_spec("alibaba-pai-2020", "alibaba_pai_2020_nodes.csv", "gpu_type", catalog)[0]


def alibaba_openb_2023_spec(catalog: Catalog | None = None) -> dict[str, Any]:
    """Alibaba openb 2023 GPU nodes from ``openb_node_list_gpu_node.csv`` (see :data:`PRESETS`)."""
    return node_list_spec("alibaba-openb-2023", "alibaba_openb_2023_nodes.csv", "model", catalog)[0]


def alibaba_spot_2026_spec(catalog: Catalog | None = None) -> dict[str, Any]:
    """Alibaba spot 2026 GPU nodes from ``node_info_df.csv`` (see :data:`PRESETS`)."""
    return node_list_spec("alibaba-spot-2026", "alibaba_spot_2026_nodes.csv", "gpu_model", catalog)[
        0
    ]


# -- Helios ---------------------------------------------------------------------------------------

HELIOS_CLUSTER_GPUS: Mapping[str, int] = MappingProxyType(
    {"venus": 1022, "earth": 997, "saturn": 2080, "uranus": 2119}
)
"""GPUs of SenseTime's four public Helios clusters (``gpu_num`` of
``shared/data/traces/helios/helios_cluster_summary.csv``; they sum to 6,218, the file's
``total`` row says 6,220)."""
HELIOS_GPUS_PER_NODE = 8
HELIOS_CPU_CORES = 48
HELIOS_HOST_MEM_GB = 376.0
HELIOS_NIC_GBPS = 100.0
HELIOS_NODES_PER_RACK = 16


def helios_spec(catalog: Catalog | None = None) -> dict[str, Any]:
    """A Helios-like cluster: SenseTime's Venus, Earth, Saturn and Uranus GPU clusters.

    Hu et al., "Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU
    Datacenters", SC'21; the trace's README (``README.HeliosData.upstream.md``) describes the
    four clusters' job logs, ``helios_cluster_summary.csv`` gives their sizes:

    - GPUs per cluster from the summary's ``gpu_num`` (Venus 1,022, Earth 997, Saturn 2,080,
      Uranus 2,119); servers of 8 GPUs (the Helios artifact's simulator builds every
      cluster from 8-GPU nodes, ``vc_dict_generator.py``), rounded to whole servers: 128,
      125, 260 and 265 servers (6,224 GPUs; the four rows sum to 6,218, the summary's
      ``total`` row says 6,220);
    - every server is the one documented in the artifact (``env_datacenter_node.txt``, "from
      Volta Cluster"): 8 x Tesla V100-SXM2 32 GB, 2 x Xeon Gold 6146 (48 logical CPUs),
      376 GiB of memory, InfiniBand EDR (100 Gbit/s). The GPU models of the other clusters
      are not in the shared data: assumed the same;
    - each cluster is one pool in racks of 16 servers (assumed), non-blocking; the model has
      no boundary between the four clusters (Helios runs them independently, so gangs never
      span two of them; a simulation may place one across clusters);
    - one region without a carbon zone (the datacentre's location is not public).
    """
    del catalog
    pools = []
    for name, gpus in HELIOS_CLUSTER_GPUS.items():
        servers = round(gpus / HELIOS_GPUS_PER_NODE)
        pools.append(
            {
                "name": name,
                "accelerator": "V100-SXM2-32GB",
                "nodes": servers,
                "devices_per_node": HELIOS_GPUS_PER_NODE,
                "racks": math.ceil(servers / HELIOS_NODES_PER_RACK),
                "nic_gbps": HELIOS_NIC_GBPS,
                "cpu_cores": HELIOS_CPU_CORES,
                "host_mem_gb": HELIOS_HOST_MEM_GB,
            }
        )
    return {"name": "helios", "pools": pools}


# -- mixed cloud and edge -------------------------------------------------------------------------


def mixed_cloud_edge_spec(catalog: Catalog | None = None) -> dict[str, Any]:
    """A small two-region example mixing data-centre GPUs and Jetson-class edge devices.

    Every number here is illustrative, not measured:

    - region ``us-west`` (Electricity Maps zone US-CAL-CISO, PUE 1.15, $0.20/kWh): 2 servers
      of 8 x H100-SXM5-80GB with 400 Gbit/s NICs in one non-blocking rack;
    - region ``eu-central`` (zone DE, PUE 1.3, $0.25/kWh): 4 servers of 4 x L4 with
      50 Gbit/s NICs in one rack (uplink oversubscription 2.0), 16 Jetson AGX Orin 64GB at two
      sites (1 Gbit/s links, online with probability 0.7) and 32 Jetson Orin Nano 8GB at four
      sites (100 Mbit/s links, online with probability 0.5); each edge device is a node.
    """
    del catalog
    return {
        "name": "mixed-cloud-edge",
        "regions": [
            {"name": "us-west", "carbon_zone": "US-CAL-CISO", "pue": 1.15, "price_per_kwh": 0.20},
            {"name": "eu-central", "carbon_zone": "DE", "pue": 1.3, "price_per_kwh": 0.25},
        ],
        "racks": [
            {"name": "dc-west", "region": "us-west", "oversubscription": 1.0},
            {"name": "dc-eu", "region": "eu-central", "oversubscription": 2.0},
        ],
        "pools": [
            {
                "name": "h100",
                "accelerator": "H100-SXM5-80GB",
                "nodes": 2,
                "devices_per_node": 8,
                "rack": "dc-west",
                "nic_gbps": 400.0,
            },
            {
                "name": "l4",
                "accelerator": "L4",
                "nodes": 4,
                "devices_per_node": 4,
                "rack": "dc-eu",
                "nic_gbps": 50.0,
            },
            {
                "name": "agx-orin",
                "accelerator": "Jetson-AGX-Orin-64GB",
                "nodes": 16,
                "devices_per_node": 1,
                "region": "eu-central",
                "racks": 2,
                "nic_gbps": 1.0,
                "availability": 0.7,
            },
            {
                "name": "orin-nano",
                "accelerator": "Jetson-Orin-Nano-8GB",
                "nodes": 32,
                "devices_per_node": 1,
                "region": "eu-central",
                "racks": 4,
                "nic_gbps": 0.1,
                "availability": 0.5,
            },
        ],
    }


# -- registry -------------------------------------------------------------------------------------

_UNMAPPED_NOTE = (
    "Skipped with the built-in catalog (map them with Catalog.with_aliases and pass that "
    "catalog to include them): "
)

PRESETS: Mapping[str, Preset] = MappingProxyType(
    {
        "philly": Preset(
            description=(
                "Philly-like cluster for the full Philly trace: 560 P100 GPUs (64 servers x 8 "
                "in 4 racks of 16, 24 servers x 2 in 2 racks), 1.50x the trace's mean load of "
                "374.2 busy GPUs and >= its largest gang (128, which fits one rack). 100 Gbit/s "
                "RDMA inside a rack, oversubscription 4.0 between racks (assumed). P100 nodes "
                "are the performance model's reference placement, so a Philly job alone runs "
                "exactly its recorded duration."
            ),
            source=(
                "Jeon et al., USENIX ATC'19 (Philly: 2- and 8-GPU servers, RDMA within a "
                "rack); sized from shared/data/traces/philly/philly.csv (CC BY 4.0)"
            ),
            spec=philly_spec,
        ),
        "gavel-testbed": Preset(
            description=(
                "Gavel's simulated heterogeneous cluster: 36 V100 + 36 P100 + 36 K80 = 108 "
                "GPUs, 8 GPUs per server (assumed, the largest measured scale factor; 4 "
                "servers of 8 and one of 4 per type), one rack per type."
            ),
            source=(
                "Narayanan et al., OSDI'20; Gavel artifact EXPERIMENTS.md "
                "(stanford-futuredata/gavel, MIT): 'a cluster with 36 V100 GPUs, 36 P100 "
                "GPUs, and 36 K80 GPUs' (-c 36:36:36)"
            ),
            spec=gavel_testbed_spec,
        ),
        "alibaba-pai-2020": Preset(
            description=(
                "Alibaba PAI 2020 GPU cluster: 1,534 servers with 4,502 GPUs (798 x 2 P100, "
                "497 x 2 T4, 104 x 8 V100 16 GB, 135 x 8 V100 32 GB), 16 servers a rack "
                "(assumed). "
                + _UNMAPPED_NOTE
                + "MISC (280 servers, 2,240 GPUs of undisclosed older models); 83 CPU-only "
                "servers are left out. Of the trace's 1,897 machines and 6,742 GPUs."
            ),
            source=(
                "shared/data/traces/alibaba-pai-2020/pai_machine_spec.csv (Alibaba cluster "
                "trace GPU v2020, CC BY 4.0); Weng et al., NSDI'22"
            ),
            spec=alibaba_pai_2020_spec,
        ),
        "alibaba-openb-2023": Preset(
            description=(
                "Alibaba openb 2023 GPU nodes: 625 servers with 1,508 GPUs (P100, T4, V100 "
                "16 GB and 32 GB, A10; 1 to 8 GPUs a server), 16 servers a rack (assumed). "
                + _UNMAPPED_NOTE
                + "G2 (549 servers, 4,392 GPUs) and G3 (39 servers, 312 GPUs), undisclosed "
                "internal GPU codes - 76 % of the trace's 6,212 GPUs on 1,213 GPU nodes."
            ),
            source=(
                "shared/data/traces/alibaba-gpu-2023/openb_node_list_gpu_node.csv (Weng et "
                "al., 'Beware of Fragmentation', USENIX ATC'23; research use, cite the paper)"
            ),
            spec=alibaba_openb_2023_spec,
        ),
        "alibaba-spot-2026": Preset(
            description=(
                "Alibaba spot-GPU cluster 2026: 3,167 servers with 7,878 GPUs (2,494 x 1 A10, "
                "432 x 8 A100-SXM4-80GB, 22 x 8 A800 as A100-SXM4-80GB with 400 GB/s NVLink, "
                "219 x 8 H800 as H100-SXM5-80GB with 400 GB/s NVLink), 16 servers a rack "
                "(assumed); host memory is not in the node list. "
                + _UNMAPPED_NOTE
                + "GPU-series-1 (989 servers, 1,558 GPUs) and GPU-series-2 (122 servers, "
                "976 GPUs), undisclosed GPU families. Of the trace's 4,278 nodes and 10,412 "
                "GPUs."
            ),
            source=(
                "shared/data/traces/alibaba-spot-2026/node_info_df.csv (Duan et al., 'GFS', "
                "ASPLOS'26; research use, cite the paper)"
            ),
            spec=alibaba_spot_2026_spec,
        ),
        "helios": Preset(
            description=(
                "Helios-like cluster: SenseTime's four public GPU clusters as four pools of "
                "8-GPU V100-SXM2-32GB servers - Venus 128, Earth 125, Saturn 260, Uranus 265 "
                "servers (6,224 GPUs; the trace summary's rows sum to 6,218), 48 CPUs and "
                "376 GiB per server, InfiniBand EDR (100 Gbit/s), racks of 16 servers "
                "(assumed). Every cluster is assumed to use the V100 server the Helios "
                "artifact documents."
            ),
            source=(
                "shared/data/traces/helios/helios_cluster_summary.csv (gpu_num) and its README "
                "(Hu et al., SC'21; CC BY 4.0 / MIT); server from the HeliosArtifact "
                "environment file (github.com/S-Lab-System-Group/HeliosArtifact)"
            ),
            spec=helios_spec,
        ),
        "mixed-cloud-edge": Preset(
            description=(
                "Illustrative two-region cluster: us-west (US-CAL-CISO) 2 x 8 H100; "
                "eu-central (DE) 4 x 4 L4, 16 Jetson AGX Orin (availability 0.7, 1 Gbit/s) "
                "and 32 Jetson Orin Nano (availability 0.5, 100 Mbit/s) - 80 devices."
            ),
            source="made up for demonstrations; no real cluster",
            spec=mixed_cloud_edge_spec,
        ),
        "philly-hetero-560": Preset(
            description=(
                "The philly preset's 560 GPUs in three generations, one per rack: 128 V100 "
                "(one rack of 16 x 8), 256 P100 (two racks of 16 x 8), 176 K80 (one rack of "
                "16 x 8 and all 24 2-GPU servers). Same racks, network and servers as "
                "philly; the generation mix is assumed (Philly's counts are not published)."
            ),
            source=(
                "Jeon et al., USENIX ATC'19 (Philly: 2- and 8-GPU servers, RDMA within a "
                "rack); generations as Gavel's (Narayanan et al., OSDI'20: V100, P100, "
                "K80); shape of the philly preset"
            ),
            spec=philly_hetero_spec,
        ),
    }
)
"""All presets by name."""


def preset_names() -> tuple[str, ...]:
    """The preset names, in registry order."""
    return tuple(PRESETS)


def _get(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown preset {name!r}; presets: {', '.join(PRESETS)}") from None


def preset_spec(name: str, catalog: Catalog | None = None) -> dict[str, Any]:
    """The spec dict of a preset (a fresh copy each call, free to edit).

    Parameters
    ----------
    name
        A key of :data:`PRESETS`.
    catalog
        Resolves the GPU models of the node-list presets; default
        :func:`~clustersim.catalog.load_catalog`.

    Raises
    ------
    KeyError
        For an unknown name.
    """
    return _get(name).spec(catalog)


def preset(name: str, catalog: Catalog | None = None) -> Cluster:
    """The cluster of a preset.

    Parameters
    ----------
    name
        A key of :data:`PRESETS`.
    catalog
        As for :func:`preset_spec`.

    Raises
    ------
    KeyError
        For an unknown name.
    """
    return cluster_from_spec(preset_spec(name, catalog), catalog)
