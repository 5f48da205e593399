"""Performance model (DESIGN §3.3): how fast a job runs on a given placement.

:class:`PerformanceModel` turns a job table and a cluster into :class:`JobRates`: the
consolidated full-gang rate of every job on every accelerator type, the checkpoint/restore
delay of every job, and the small per-job-type tables that
:meth:`JobRates.placement_rate` evaluates for any device count and link bandwidth.

Units
-----
A rate is in the units of the job's ``work`` (see :mod:`clustersim.jobs`):

* **steps/s** for jobs whose ``job_type`` is one of the measured Gavel job types, e.g.
  ``"ResNet-50 (batch size 64)"`` (exact match). As in Gavel, the throughput of a gang of
  ``n`` devices counts the steps of all ``n`` data-parallel workers: one synchronous
  iteration of the gang advances the work by ``n`` steps. (The table shows it: a gang's
  throughput is up to 12 times the single-device one.)
* **reference seconds/s** for every other job: 1.0 means "as fast as the whole gang on the
  reference type :data:`REFERENCE_TYPE` (P100), consolidated". The reference placement of a
  gang of ``N`` devices is one node of :data:`REFERENCE_NODE_DEVICES` (8) PCIe P100s
  whose ring crosses the PCIe 3.0 x16 interconnect (:data:`REFERENCE_INTRA_GBS`, 32 GB/s)
  when ``N <= REFERENCE_NODE_DEVICES``, and otherwise such nodes in one non-blocking rack
  joined by a 100 Gbit/s network (:data:`REFERENCE_NETWORK_GBS`, 12.5 GB/s). These are
  fixed definitions, so a workload means the same thing on every cluster.

Identity replay
---------------
The reference placement is exactly the catalog's P100 node (``P100`` with its default
``intra_gbs``, the spec's default 8 devices per node and 100 Gbit/s NIC), so a job whose work
is a recorded duration (Philly, Tiresias, ...) replayed alone on a cluster of such nodes with
consolidated placement and no restore cost runs for exactly that duration, whatever its gang
size (``docs/identity-replay.md``; ``tests/test_identity_replay.py``). The two used to
disagree: :data:`REFERENCE_INTRA_GBS` was 16 GB/s while every cluster's P100 nodes carry the
catalog's 32 GB/s, so multi-GPU jobs ran 1.5-2.6 % faster than recorded on a P100 cluster.
The reference constant was the wrong one. ``Cluster.node_intra_gbs`` and the catalog state an
interconnect as the sum of both directions of a device's links (Epoch AI's convention:
32 GB/s for PCIe 3.0 x16 on its PCIe V100 rows, 300 GB/s for V100 SXM2 NVLink), and the
catalog's P100 *is* the PCIe part (Epoch row ``NVIDIA P100``: 250 W, 18.7 TFLOPS FP16,
alias ``P100-PCIE-16GB``; the SXM2 part is 300 W, 21.2 TFLOPS, NVLink 160 GB/s), so its
32 GB/s is right; 16 GB/s was the one-direction figure of the same PCIe link, in a unit no
cluster uses. :data:`GAVEL_DEVICES` states its interconnects in the same convention now.
(The NIC, ``nic_gbps / 8``, is one direction, as network links are quoted; so the model
rates an intra-node link against a NIC twice as favourably as the hardware would. That is a
property of the communication model, not of the reference, and leaves identity untouched.)

Measured throughput
-------------------
The Gavel table (``data/gavel_throughputs.json``, a copy of Gavel's
``simulation_throughputs.json``; Narayanan et al., "Heterogeneity-Aware Cluster Scheduling
Policies for Deep Learning Workloads", OSDI'20; MIT licence) gives, for 26 job types and
scale factors 1/2/4/8, the isolated throughput of the gang on Gavel's K80, P100 and V100
workers, consolidated (all workers on one server) and unconsolidated (``*_unconsolidated``:
workers on different servers). Keys look like ``"('ResNet-18 (batch size 32)', 1)"`` and are
parsed with a regular expression (never ``eval``). A catalog type is matched to a Gavel
worker by name: a type whose name or an alias has ``k80``, ``p100`` or ``v100`` as a token
(case-insensitive; both V100 16 GB and 32 GB count as Gavel's V100; ``GV100`` and ``P1000``
do not, see :func:`gavel_worker`).

A measured value of 0 (ResNet-50 with batch size 128 on K80 at scale factors 2/4/8 — the
job did not fit) is kept: the rate there is 0. Device memory is not modelled otherwise.

Step time, communication and placement
--------------------------------------
For a job on ``n`` devices of one type whose slowest link has bandwidth ``L`` (GB/s), the time
of one synchronous data-parallel iteration is::

    tau(n, L) = c + 2 (n - 1) / n * G / L        rate = n / tau   [steps/s]

``c`` is the per-iteration compute time of a worker and ``2 (n-1)/n * G`` the bytes each
device sends in a ring all-reduce of ``G`` gradient bytes (Patarasuk & Yuan 2009; the NCCL
ring algorithm). Computation and communication are added, not overlapped — a deliberately
simple, pessimistic choice that makes placement matter for every model; a single device
(``n = 1``) has no communication and is unaffected by ``L``. ``G`` defaults to the
parameter count × 4 bytes (fp32 gradients) of the model behind the job type
(:data:`MODEL_PARAMETERS`, sources there).

Calibration to the measurements, for a job type on a Gavel type at a measured scale factor
``m`` with consolidated throughput ``Tc`` and unconsolidated throughput ``Tu``:

* ``c`` is chosen so that ``tau(m, L_intra) = m / Tc`` exactly, where ``L_intra`` is the
  intra-node bandwidth of that type's nodes in the cluster (their maximum): a consolidated
  placement reproduces Gavel's number whatever the interconnect.
* Where ``Tu`` exists, ``G`` is fitted so that ``tau(m, L_net) = m / Tu`` as well, with
  ``L_net = measured_network_gbs`` (default 1.25 GB/s = 10 Gbit/s, the network of the cloud
  instances of Gavel's testbed, an assumption): a multi-node placement over a link of that
  bandwidth reproduces Gavel's unconsolidated number, faster links do better and
  oversubscribed ones worse. With 10 Gbit/s the fitted ``G`` is close to the parameter-count
  value for the V100 and P100 measurements (median ratio 1.09 and 0.68; 80 % of the fits
  between 0.4 and 1.7 times), which supports the model. Where ``Tu >= Tc`` (measurement
  noise: 29 of the 51 K80 pairs, where communication is lost in the compute time, and 15 of
  the 114 P100/V100 pairs, all large-batch ResNets) the fit is meaningless and the
  parameter-count ``G`` is used.
* ``G`` is capped so that communication is at most half of the measured consolidated
  iteration at ``L_intra`` (only binds for implausibly slow interconnects); the consolidated
  value stays exact.

A scale factor without a measurement (e.g. A3C, CycleGAN and Recommendation were measured on
one device only; the traces also ask for 16 and 32 devices) takes ``c`` and ``G`` from the
nearest measured scale factor (in log2, ties to the smaller) and applies the formula at the
requested ``n`` — weak scaling with a fixed per-worker batch. Elastic jobs running on
``ndev != num_gpus`` devices use the same formula at ``ndev``; that is per-device throughput
× ``ndev`` × efficiency(``ndev``, ``L``) with efficiency = ``c1 / tau(ndev, L)``.

Extrapolation across accelerator types (roofline rule)
------------------------------------------------------
A type without Gavel measurements (A100, H100, T4, TPU, ...) gets ``c`` from the closest
measured Gavel type ``b`` (nearest in log peak FP16 TFLOPS and log memory bandwidth; ties
prefer V100, then P100, then K80) divided by a speed ratio. A step is split into a
compute-bound part, fraction ``f_c`` of the step *on the reference P100*, that scales with peak
FP16 TFLOPS ``F``, and a memory-bound part that scales with memory bandwidth ``B``; hence::

    time factor  phi(a) = f_c F_P100 / F_a + (1 - f_c) B_P100 / B_a
    speed of a relative to b = phi(b) / phi(a) = 1 / (f_b F_b / F_a + (1 - f_b) B_b / B_a)

where ``f_b`` is the compute-bound share of the step on ``b`` (which follows from ``f_c``).
``f_c`` is fitted per job type (least squares in log space over the single-device K80, P100
and V100 measurements, grid over [0, 1]; see :func:`fit_compute_fractions`). Gavel's workloads
trained in FP32 and barely used the V100's tensor cores (measured V100/P100 geometric mean:
1.06), so the fits are low: 12 of the 26 job types at 0 (bandwidth-bound), the others between
0.005 and 0.57, mean 0.16. Jobs without a measured job type use ``generic_compute_fraction``,
by default that mean (speeds relative to P100 then: K80 0.31, V100 1.41, H100 5.4). Device
specs of Gavel's workers are in :data:`GAVEL_DEVICES`; target types use the cluster's own
:class:`~clustersim.cluster.AcceleratorType` numbers (a missing FLOPS or bandwidth figure makes
that term scale like the other one; a type with neither and no override cannot run jobs).
Communication on an extrapolated type uses the parameter-count ``G``. Measured zeros on the
anchor type carry over.

``speed_overrides`` (speed relative to the reference type, by type name or alias) replaces the
roofline rule: generic jobs run ``override`` times as fast as on P100, and measured job types
on a type without its own measurements are scaled from their P100 measurement by the
override. Measurements win: an override does not change a job type measured on that type.

Jobs without a (known) job type
-------------------------------
A nominal model shaped like Gavel's ResNet-50 (batch size 32) on P100: per-iteration compute
``generic_step_s = 0.2046`` s (1 / 4.888 steps/s measured) and gradient
``generic_grad_gb = 0.1022`` GB (25.6 M parameters), so that only the ratio of communication
to computation matters; the speed on type ``a`` is the roofline speed with
``generic_compute_fraction`` (or the override), and the rate is normalised by the same model on
the reference placement.

Constraints
-----------
The rate is 0 on types other than the job's ``gpu_type`` constraint. A constraint matches a
type when it equals the type's name or an alias after lower-casing and dropping everything but
letters and digits (``"V100-SXM2-16GB" == "v100 sxm2 16gb"``); a constraint that is just
``k80``, ``p100`` or ``v100`` and matches no name or alias matches every type of that Gavel
family. A constraint that names no type of the cluster makes the job unrunnable (reported in
the notes).

The rate is also 0 on types whose devices cannot hold the job's model or whose platform its
framework does not run on (:mod:`clustersim.fit`; off with ``fit_check=False``, as in the
compatibility modes). Jobs that only that check keeps from every type are flagged
(``JobRates.fits_nowhere``).

Restore delay
-------------
Every resume after a preemption or migration costs ``restore_s``: a fixed
:data:`RESTORE_BASE_S` = 10 s (process start, CUDA context, NCCL communicators, data-loader
warm-up) plus writing and reading the checkpoint (weights and optimiser state,
``parameters × 4 B × (1 + optimiser slots)``) at :data:`CHECKPOINT_GBS` = 0.05 GB/s effective
(serialisation plus shared network storage). For the Gavel models this gives 10–34 s. Jobs
without a known model get :data:`GENERIC_RESTORE_S` = 30 s, the re-allocation delay of the
Pollux simulator (Qiao et al., OSDI'21, ``simulator/simulator.py``: ``rescale_time = 30``).
``restore_s`` in the constructor overrides it (0 disables, as the Gavel-fidelity mode does).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from clustersim.cluster import AcceleratorType, Cluster
from clustersim.errors import ClustersimError
from clustersim.jobs import JobTable

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Work of jobs without a measured job type is in seconds of the whole gang on this type.
REFERENCE_TYPE = "P100"

#: Intra-node bandwidth of the reference placement, GB/s: PCIe 3.0 x16, the interconnect of
#: PCIe P100 servers, as the catalog states it for ``P100`` (both directions, Epoch AI's
#: convention; it was 16, the one-direction figure, which no cluster's nodes use).
REFERENCE_INTRA_GBS = 32.0
#: Devices per node of the reference placement (the spec's default for GPU nodes).
REFERENCE_NODE_DEVICES = 8
#: Network bandwidth of the reference placement for gangs larger than a node, GB/s
#: (100 Gbit/s, a typical GPU-cluster network of the P100 era and the spec's default NIC;
#: the rack is non-blocking).
REFERENCE_NETWORK_GBS = 12.5

#: Gavel worker types, in the order used by the arrays of :class:`ThroughputTable`.
GAVEL_WORKERS: tuple[str, ...] = ("k80", "p100", "v100")

#: Devices Gavel measured on: (peak FP16 TFLOPS, memory bandwidth TB/s, intra-node GB/s).
#: K80: one GK210 die of a K80 board (what a cloud "K80 GPU" is), FP32 peak 4.37 TFLOPS at boost
#: (Kepler has no faster FP16 path), 240 GB/s; P100 PCIe 16 GB: 18.7 TFLOPS FP16, 732 GB/s;
#: V100 SXM2: 125 TFLOPS FP16 tensor, 900 GB/s (NVIDIA data sheets; Epoch AI hardware data).
#: Intra-node: PCIe 3.0 x16 for K80/P100 (32 GB/s), NVLink 2 for V100 (6 links x 25 GB/s
#: x 2 directions = 300 GB/s), in the catalog's convention (sum of both directions, like
#: ``Cluster.node_intra_gbs``) — used only to separate computation from intra-node
#: communication when extrapolating to other types.
GAVEL_DEVICES: dict[str, tuple[float, float, float]] = {
    "k80": (4.37, 0.240, 32.0),
    "p100": (18.7, 0.732, 32.0),
    "v100": (125.0, 0.900, 300.0),
}

#: Model family (the job type up to `` (batch size ...)``) → (parameters, optimiser state
#: slots per parameter), for Gavel's workloads (stanford-futuredata/gavel ``workloads/pytorch``):
#:
#: * ResNet-18: CIFAR-10 ResNet-18 (kuangliu/pytorch-cifar), 11,173,962; SGD with momentum.
#: * ResNet-50: torchvision ``resnet50`` on ImageNet, 25,557,032; SGD with momentum.
#: * Transformer: Vaswani et al. base model as in jadore801120/attention-is-all-you-need-pytorch
#:   on Multi30k (d_model 512, d_inner 2048, 6+6 layers: 44.1 M, plus about 5 M for the two
#:   Multi30k vocabularies of roughly 5 k words each — estimated; target projection shared):
#:   about 49.3 M; Adam.
#: * LM: PyTorch word_language_model, 2-layer LSTM, emsize = nhid = 200, untied, Wikitext-2
#:   vocabulary 33,278: 13,987,678; plain SGD.
#: * Recommendation: Recoder DynamicAutoencoder, hidden layer 200, untied, ML-20M with
#:   20,108 items (Liang et al. 2018 preprocessing): 8,063,508; Adam.
#: * A3C: ikostrikov/pytorch-a3c ActorCritic for Pong (4 conv layers of 32, LSTMCell 288→256,
#:   6 actions): 588,967; shared Adam with AMSGrad (3 slots).
#: * CycleGAN: two 9-block ResNet generators (11,378,179 each) and two PatchGAN
#:   discriminators (2,764,737 each), eriklindernoren/PyTorch-GAN: 28,285,832; Adam.
MODEL_PARAMETERS: dict[str, tuple[float, int]] = {
    "ResNet-18": (11_173_962.0, 1),
    "ResNet-50": (25_557_032.0, 1),
    "Transformer": (49_300_000.0, 2),
    "LM": (13_987_678.0, 0),
    "Recommendation": (8_063_508.0, 2),
    "A3C": (588_967.0, 3),
    "CycleGAN": (28_285_832.0, 2),
}

#: Fixed part of every restore, s.
RESTORE_BASE_S = 10.0
#: Effective checkpoint write + read bandwidth, GB/s.
CHECKPOINT_GBS = 0.05
#: Restore delay of jobs without a known model, s (Pollux simulator's re-allocation delay).
GENERIC_RESTORE_S = 30.0

#: Default per-iteration compute time of the nominal generic job on P100, s.
DEFAULT_GENERIC_STEP_S = 1.0 / 4.888323684976709
#: Default gradient size of the nominal generic job, GB.
DEFAULT_GENERIC_GRAD_GB = 25_557_032 * 4 / 1e9
#: Default bandwidth at which Gavel's unconsolidated measurements are reproduced, GB/s.
DEFAULT_MEASURED_NETWORK_GBS = 1.25

#: Largest share of a measured consolidated iteration attributed to communication.
_MAX_COMM_SHARE = 0.5

_KEY = re.compile(r"^\(\s*'(?P<job>[^']+)'\s*,\s*(?P<sf>\d+)\s*\)$")
_WORKER = re.compile(r"(?<![a-z0-9])(k80|p100|v100)(?!\d)")


def _norm(name: str) -> str:
    """Lower-case ``name`` and keep only letters and digits."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def family(job_type: str) -> str:
    """Model family of a Gavel job type: ``"ResNet-50 (batch size 64)"`` → ``"ResNet-50"``."""
    return job_type.split(" (", 1)[0].strip()


