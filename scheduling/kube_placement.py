"""The default kube-scheduler's filter and scores as placement strategies
(``k8s-least-allocated``, ``k8s-most-allocated``).

Source: Kubernetes v1.31, ``pkg/scheduler/framework/plugins/noderesources``
(``fit.go``, ``least_allocated.go``, ``most_allocated.go``, ``balanced_allocation.go``) and
``pkg/scheduler/apis/config/v1/default_plugins.go``; the "Resource Bin Packing" and
"Scheduler Configuration" pages of kubernetes.io. Read there, written here in our words.

What the kube-scheduler does, rule by rule, and what is modelled:

* **Pods.** A gang of ``g`` devices is ``k = ceil(g / P)`` pods, ``P`` the most devices a
  node of the type has (in the whole cluster, as ``kubernetes``' admission counts them),
  of as equal sizes as possible (the larger first): a training job's workers, each on one
  node. Pods are scheduled one after the other, each seeing the nodes
  as the earlier ones left them (the scheduler binds one pod per cycle). The gang is placed
  whole or not at all (it waits): Kueue admitted it whole.
* **Filter** (``NodeResourcesFit``): a node passes when the pod's requests fit its
  allocatable minus what is requested there: devices (``nvidia.com/gpu``) and, when the
  run has the CPU and memory model (``docs/resources.md``), cores and memory (the engine
  gives the strategy the devices whose CPU and memory share fit each node).
* **Score** ``NodeResourcesFit`` (plugin weight 1) with ``scoringStrategy.type``
  ``LeastAllocated`` (the default) or ``MostAllocated``, over the resources
  ``nvidia.com/gpu``, ``cpu`` and ``memory``, each of weight 1 (Kubernetes' defaults are
  ``cpu`` and ``memory``; GPU clusters add the extended resource, as the bin-packing page
  shows). Per resource, with ``requested`` including the pod::

      LeastAllocated: (capacity − requested) × 100 // capacity   (0 if requested > capacity)
      MostAllocated:  min(requested, capacity) × 100 // capacity

  and the node's score is ``Σ score × weight // Σ weight`` (integer division, as in Go).
* **Score** ``NodeResourcesBalancedAllocation`` (plugin weight 1) over ``cpu`` and
  ``memory`` (its defaults): ``int((1 − std) × 100)`` of the requested fractions
  (``|f_cpu − f_mem| / 2`` for two); the same for every node when fewer than two resources
  are limited or the pod asks for neither (Kubernetes skips it for best-effort pods).
* The node with the highest ``fit + balanced`` gets the pod.

Departures:

* Units: cores in millicores and memory in MiB (Kubernetes: bytes), so the integer
  divisions may round differently by one point in rare cases.
* A resource the node does not limit (no ``cpu_cores`` / ``host_mem_gb`` in the cluster
  spec, or no CPU and memory model in the run) is left out of both scores and of the
  weight sum (Kubernetes always has CPU and memory allocatable).
* Ties go to the lowest node index (the kube-scheduler picks one of the best at random).
* The other default score plugins (``TaintToleration``, ``NodeAffinity``,
  ``PodTopologySpread``, ``InterPodAffinity``, ``ImageLocality``) score every node alike
  here (no taints, affinities, spread constraints or images), so they are left out.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from clustersim.cluster import Cluster
from scheduling.base import IntArray, Placement

MAX_NODE_SCORE = 100


def pod_sizes(ndev: int, per_node: int) -> list[int]:
    """Devices of each pod of a gang of ``ndev`` on nodes of at most ``per_node`` devices:
    ``ceil(ndev / per_node)`` pods of equal sizes, the larger first."""
    k = -(-ndev // max(per_node, 1))
    base, extra = divmod(ndev, k)
    return [base + 1] * extra + [base] * (k - extra)


def fit_scores(requested: np.ndarray, capacity: np.ndarray, most: bool) -> np.ndarray:
    """(c,) int64: LeastAllocated (``most`` False) or MostAllocated score of one resource
    on each node, integers 0..100 as the kube-scheduler computes them."""
    req = requested.astype(np.int64)
    cap = capacity.astype(np.int64)
    safe = np.maximum(cap, 1)
    if most:
        s = np.minimum(req, cap) * MAX_NODE_SCORE // safe
    else:
        s = np.where(req > cap, 0, (cap - req) * MAX_NODE_SCORE // safe)
    return np.where(cap > 0, s, 0).astype(np.int64)


def balanced_scores(fractions: list[np.ndarray]) -> np.ndarray | int:
    """``NodeResourcesBalancedAllocation``: ``int((1 − std) × 100)`` of the requested
    fractions (each (c,), clipped at 1) of the limited resources; 100 for fewer than two."""
    if len(fractions) < 2:
        return MAX_NODE_SCORE
    fr = np.minimum(np.vstack(fractions), 1.0)
    if len(fractions) == 2:
        std = np.abs((fr[0] - fr[1]) / 2)
    else:
        std = np.sqrt(((fr - fr.mean(axis=0)) ** 2).mean(axis=0))
    return ((1.0 - std) * MAX_NODE_SCORE).astype(np.int64)


class _KubeScoring(Placement):
    """The kube-scheduler's filter and scores (module doc); subclasses pick the strategy."""

    most: ClassVar[bool] = False
    #: Take the one-pod shortcut when devices are the only resource scored (the same
    #: choice as the general loop; ``False`` in the test that checks so).
    fast: ClassVar[bool] = True
    may_decline = True  # each pod on one node: the free devices may be too scattered

    def __init__(self) -> None:
        self._aux: Any = None
        self._sizes: dict[tuple[int, int], int] = {}

    def bind_resources(self, aux: Any) -> None:
        self._aux = aux

    def _per_node(self, cluster: Cluster, t: int) -> int:
        """The most devices a node of type ``t`` has (the pod size limit)."""
        key = (id(cluster), t)
        got = self._sizes.get(key)
        if got is None:
            got = self._sizes[key] = int(cluster.node_devices[cluster.node_type == t].max())
        return got

    def choose(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, f: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        aux = self._aux
        cap_gpu = cluster.node_devices[candidates]
        with_aux = aux is not None and aux.job >= 0 and len(aux.node_free) == len(free)
        per_node = self._per_node(cluster, int(cluster.node_type[candidates[0]]))
        if not with_aux and self.fast and ndev <= per_node:
            # one pod, devices the only resource scored: the best NodeResourcesFit score
            # among the nodes that hold it (BalancedAllocation is the same on every node)
            score = fit_scores(cap_gpu - f + ndev, cap_gpu, self.most)
            i = int(np.argmax(np.where(f >= ndev, score, -1)))
            if f[i] < ndev:
                return None
            return candidates[i : i + 1], np.array([ndev], dtype=np.int64)
        if with_aux:
            j = int(aux.job)
            real_free = aux.node_free[candidates]
            cpu_cap = aux.cpu_cap[candidates]
            mem_cap = aux.mem_cap[candidates]
            cpu_used = cpu_cap - aux.cpu_free[candidates]
            mem_used = mem_cap - aux.mem_free[candidates]
            cpu_dev, mem_dev = float(aux.cpu_dev[j]), float(aux.mem_dev[j])
        else:
            real_free = f
            cpu_cap = mem_cap = np.full(len(candidates), np.inf)
            cpu_used = mem_used = np.zeros(len(candidates))
            cpu_dev = mem_dev = 0.0
        gpu_used = cap_gpu - real_free
        taken = np.zeros(len(candidates), dtype=np.int64)
        lim_cpu = np.isfinite(cpu_cap)
        lim_mem = np.isfinite(mem_cap)
        for s in pod_sizes(ndev, per_node):
            ok = f - taken >= s  # the filter: the pod fits the node
            if not ok.any():
                return None
            after = taken + s
            total = fit_scores(gpu_used + after, cap_gpu, self.most)
            weights = np.ones(len(candidates), dtype=np.int64)
            fractions = []
            for lim, cap, used, per in (
                (lim_cpu, cpu_cap, cpu_used, cpu_dev),
                (lim_mem, mem_cap, mem_used, mem_dev),
            ):
                if not lim.any():
                    continue
                scale = 1000.0 if cap is cpu_cap else 1024.0  # millicores, MiB
                c_int = np.where(lim, np.round(np.where(lim, cap, 0) * scale), 0)
                r_int = np.where(lim, np.round((used + after * per) * scale), 0)
                total = total + np.where(lim, fit_scores(r_int, c_int, self.most), 0)
                weights = weights + lim
                if lim.all():
                    fractions.append(r_int / np.maximum(c_int, 1))
            if cpu_dev == 0 and mem_dev == 0:
                fractions = []  # a best-effort pod: BalancedAllocation skips it
            score = total // weights + balanced_scores(fractions)
            i = int(np.argmax(np.where(ok, score, -1)))
            taken[i] += s
        used = taken > 0
        return candidates[used], taken[used]


class KubeLeastAllocated(_KubeScoring):
    """kube-scheduler with ``NodeResourcesFit`` ``LeastAllocated`` (the default): pods go
    to the emptiest node (module doc)."""

    name = "k8s-least-allocated"
    most = False


class KubeMostAllocated(_KubeScoring):
    """kube-scheduler with ``NodeResourcesFit`` ``MostAllocated`` (bin packing): pods go to
    the fullest node that holds them (module doc)."""

    name = "k8s-most-allocated"
    most = True
