"""Which jobs a device can hold: device memory and software stack, per job type.

:func:`can_run` gives the (jobs × accelerator types) mask of where each job *can* run at all,
before any question of speed: its model must fit in one device's memory, and its framework
must run on that kind of accelerator. The performance model (:mod:`clustersim.perf`) ands it
with the ``gpu_type`` constraint, so the engine never starts a job on a type outside it, and
a job that no type of the cluster can hold is dropped as "fits nowhere"
(:data:`clustersim.result.DROP_NO_FIT`, counted as ``jobs_fit_nowhere`` by
:func:`clustersim.metrics.summary`). Compatibility modes (:mod:`clustersim.compat`) turn the
check off: the simulators they reproduce do not model it.

Job types and what they need
----------------------------
The check applies to the job types this module documents (:func:`needs`); every other job,
including jobs without a job type (most traces: Philly, Helios, Alibaba), is not checked and
may run on any type. Their model and batch size are unknown, and their work is abstract
reference seconds that a what-if study may well put on TPUs.

Gavel's 26 job types (``"ResNet-50 (batch size 64)"``; stanford-futuredata/gavel
``scheduler/job_table.py`` and ``workloads/pytorch``): PyTorch on CUDA, with a per-device
memory footprint estimated as::

    footprint = processes × (OVERHEAD_GB + state + batch × activations)

* ``OVERHEAD_GB`` = 0.5 GB: CUDA context, cuDNN/cuBLAS handles and workspace (an estimate;
  the caching allocator's fragmentation is not counted, so footprints lean low and the
  check errs towards letting a job run);
* ``state`` = parameters × 4 B × (2 + optimiser slots): fp32 weights, gradients and
  optimiser state, with the parameter counts of :data:`clustersim.perf.MODEL_PARAMETERS`;
* ``batch``: the per-worker batch size in the job type's name (Gavel's batch size is per
  worker, so the footprint does not depend on the scale factor); 1 for A3C and CycleGAN;
* ``activations`` (:data:`ACTIVATION_GB`, GB per sample, fp32): the tensors autograd keeps
  for the backward pass, counted layer by layer for the model as Gavel runs it:

  - ResNet-50, ImageNet 224×224 (torchvision, in-place ReLU): a conv + BN (+ ReLU) keeps two
    tensors of its output's size, a bottleneck's last conv + BN + add three, a shortcut two:
    28.3 M floats, 0.113 GB;
  - ResNet-18, CIFAR-10 32×32 (kuangliu/pytorch-cifar, out-of-place ``F.relu``): three tensors
    per conv + BN + ReLU, four for the second of a block: 2.04 M floats, 0.0081 GB;
  - Transformer base on Multi30k (jadore801120, d_model 512, d_inner 2048, 8 heads, 6 + 6
    layers): per token an attention block keeps 7 d_model + 3 heads × L floats, a
    feed-forward block 2 d_inner + 3 d_model; sentences padded to L = 32 tokens, output layer
    over a 10,000-word vocabulary (logits and log-softmax): 5.4 M floats, 0.0215 GB;
  - LM (PyTorch word_language_model, 2-layer LSTM of 200, 35-step BPTT, WikiText-2 vocabulary
    33,278): per step about 3,600 floats of embedding, gates and states plus 2 × 33,278 of
    logits and log-softmax: 2.46 M floats, 0.0098 GB;
  - Recommendation (Recoder autoencoder, 20,108 items, hidden layer 200; all items taken as
    present): 80.8 k floats, 0.00032 GB;
  - A3C (Gavel's ``--workers 4``: four processes, each with its own CUDA context and model
    copy on the GPU): a 20-step rollout of 80×80 frames through the conv-LSTM model,
    13.4 M floats, 0.054 GB per process;
  - CycleGAN (eriklindernoren/PyTorch-GAN, 256×256, batch 1, 9-block ResNet generators):
    six generator passes (two translations, two reconstructions, two identities) of 112 M
    floats each and six PatchGAN passes: 692 M floats, 2.77 GB.

These are estimates, stated so that they can be checked. They agree with what Gavel
measured: every job type ran on a 16 GB P100 and V100, and all but one on a 12 GB K80 die by
the estimate; the exception, ResNet-50 with batch size 128 (15.3 GB), was measured on K80 at
scale factor 1 (0.35 steps/s) but at 0 at scale factors 2, 4 and 8 — it did not fit once
data-parallel training added its buffers. **Measurements win**: a job type with a positive
measured throughput on a Gavel worker type (K80, P100, V100; any scale factor) passes the
memory check there, whatever the estimate.

Pollux's applications (``bert``, ``cifar10``, ``deepspeech2``, ``imagenet``, ``ncf``,
``yolov3``: PyTorch with AdaptDL), Synergy's models (``res18``, ``res50``, ``gnmt``, ...:
PyTorch) and Tiresias's (``vgg19``, ``resnet50``, ``inception3``, ...: TensorFlow's CNN
benchmarks) have a known framework but no known per-device batch (it varies by job), so
only the framework is checked (:data:`MODEL_FRAMEWORKS`).

Devices
-------
A device's memory is its catalog ``memory_gb``, except that a K80 device is one GK210 die
with :data:`K80_DIE_MEMORY_GB` = 12 GB: the catalog row is per two-die board (its own note
says so), while clusters count K80s as Gavel and the clouds do, per die (the performance model
does the same, :data:`clustersim.perf.GAVEL_DEVICES`). Memory shared with a CPU (Jetson
modules) is counted whole.

A device's software platform follows its kind and vendor (the catalog's ``manufacturer``,
looked up by the type's name or alias): NVIDIA GPUs and NVIDIA edge modules (Jetson, which
run CUDA builds of PyTorch and TensorFlow) are ``"cuda"``; AMD GPUs are ``"rocm"``; TPUs
``"tpu"``; NPUs (Gaudi) ``"npu"``; a GPU or edge type that is not in the catalog (a
user-defined type, vendor unknown) is ``"gpu"``.

Frameworks (:data:`FRAMEWORK_PLATFORMS`): PyTorch and TensorFlow job types run on ``cuda``,
``rocm`` and ``gpu``. AMD is allowed because both frameworks ship ROCm builds that run CUDA-
targeted model code unchanged (PyTorch's ``torch.cuda`` API maps to HIP), and these workloads
use no custom CUDA kernels. TPUs and Gaudi NPUs are not: running there takes code changes
(PyTorch/XLA devices and step marking, a TPU distribution strategy for TensorFlow, Intel
Gaudi's PyTorch bridge), which these job types, as traced, do not have.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from clustersim.catalog import catalog_rows, load_catalog
from clustersim.cluster import AcceleratorType, Cluster
from clustersim.jobs import JobTable
from clustersim.perf import GAVEL_WORKERS, MODEL_PARAMETERS, ThroughputTable, family, gavel_worker

BoolArray = npt.NDArray[np.bool_]

#: CUDA context, cuDNN/cuBLAS handles and workspace of one process, GB.
OVERHEAD_GB = 0.5
#: Memory of one K80 device (one GK210 die), GB.
K80_DIE_MEMORY_GB = 12.0

#: Gavel model family → (activation memory per sample in GB, batch size of the job type
#: without a ``(batch size N)`` (0: the name must give one), processes on the device);
#: derivations in the module docstring.
ACTIVATION_GB: Mapping[str, tuple[float, int, int]] = MappingProxyType(
    {
        "ResNet-18": (0.0081, 0, 1),
        "ResNet-50": (0.113, 0, 1),
        "Transformer": (0.0215, 0, 1),
        "LM": (0.0098, 0, 1),
        "Recommendation": (0.00032, 0, 1),
        "A3C": (0.054, 1, 4),
        "CycleGAN": (2.77, 1, 1),
    }
)

#: Job types known by model name only → framework (per-device footprint unknown).
MODEL_FRAMEWORKS: Mapping[str, str] = MappingProxyType(
    {
        # Pollux applications (petuum/adaptdl, PyTorch)
        "bert": "pytorch",
        "cifar10": "pytorch",
        "deepspeech2": "pytorch",
        "imagenet": "pytorch",
        "ncf": "pytorch",
        "yolov3": "pytorch",
        # Synergy models (msr-fiddle/synergy, PyTorch); Tiresias's alexnet is TensorFlow's,
        # which runs on the same platforms
        "alexnet": "pytorch",
        "res18": "pytorch",
        "res50": "pytorch",
        "mobilenet": "pytorch",
        "shufflenet": "pytorch",
        "deepspeech": "pytorch",
        "m5": "pytorch",
        "transformer": "pytorch",
        "gnmt": "pytorch",
        "lstm": "pytorch",
        # Tiresias models (TensorFlow CNN benchmarks)
        "googlenet": "tensorflow",
        "inception3": "tensorflow",
        "inception4": "tensorflow",
        "resnet50": "tensorflow",
        "resnet101": "tensorflow",
        "resnet152": "tensorflow",
        "vgg11": "tensorflow",
        "vgg16": "tensorflow",
        "vgg19": "tensorflow",
    }
)

#: Software platforms of devices (see :func:`platform`).
PLATFORMS: tuple[str, ...] = ("cuda", "rocm", "tpu", "npu", "gpu")
#: Framework → platforms its job types run on.
FRAMEWORK_PLATFORMS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "pytorch": frozenset({"cuda", "rocm", "gpu"}),
        "tensorflow": frozenset({"cuda", "rocm", "gpu"}),
    }
)
_FRAMEWORK_NAMES = {"pytorch": "PyTorch", "tensorflow": "TensorFlow"}
_BATCH = re.compile(r"\(batch size (\d+)\)\s*$")


@dataclass(frozen=True)
class Needs:
    """What a job type needs of a device.

    Attributes
    ----------
    framework
        ``"pytorch"`` or ``"tensorflow"`` (a key of :data:`FRAMEWORK_PLATFORMS`).
    memory_gb
        Per-device footprint, GB; ``nan`` when unknown (memory not checked).
    """

    framework: str
    memory_gb: float


def needs(job_type: str) -> Needs | None:
    """What ``job_type`` needs of a device, or ``None`` for a job type this module does not
    document (such jobs are not checked).

    Gavel job types match exactly (``"ResNet-50 (batch size 64)"``; ``"A3C"``); model names
    (:data:`MODEL_FRAMEWORKS`) match without regard to case or surrounding spaces.
    """
    fam = family(job_type)
    if fam in ACTIVATION_GB and fam in MODEL_PARAMETERS:
        act, batch, processes = ACTIVATION_GB[fam]
        m = _BATCH.search(job_type)
        if m is not None:
            batch = int(m.group(1))
        elif job_type.strip() != fam:
            batch = 0
        if batch <= 0:
            return None
        params, slots = MODEL_PARAMETERS[fam]
        state = params * 4.0 * (2 + slots) / 1e9
        return Needs("pytorch", processes * (OVERHEAD_GB + state + batch * act))
    framework = MODEL_FRAMEWORKS.get(job_type.strip().lower())
    return None if framework is None else Needs(framework, math.nan)


def _vendors() -> dict[str, str]:
    return {r.type.name: r.manufacturer.strip().lower() for r in catalog_rows()}


def platform(acc: AcceleratorType) -> str:
    """Software platform of ``acc``: ``"cuda"``, ``"rocm"``, ``"tpu"``, ``"npu"`` or ``"gpu"``
    (a GPU or edge type whose vendor the catalog does not know)."""
    if acc.kind in ("tpu", "npu"):
        return acc.kind
    vendors = _vendors()
    vendor = vendors.get(acc.name)
    if vendor is None:
        known = load_catalog().resolve(acc.name)
        vendor = vendors.get(known.name) if known is not None else None
    return {"nvidia": "cuda", "amd": "rocm"}.get(vendor or "", "gpu")


def device_memory_gb(acc: AcceleratorType) -> float:
    """Memory of one device of ``acc``, GB (a K80 device is one 12 GB die)."""
    if gavel_worker(acc) == GAVEL_WORKERS.index("k80"):
        return min(float(acc.memory_gb), K80_DIE_MEMORY_GB)
    return float(acc.memory_gb)


@dataclass(frozen=True, eq=False)
class Fit:
    """Where each of a set of job types can run.

    Attributes
    ----------
    table : (k, n_types) bool
        Row ``i``: the accelerator types job type ``i`` can run on.
    notes : tuple of str
        What the check excluded, with job counts (for run reports).
    """

    table: BoolArray
    notes: tuple[str, ...]


def fit_table(
    job_types: Sequence[str],
    cluster: Cluster,
    counts: Sequence[int] | None = None,
    throughputs: ThroughputTable | None = None,
) -> Fit:
    """The fit check for distinct job types (loops over job types × accelerator types only).

    Parameters
    ----------
    job_types
        Distinct job types (``""``: none).
    cluster
        Its accelerator types are checked.
    counts
        Jobs of each job type, for the notes (default 1 each).
    throughputs
        Measured throughputs whose positive entries pass the memory check on their Gavel
        worker type; default the shipped Gavel table.

    Returns
    -------
    Fit
    """
    table = throughputs if throughputs is not None else ThroughputTable.load()
    nt = cluster.n_types
    k = len(job_types)
    cnt = [1] * k if counts is None else [int(c) for c in counts]
    out = np.ones((k, nt), dtype=bool)
    plat = [platform(t) for t in cluster.types]
    mem = np.array([device_memory_gb(t) for t in cluster.types], dtype=np.float64)
    worker = [gavel_worker(t) for t in cluster.types]
    measured = np.zeros((len(GAVEL_WORKERS), len(table.job_types)), dtype=bool)
    if len(table.job_types):
        measured = np.asarray((np.nan_to_num(table.consolidated) > 0).any(axis=2), dtype=bool)
    too_small: dict[int, list[tuple[str, float, int]]] = {}
    wrong: dict[int, list[tuple[str, int]]] = {}
    for i, jt in enumerate(job_types):
        need = needs(str(jt))
        if need is None:
            continue
        ok_plat = np.array([p in FRAMEWORK_PLATFORMS[need.framework] for p in plat], dtype=bool)
        ok_mem = np.ones(nt, dtype=bool)
        if math.isfinite(need.memory_gb):
            ok_mem = need.memory_gb <= mem
            j = table.index(str(jt))
            if j >= 0:
                ok_mem |= np.array([w >= 0 and measured[w, j] for w in worker], dtype=bool)
        out[i] = ok_plat & ok_mem
        for a in range(nt):
            if not ok_plat[a]:
                wrong.setdefault(a, []).append((str(jt), cnt[i]))
            elif not ok_mem[a]:
                too_small.setdefault(a, []).append((str(jt), need.memory_gb, cnt[i]))
    notes: list[str] = []
    for a in range(nt):
        acc = cluster.types[a]
        if a in wrong:
            items = wrong[a]
            frameworks = sorted(
                {_FRAMEWORK_NAMES[n.framework] for t, _ in items if (n := needs(t)) is not None}
            )
            notes.append(
                f"{acc.name} ({plat[a]}): {'/'.join(frameworks)} job types cannot run there "
                f"({_count(sum(c for _, c in items), 'job')} of "
                f"{_count(len(items), 'job type')})"
            )
        if a in too_small:
            items_m = sorted(too_small[a], key=lambda x: -x[1])
            listed = ", ".join(f"{t} {gb:.3g} GB" for t, gb, _ in items_m[:3])
            more = ", ..." if len(items_m) > 3 else ""
            notes.append(
                f"{acc.name} ({mem[a]:g} GB per device) is too small for "
                f"{_count(len(items_m), 'job type')} ({listed}{more}): "
                f"{_count(sum(c for _, _, c in items_m), 'job')} cannot run there"
            )
    return Fit(table=out, notes=tuple(notes))


def _count(k: int, noun: str) -> str:
    return f"{k} {noun}" if k == 1 else f"{k} {noun}s"


def can_run(
    jobs: JobTable, cluster: Cluster, throughputs: ThroughputTable | None = None
) -> tuple[BoolArray, tuple[str, ...]]:
    """Where each job can run, by device memory and framework (module docstring).

    Parameters
    ----------
    jobs
        The workload.
    cluster
        The inventory.
    throughputs
        Measured throughputs (see :func:`fit_table`).

    Returns
    -------
    mask : (n, n_types) bool
        ``mask[i, t]``: job ``i`` fits a device of type ``t`` and its framework runs there.
        All true for jobs whose job type this module does not document.
    notes : tuple of str
        What the check excluded, with job counts.
    """
    n = len(jobs)
    if n == 0:
        return np.ones((0, cluster.n_types), dtype=bool), ()
    names, inv, counts = np.unique(
        np.asarray(jobs.job_type, dtype=str), return_inverse=True, return_counts=True
    )
    fit = fit_table([str(x) for x in names], cluster, counts.tolist(), throughputs)
    return fit.table[inv.ravel()], fit.notes