def gavel_worker(acc: AcceleratorType) -> int:
    """Index in :data:`GAVEL_WORKERS` of the Gavel worker type ``acc`` is, or -1.

    Matches ``k80``/``p100``/``v100`` as a token of the name or an alias, case-insensitive
    (``"V100-SXM2-32GB"`` and ``"Tesla P100"`` match; ``"GV100"`` and ``"P1000"`` do not).
    """
    for name in (acc.name, *acc.aliases):
        m = _WORKER.search(name.lower())
        if m:
            return GAVEL_WORKERS.index(m.group(1))
    return -1


def _spec(acc: AcceleratorType) -> tuple[float, float]:
    """(peak FP16 TFLOPS, memory bandwidth TB/s) of ``acc``; ``nan`` where unknown."""
    f = float(acc.fp16_tflops) if acc.fp16_tflops and acc.fp16_tflops > 0 else math.nan
    b = float(acc.memory_bw_tbs) if acc.memory_bw_tbs and acc.memory_bw_tbs > 0 else math.nan
    return f, b


def time_factor(f_c: FloatArray | float, flops: float, bw: float) -> FloatArray | float:
    """Roofline time of one step relative to the reference P100, ``phi`` in the module doc.

    Parameters
    ----------
    f_c : float or (k,) float64
        Compute-bound fraction of the step on P100.
    flops, bw
        Peak FP16 TFLOPS and memory bandwidth (TB/s) of the device; ``nan`` when unknown
        (the other term then stands for both). Both unknown gives ``nan``.
    """
    p_f, p_b, _ = GAVEL_DEVICES["p100"]
    rf = p_f / flops if flops == flops else p_b / bw
    rb = p_b / bw if bw == bw else p_f / flops
    return f_c * rf + (1.0 - f_c) * rb


@dataclass(frozen=True, eq=False)
class ThroughputTable:
    """Measured throughputs in Gavel's format, as arrays.

    Attributes
    ----------
    job_types : tuple of str, length J
        Job types, sorted.
    scale_factors : (S,) int64
        Scale factors present (ascending, always including 1).
    consolidated : (3, J, S) float64
        Steps/s of the whole gang on one server, per worker in :data:`GAVEL_WORKERS` order;
        ``nan`` where not measured.
    unconsolidated : (3, J, S) float64
        Same, workers on different servers.
    """

    job_types: tuple[str, ...]
    scale_factors: IntArray
    consolidated: FloatArray
    unconsolidated: FloatArray

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> ThroughputTable:
        """Parse Gavel's JSON structure (worker → ``"('<job type>', <sf>)"`` → ``{"null": x}``).

        Only the isolated throughput (the ``"null"`` entry) is used; co-location pairs are
        ignored. Worker keys other than ``k80, p100, v100`` and ``*_unconsolidated`` are ignored.

        Raises
        ------
        ClustersimError
            On a key that is not ``('<job type>', <int>)`` or a non-numeric throughput.
        """
        rows: list[tuple[int, bool, str, int, float]] = []
        for wkey, entries in data.items():
            base, _, suffix = str(wkey).partition("_")
            if base not in GAVEL_WORKERS or suffix not in ("", "unconsolidated"):
                continue
            if not isinstance(entries, Mapping):
                raise ClustersimError(f"throughput table: {wkey!r} is not a mapping")
            for key, value in entries.items():
                m = _KEY.match(str(key))
                if m is None:
                    raise ClustersimError(f"throughput table {wkey!r}: bad key {key!r}")
                iso = value.get("null") if isinstance(value, Mapping) else None
                try:
                    x = float(iso)  # type: ignore[arg-type]
                except (TypeError, ValueError):
                    raise ClustersimError(
                        f"throughput table {wkey!r} {key!r}: no numeric 'null' throughput"
                    ) from None
                if not math.isfinite(x) or x < 0:
                    raise ClustersimError(f"throughput table {wkey!r} {key!r}: bad value {x}")
                rows.append((GAVEL_WORKERS.index(base), suffix != "", m["job"], int(m["sf"]), x))
        jts = tuple(sorted({r[2] for r in rows}))
        sfs = np.array(sorted({r[3] for r in rows} | {1}), dtype=np.int64)
        shape = (len(GAVEL_WORKERS), len(jts), len(sfs))
        cons = np.full(shape, np.nan)
        unc = np.full(shape, np.nan)
        jidx = {j: i for i, j in enumerate(jts)}
        sidx = {int(s): i for i, s in enumerate(sfs)}
        for w, uncons, jt, sf, x in rows:
            (unc if uncons else cons)[w, jidx[jt], sidx[sf]] = x
        return cls(job_types=jts, scale_factors=sfs, consolidated=cons, unconsolidated=unc)

    @classmethod
    def load(cls, path: str | Path | None = None) -> ThroughputTable:
        """Read a Gavel-format JSON file; ``None``: the shipped ``gavel_throughputs.json``."""
        return _load_table(None if path is None else str(path))

    def index(self, job_type: str) -> int:
        """Row of ``job_type`` (exact match), -1 if absent."""
        try:
            return self.job_types.index(job_type)
        except ValueError:
            return -1

    def value(
        self, worker: str, job_type: str, scale_factor: int, consolidated: bool = True
    ) -> float:
        """Measured steps/s, ``nan`` if not measured."""
        j = self.index(job_type)
        hit = np.flatnonzero(self.scale_factors == scale_factor)
        if j < 0 or len(hit) == 0:
            return math.nan
        arr = self.consolidated if consolidated else self.unconsolidated
        return float(arr[GAVEL_WORKERS.index(worker), j, hit[0]])

    def measured_pairs(self) -> set[tuple[str, int]]:
        """(job type, scale factor) pairs measured (consolidated) on at least one worker."""
        _, j, s = np.nonzero(~np.isnan(self.consolidated))
        return {(self.job_types[a], int(self.scale_factors[b])) for a, b in zip(j, s, strict=True)}


@lru_cache(maxsize=8)
def _load_table(path: str | None) -> ThroughputTable:
    try:
        if path is None:
            text = (resources.files("clustersim") / "data" / "gavel_throughputs.json").read_text()
        else:
            text = Path(path).read_text()
        data = json.loads(text)
    except (OSError, ValueError) as exc:
        raise ClustersimError(f"cannot read throughput table {path or 'gavel'}: {exc}") from None
    if not isinstance(data, Mapping):
        raise ClustersimError("throughput table: top level is not a mapping")
    return ThroughputTable.from_mapping(data)


def fit_compute_fractions(table: ThroughputTable) -> FloatArray:
    """Compute-bound fraction ``f_c`` (on P100) of every job type of ``table``.

    Least squares of ``log(step time)`` against ``log(t_P100 * phi(w; f_c))`` over the Gavel
    workers with a positive single-device measurement, with ``t_P100`` free, on a grid of
    1001 values of ``f_c`` in [0, 1] (ties to the smaller).

    Returns
    -------
    (J,) float64
        ``nan`` for job types with fewer than two such measurements.
    """
    grid = np.linspace(0.0, 1.0, 1001)
    phi = np.stack(
        [np.asarray(time_factor(grid, *GAVEL_DEVICES[w][:2])) for w in GAVEL_WORKERS], axis=1
    )  # (1001, 3)
    log_phi = np.log(phi)
    s1 = int(np.flatnonzero(table.scale_factors == 1)[0])
    single = table.consolidated[:, :, s1].T  # (J, 3)
    out = np.full(len(table.job_types), np.nan)
    for j in range(len(table.job_types)):
        ok = np.isfinite(single[j]) & (single[j] > 0)
        if ok.sum() < 2:
            continue
        y = -np.log(single[j, ok])  # log step time
        resid = y[None, :] - log_phi[:, ok]
        resid -= resid.mean(axis=1, keepdims=True)
        out[j] = grid[int(np.argmin((resid**2).sum(axis=1)))]
    return out


def _default_restore(job_type: str) -> float:
    fam = MODEL_PARAMETERS.get(family(job_type))
    if fam is None:
        return GENERIC_RESTORE_S
    params, slots = fam
    state_gb = params * 4.0 * (1 + slots) / 1e9
    return RESTORE_BASE_S + 2.0 * state_gb / CHECKPOINT_GBS


def _grad_gb(job_type: str, generic: float) -> float:
    fam = MODEL_PARAMETERS.get(family(job_type))
    return generic if fam is None else fam[0] * 4.0 / 1e9


@dataclass(frozen=True, eq=False)
class RateTables:
    """What :meth:`JobRates.placement_rate` evaluates (built by :class:`PerformanceModel`).

    Jobs are grouped by job type (group ``g``); per group, type and scale-factor slot the
    tables hold the calibrated step model ``tau(n, L) = c + 2 (n-1)/n G / L``.

    Attributes
    ----------
    group : (n,) int64
        Group of each job.
    norm : (n,) float64
        Divisor turning steps/s into the job's work units/s (1 for measured job types; the
        nominal model's reference rate for the others).
    allowed : (n, n_types) bool
        Type constraint.
    log2_sf : (S,) float64
        log2 of the scale factors of the slots.
    compute_s : (n_groups, n_types, S) float64
        Per-iteration compute time ``c`` (s); ``inf`` where the measurement was 0.
    grad_gb : (n_groups, n_types, S) float64
        Gradient bytes ``G`` all-reduced per iteration, GB.
    slot_ok : (n_groups, n_types, S) bool
        Slot holds a calibrated model (a measurement or an extrapolation of one).
    """

    group: IntArray
    norm: FloatArray
    allowed: BoolArray
    log2_sf: FloatArray
    compute_s: FloatArray
    grad_gb: FloatArray
    slot_ok: BoolArray

    def evaluate(
        self, jobs: IntArray, types: IntArray, ndev: IntArray, link_gbs: FloatArray
    ) -> FloatArray:
        """Work units/s of each (job, type, devices, link) row, (m,) float64.

        See :meth:`JobRates.placement_rate`.
        """
        jobs = np.asarray(jobs, dtype=np.int64)
        types = np.asarray(types, dtype=np.int64)
        n = np.asarray(ndev, dtype=np.float64)
        link = np.asarray(link_gbs, dtype=np.float64)
        g = self.group[jobs]
        ok = self.slot_ok[g, types]  # (m, S)
        n_pos = np.maximum(n, 1.0)
        dist = np.abs(np.log2(n_pos)[:, None] - self.log2_sf[None, :])
        dist = np.where(ok, dist, np.inf)
        k = np.argmin(dist, axis=1)
        c = self.compute_s[g, types, k]
        grad = self.grad_gb[g, types, k]
        with np.errstate(divide="ignore", invalid="ignore"):
            comm = np.where(n_pos > 1, 2.0 * (n_pos - 1.0) / n_pos * grad / link, 0.0)
            rate = n_pos / (c + comm) / self.norm[jobs]
        good = ok.any(axis=1) & (n >= 1) & self.allowed[jobs, types] & np.isfinite(rate)
        return np.where(good, rate, 0.0)


def _empty_bool() -> BoolArray:
    return np.zeros(0, dtype=bool)


@dataclass(eq=False)
class JobRates:
    """Per-job performance data prepared for one (jobs, cluster) pair.

    Attributes
    ----------
    rate : (n, n_types) float64
        Work units / s of the job's full gang (``num_gpus`` devices) consolidated on as few
        nodes as possible, on each type; 0 where it cannot run there (type constraint,
        device memory or framework (:mod:`clustersim.fit`), a measured 0, no measurement and
        no extrapolation possible).
    restore_s : (n,) float64
        Checkpoint + restore delay paid on every resume after a preemption or migration, s.
    extrapolated : (n,) bool
        The job names a job type but its (job type, ``num_gpus``) pair has no measurement
        (unmeasured scale factor, or a job type not in the table): its rates come from the
        communication model or the nominal model. Jobs without a job type are not flagged
        (the nominal model is their definition; see ``generic``).
    generic : (n,) bool
        The job's work is in reference seconds (no measured job type).
    measured : (n, n_types) bool
        ``rate`` is a measured value as is (Gavel type, measured scale factor, gang fits on a
        node).
    extrapolated_pairs : tuple of (str, int)
        Sorted distinct (job type, scale factor) pairs of the flagged jobs.
    notes : tuple of str
        Human-readable account of every extrapolation and assumption that affected these
        jobs on this cluster (for run reports).
    tables : RateTables or None
        The placement model; ``None`` for rates built by hand, in which case
        :meth:`placement_rate` returns the consolidated full-gang rate for any placement.
    fits_nowhere : (n,) bool
        Jobs that some type of the cluster could run but none can hold (device memory or
        framework, :mod:`clustersim.fit`): every rate 0 because of that check alone. The
        engine drops them as :data:`clustersim.result.DROP_NO_FIT`. Empty when the check
        is off or for rates built by hand.
    """

    rate: FloatArray
    restore_s: FloatArray
    extrapolated: BoolArray = field(default_factory=_empty_bool)
    generic: BoolArray = field(default_factory=_empty_bool)
    measured: BoolArray = field(default_factory=_empty_bool)
    extrapolated_pairs: tuple[tuple[str, int], ...] = ()
    notes: tuple[str, ...] = ()
    tables: RateTables | None = field(default=None, repr=False)
    fits_nowhere: BoolArray = field(default_factory=_empty_bool)

    def placement_rate(
        self, jobs: IntArray, types: IntArray, ndev: IntArray, link_gbs: FloatArray
    ) -> FloatArray:
        """Work units / s of jobs on a concrete placement (vectorised).

        ``n / (c + 2 (n-1)/n G / L)`` with the job type's calibrated compute time ``c`` and
        gradient size ``G`` at the measured scale factor nearest to ``n`` (module doc), divided
        by the unit normaliser of generic jobs; 0 where the job cannot run.

        Parameters
        ----------
        jobs, types, ndev : (m,) int64
            Global job index, accelerator type index, devices held.
        link_gbs : (m,) float64
            Bandwidth (GB/s) of the slowest link the placement crosses: ``inf`` for one
            device, the intra-node interconnect for a one-node placement, else the NIC or
            oversubscribed rack uplink.

        Returns
        -------
        (m,) float64
        """
        if self.tables is None:
            return np.asarray(self.rate[np.asarray(jobs), np.asarray(types)], dtype=np.float64)
        return self.tables.evaluate(jobs, types, ndev, link_gbs)

    def efficiency(
        self, jobs: IntArray, types: IntArray, ndev: IntArray, link_gbs: FloatArray
    ) -> FloatArray:
        """Scaling efficiency: placement rate / (``ndev`` × single-device rate), (m,) float64.

        0 where the job cannot run on one device of that type.
        """
        one = self.placement_rate(jobs, types, np.ones_like(ndev), np.full(len(ndev), np.inf))
        r = self.placement_rate(jobs, types, ndev, link_gbs)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(one > 0, r / (np.asarray(ndev) * one), 0.0)


class PerformanceModel:
    """Builds :class:`JobRates`; holds the measured tables and the extrapolation rule.

    Parameters
    ----------
    speed_overrides
        Speed of a type relative to :data:`REFERENCE_TYPE`, by type name or alias
        (case-insensitive); replaces the roofline rule (module doc). Keys naming no type of
        the cluster are ignored (and noted).
    restore_s
        Restore delay: ``None`` for the per-model defaults, a number for every job, or a
        mapping from job type, model family (``"ResNet-50"``) or ``"*"`` (everything else) to
        seconds. 0 disables.
    throughputs
        Path of a Gavel-format throughput JSON (e.g. Gavel's ``physical_cluster_throughputs.json``);
        ``None``: the shipped simulation table.
    measured_network_gbs
        Link bandwidth (GB/s) at which Gavel's unconsolidated measurements are reproduced.
    generic_compute_fraction
        ``f_c`` of jobs without a measured job type (and of job types too sparsely measured
        to fit); ``None``: the mean of the fitted fractions of the table.
    generic_step_s, generic_grad_gb
        Nominal per-iteration compute time on P100 (s) and gradient size (GB) of those jobs.
    placement_aware
        ``False``: a job runs at its consolidated rate wherever it is placed, even when its
        gang is larger than a node, as in Gavel's simulator (used for fidelity comparisons
        with it).
    fit_check
        ``True``: a job runs only on types whose devices can hold it and whose platform its
        framework supports (:func:`clustersim.fit.fit_table`); ``False``: no such check, as
        in the reference simulators of the compatibility modes.
    """

    def __init__(
        self,
        speed_overrides: dict[str, float] | None = None,
        restore_s: float | dict[str, float] | None = None,
        throughputs: str | Path | None = None,
        measured_network_gbs: float = DEFAULT_MEASURED_NETWORK_GBS,
        generic_compute_fraction: float | None = None,
        generic_step_s: float = DEFAULT_GENERIC_STEP_S,
        generic_grad_gb: float = DEFAULT_GENERIC_GRAD_GB,
        placement_aware: bool = True,
        fit_check: bool = True,
    ) -> None:
        self.placement_aware = placement_aware
        self.fit_check = fit_check
        self.speed_overrides = speed_overrides
        self.restore_s = restore_s
        self.throughputs = throughputs
        self.measured_network_gbs = measured_network_gbs
        self.generic_compute_fraction = generic_compute_fraction
        self.generic_step_s = generic_step_s
        self.generic_grad_gb = generic_grad_gb

    # ------------------------------------------------------------------ checks and lookups

    def _check(self) -> None:
        def positive(name: str, x: float) -> None:
            if not (isinstance(x, int | float) and math.isfinite(x) and x > 0):
                raise ClustersimError(f"performance model: {name} must be a positive number")

        positive("measured_network_gbs", self.measured_network_gbs)
        positive("generic_step_s", self.generic_step_s)
        f = self.generic_compute_fraction
        if f is not None and not (0.0 <= f <= 1.0):
            raise ClustersimError("performance model: generic_compute_fraction must be in [0, 1]")
        if not (math.isfinite(self.generic_grad_gb) and self.generic_grad_gb >= 0):
            raise ClustersimError("performance model: generic_grad_gb must be >= 0")
        for k, v in (self.speed_overrides or {}).items():
            positive(f"speed override {k!r}", v)

    def _overrides(self, cluster: Cluster, notes: list[str]) -> FloatArray:
        """(n_types,) override speed per type, ``nan`` where none."""
        out = np.full(cluster.n_types, np.nan)
        keys = [{_norm(t.name), *(_norm(a) for a in t.aliases)} for t in cluster.types]
        for key, val in sorted((self.speed_overrides or {}).items()):
            hit = [i for i, names in enumerate(keys) if _norm(key) in names]
            if not hit:
                notes.append(f"speed override {key!r} matches no type of this cluster (ignored)")
            for i in hit:
                if gavel_worker(cluster.types[i]) == GAVEL_WORKERS.index("p100") and val != 1.0:
                    raise ClustersimError(
                        f"speed override {key!r}: {cluster.types[i].name} is the reference "
                        "type, its relative speed is 1 by definition"
                    )
                out[i] = float(val)
        return out

    def _restore(self, names: npt.NDArray[np.str_]) -> FloatArray:
        """(n_groups,) restore delay per job type."""
        spec = self.restore_s
        if spec is None:
            return np.array([_default_restore(str(x)) for x in names], dtype=np.float64)
        if isinstance(spec, int | float):
            val = float(spec)
            if not (math.isfinite(val) and val >= 0):
                raise ClustersimError("restore_s must be a non-negative number")
            return np.full(len(names), val)
        out = np.empty(len(names))
        for i, x in enumerate(names):
            jt = str(x)
            for key in (jt, family(jt), "*"):
                if key in spec:
                    val = float(spec[key])
                    break
            else:
                val = _default_restore(jt)
            if not (math.isfinite(val) and val >= 0):
                raise ClustersimError(f"restore_s for {jt!r} must be a non-negative number")
            out[i] = val
        return out

    @staticmethod
    def _links(cluster: Cluster) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Per type: calibration (best intra-node) link GB/s, max devices per node, NIC GB/s."""
        nt = cluster.n_types
        intra = np.full(nt, REFERENCE_INTRA_GBS)
        ndev = np.full(nt, float(REFERENCE_NODE_DEVICES))
        nic = np.full(nt, REFERENCE_NETWORK_GBS)
        for t in range(nt):
            nodes = np.flatnonzero(cluster.node_type == t)
            if len(nodes) == 0:
                continue
            li = cluster.node_intra_gbs[nodes]
            li = li[np.isfinite(li) & (li > 0)]
            if len(li):
                intra[t] = float(li.max())
            ndev[t] = float(cluster.node_devices[nodes].max())
            ln = cluster.node_nic_gbps[nodes] / 8.0
            ln = ln[np.isfinite(ln) & (ln > 0)]
            if len(ln):
                nic[t] = float(ln.max())
        return intra, ndev, nic

    def _allowed(self, jobs: JobTable, cluster: Cluster, notes: list[str]) -> BoolArray:
        n, nt = len(jobs), cluster.n_types
        raw_names, raw_inv = np.unique(np.asarray(jobs.gpu_type, dtype=str), return_inverse=True)
        norm_names = np.array([_norm(str(x)) for x in raw_names], dtype=str)
        if n == 0 or not (norm_names != "").any():
            return np.ones((n, nt), dtype=bool)
        names, inv_u = np.unique(norm_names, return_inverse=True)
        inv = inv_u.ravel()[raw_inv.ravel()]
        keys = [{_norm(t.name), *(_norm(a) for a in t.aliases)} for t in cluster.types]
        workers = [gavel_worker(t) for t in cluster.types]
        table = np.zeros((len(names), nt), dtype=bool)
        for u, key in enumerate(names):
            if key == "":
                table[u] = True
                continue
            table[u] = [key in k for k in keys]
            if not table[u].any() and key in GAVEL_WORKERS:
                table[u] = [w == GAVEL_WORKERS.index(key) for w in workers]
            if not table[u].any():
                count = int((inv == u).sum())
                raw = str(jobs.gpu_type[int(np.flatnonzero(inv == u)[0])])
                notes.append(
                    f"gpu_type {raw!r} matches no accelerator type of this cluster "
                    f"({count} jobs cannot run)"
                )
        return table[inv]

    # ------------------------------------------------------------------ main entry point

    def prepare(self, jobs: JobTable, cluster: Cluster) -> JobRates:
        """Rates, restore delays and the placement model of ``jobs`` on ``cluster``.

        Loops over the distinct job types and the cluster's types, never over jobs.

        Raises
        ------
        ClustersimError
            On invalid hyper-parameters or an unreadable throughput table.
        """
        self._check()
        table = ThroughputTable.load(self.throughputs)
        f_fit = fit_compute_fractions(table)
        f_gen = self.generic_compute_fraction
        if f_gen is None:
            f_gen = float(np.nanmean(f_fit)) if np.isfinite(f_fit).any() else 0.5
        f_fit = np.where(np.isnan(f_fit), f_gen, f_fit)
        notes: list[str] = []
        n, nt = len(jobs), cluster.n_types
        sfs = table.scale_factors
        n_slots = len(sfs)
        s1 = int(np.flatnonzero(sfs == 1)[0])
        l_net = float(self.measured_network_gbs)

        over = self._overrides(cluster, notes)
        l_cal, node_max, l_nic = self._links(cluster)
        worker = np.array([gavel_worker(t) for t in cluster.types], dtype=np.int64)
        specs = [_spec(t) for t in cluster.types]
        is_ref = worker == GAVEL_WORKERS.index("p100")

        job_type = np.asarray(jobs.job_type, dtype=str) if n else np.zeros(0, dtype=str)
        names, grp = np.unique(job_type, return_inverse=True)
        grp = grp.ravel().astype(np.int64)
        n_groups = len(names)
        num_gpus = jobs.num_gpus

        compute = np.full((n_groups, nt, n_slots), np.inf)
        grad = np.zeros((n_groups, nt, n_slots))
        slot_ok = np.zeros((n_groups, nt, n_slots), dtype=bool)
        slot_meas = np.zeros((n_groups, nt, n_slots), dtype=bool)
        tidx = np.array([table.index(str(x)) for x in names], dtype=np.int64)
        generic_g = tidx < 0
        counts = np.bincount(grp, minlength=n_groups)
        used_types: dict[int, str] = {}
        nospec: set[int] = set()
        caps = 0

        # Generic speed of every type (roofline with the default fraction, or the override).
        gen_speed = np.full(nt, np.nan)
        for a in range(nt):
            if is_ref[a]:
                gen_speed[a] = 1.0
            elif over[a] == over[a]:
                gen_speed[a] = over[a]
            else:
                phi = float(time_factor(f_gen, *specs[a]))
                gen_speed[a] = 1.0 / phi if phi == phi else np.nan

        for g in range(n_groups):
            jt = str(names[g])
            if generic_g[g]:
                for a in range(nt):
                    if gen_speed[a] == gen_speed[a]:
                        compute[g, a, s1] = self.generic_step_s / gen_speed[a]
                        grad[g, a, s1] = self.generic_grad_gb
                        slot_ok[g, a, s1] = True
                    elif counts[g]:
                        nospec.add(a)
                continue
            j = int(tidx[g])
            g_phys = _grad_gb(jt, self.generic_grad_gb)
            f_c = float(f_fit[j])
            cons = table.consolidated[:, j, :]  # (3, S)
            unc = table.unconsolidated[:, j, :]
            has = np.asarray(~np.isnan(cons).all(axis=1), dtype=bool)  # (3,) measured at all
            for a in range(nt):
                w = int(worker[a])
                if w >= 0 and has[w]:
                    for k in np.flatnonzero(~np.isnan(cons[w])):
                        tc, m = float(cons[w, k]), float(sfs[k])
                        slot_ok[g, a, k] = slot_meas[g, a, k] = True
                        if tc <= 0:
                            continue  # measured: does not run (compute stays inf)
                        vol = 2.0 * (m - 1.0) / m
                        tau_c = m / tc
                        lc = float(l_cal[a])
                        gg = g_phys
                        tu = float(unc[w, k])
                        if m > 1 and tu == tu and tu > 0 and lc > l_net:
                            fit = (m / tu - tau_c) / (vol * (1.0 / l_net - 1.0 / lc))
                            if fit > 0:
                                gg = fit
                        if m > 1 and vol * gg / lc > _MAX_COMM_SHARE * tau_c:
                            gg = _MAX_COMM_SHARE * tau_c * lc / vol
                            caps += 1
                        compute[g, a, k] = tau_c - vol * gg / lc
                        grad[g, a, k] = gg
                    continue
                # No own measurement: extrapolate from the closest measured Gavel type.
                cand = [b for b in range(len(GAVEL_WORKERS)) if has[b]]
                if not cand:
                    continue
                fa, ba = specs[a]
                if over[a] == over[a]:
                    p = GAVEL_WORKERS.index("p100")
                    b = p if p in cand else cand[-1]
                    phi_b = float(time_factor(f_c, *GAVEL_DEVICES[GAVEL_WORKERS[b]][:2]))
                    ratio = float(over[a]) * phi_b  # speed of a relative to b
                else:
                    phi_a = float(time_factor(f_c, fa, ba))
                    if phi_a != phi_a:
                        if counts[g]:
                            nospec.add(a)
                        continue
                    b = _closest(cand, fa, ba)
                    phi_b = float(time_factor(f_c, *GAVEL_DEVICES[GAVEL_WORKERS[b]][:2]))
                    ratio = phi_b / phi_a
                used_types[a] = GAVEL_WORKERS[b]
                l_tb = GAVEL_DEVICES[GAVEL_WORKERS[b]][2]
                for k in np.flatnonzero(~np.isnan(cons[b])):
                    tc, m = float(cons[b, k]), float(sfs[k])
                    slot_ok[g, a, k] = True
                    grad[g, a, k] = g_phys
                    if tc <= 0:
                        continue
                    tau_c = m / tc
                    comm = min(2.0 * (m - 1.0) / m * g_phys / l_tb, _MAX_COMM_SHARE * tau_c)
                    compute[g, a, k] = (tau_c - comm) / ratio

        # Unit normaliser: 1 for steps; the nominal model on the reference placement otherwise.
        norm = np.ones(n)
        gen_job = generic_g[grp] if n else np.zeros(0, dtype=bool)
        if gen_job.any():
            big = num_gpus.astype(np.float64)
            l_ref = np.where(
                big <= REFERENCE_NODE_DEVICES, REFERENCE_INTRA_GBS, REFERENCE_NETWORK_GBS
            )
            comm_ref = 2.0 * (big - 1.0) / big * self.generic_grad_gb / l_ref
            norm = np.where(gen_job, big / (self.generic_step_s + comm_ref), 1.0)

        tables = RateTables(
            group=grp,
            norm=norm,
            allowed=self._allowed(jobs, cluster, notes),
            log2_sf=np.log2(sfs.astype(np.float64)),
            compute_s=compute,
            grad_gb=grad,
            slot_ok=slot_ok,
        )

        # Consolidated full-gang rate on every type.
        ng = num_gpus.astype(np.float64)
        fits = ng[:, None] <= node_max[None, :]
        if not self.placement_aware:  # Gavel: every gang runs at its consolidated rate
            fits = np.ones_like(fits)
        link = np.where(fits, l_cal[None, :], l_nic[None, :])
        link = np.where(ng[:, None] <= 1, np.inf, link)
        jj = np.repeat(np.arange(n, dtype=np.int64), nt)
        tt = np.tile(np.arange(nt, dtype=np.int64), n)
        rate = tables.evaluate(jj, tt, np.repeat(num_gpus, nt), link.ravel()).reshape(n, nt)

        # Which rates are measurements, which jobs are extrapolated.
        exact = sfs[None, :] == num_gpus[:, None]  # (n, S)
        has_slot = exact.any(axis=1)
        kk = np.argmax(exact, axis=1)
        measured = slot_meas[grp[:, None], np.arange(nt)[None, :], kk[:, None]]
        measured = measured & has_slot[:, None] & fits & tables.allowed
        meas_pairs = table.measured_pairs()
        extrap = np.zeros(n, dtype=bool)
        pairs: list[tuple[str, int]] = []
        for g in range(n_groups):
            jt = str(names[g])
            if jt == "" or not counts[g]:
                continue
            rows = grp == g
            sizes, cnt = np.unique(num_gpus[rows], return_counts=True)
            for sf, c in zip(sizes.tolist(), cnt.tolist(), strict=True):
                if (jt, sf) in meas_pairs:
                    continue
                extrap |= rows & (num_gpus == sf)
                pairs.append((jt, int(sf)))
                if generic_g[g]:
                    continue
                near = _nearest(sorted(s for t, s in meas_pairs if t == jt), sf)
                notes.append(
                    f"{jt} at scale factor {sf}: no measurement; scaled from scale factor "
                    f"{near} with the ring all-reduce model ({c} jobs)"
                )
            if generic_g[g]:
                notes.append(
                    f"job type {jt!r} has no measured throughput: nominal model, work in "
                    f"reference seconds ({int(counts[g])} jobs)"
                )
        for a, src in sorted(used_types.items()):
            notes.append(
                f"{cluster.types[a].name}: no measured throughputs; measured job types "
                + (
                    f"scaled from {src.upper()} by the speed override {over[a]:g}"
                    if over[a] == over[a]
                    else f"extrapolated from {src.upper()} with the roofline rule"
                )
            )
        for a in sorted(nospec):
            notes.append(
                f"{cluster.types[a].name}: no FP16/bandwidth specs and no speed override; "
                "jobs without a measurement on it cannot run there"
            )
        for a in range(nt):
            if over[a] == over[a] and worker[a] >= 0 and not is_ref[a]:
                notes.append(
                    f"speed override for {cluster.types[a].name} applies only to jobs without "
                    "a measurement on it"
                )
        if caps:
            notes.append(
                f"{caps} measured (job type, type, scale factor) entries: communication capped "
                f"at {_MAX_COMM_SHARE:.0%} of the measured step (slow intra-node link)"
            )

        nowhere: BoolArray = np.zeros(n, dtype=bool)
        if self.fit_check and n:
            from clustersim.fit import fit_table  # fit builds on this module

            device_fit = fit_table([str(x) for x in names], cluster, counts.tolist(), table)
            ok = device_fit.table[grp]
            runs = rate > 0
            nowhere = np.asarray(runs.any(axis=1) & ~(runs & ok).any(axis=1), dtype=bool)
            rate = np.where(ok, rate, 0.0)
            measured = measured & ok
            tables = replace(tables, allowed=tables.allowed & ok)
            notes.extend(device_fit.notes)
            if nowhere.any():
                n_out = int(nowhere.sum())
                verb = "job fits" if n_out == 1 else "jobs fit"
                notes.append(
                    f"{n_out} {verb} no accelerator type of this cluster (device memory or "
                    "framework): dropped"
                )

        return JobRates(
            rate=rate,
            restore_s=self._restore(names)[grp] if n else np.zeros(0),
            extrapolated=extrap,
            generic=gen_job,
            measured=measured,
            extrapolated_pairs=tuple(sorted(set(pairs))),
            notes=tuple(notes),
            tables=tables if self.placement_aware else None,
            fits_nowhere=nowhere,
        )


def _closest(cand: list[int], flops: float, bw: float) -> int:
    """Gavel worker among ``cand`` nearest to (``flops``, ``bw``) in log space; ties → V100."""
    best, best_d = cand[-1], math.inf
    for b in reversed(cand):  # v100 first, so that ties keep the newer type
        fb, bb, _ = GAVEL_DEVICES[GAVEL_WORKERS[b]]
        d = 0.0
        if flops == flops:
            d += math.log(flops / fb) ** 2
        if bw == bw:
            d += math.log(bw / bb) ** 2
        if d < best_d - 1e-12:
            best, best_d = b, d
    return best


def _nearest(measured: list[int], sf: int) -> int:
    """Measured scale factor nearest to ``sf`` in log2 (ties to the smaller); ``sf`` if none."""
    if not measured:
        return sf
    return min(measured, key=lambda m: (abs(math.log2(sf) - math.log2(m)), m))
