"""Placement strategies: which nodes a job's devices come from.

All strategies receive the candidate nodes (holding the wanted accelerator type and at least
one free device) and return per-node counts. Ties are broken by node index, so placement is
deterministic; :class:`RandomPlacement` draws from the run's seeded generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clustersim.cluster import Cluster
from clustersim.kernels import best_fit_node, take_largest_first, yarn_nodes
from scheduling.base import IntArray, Placement

_BIG = np.iinfo(np.int64).max
_EMPTY = np.zeros(0, dtype=np.int64)


def _fill_in_order(nodes: IntArray, f: IntArray, ndev: int) -> tuple[IntArray, IntArray]:
    """Take the free devices ``f`` of ``nodes`` in the given order until ``ndev`` are taken."""
    cum = np.cumsum(f)
    k = int(np.searchsorted(cum, ndev)) + 1
    counts = f[:k].copy()
    counts[-1] -= int(cum[k - 1]) - ndev
    return nodes[:k], counts


def _take_largest_first(free: IntArray, nodes: IntArray, ndev: int) -> tuple[IntArray, IntArray]:
    """Fill ``ndev`` devices from ``nodes`` taking the freest nodes first (fewest nodes)."""
    return take_largest_first(free, np.ascontiguousarray(nodes, dtype=np.int64), ndev)


class Consolidate(Placement):
    """Fewest nodes: best-fit into one node when possible, else freest nodes first.

    Best fit (the node with the fewest free devices that still holds the whole gang) keeps
    large holes open for large gangs, as in Gandiva/Tiresias' consolidated placement.
    """

    name = "consolidate"
    best_fit_one_node = True
    largest_first_across_nodes = True

    def choose(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, f: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        i = best_fit_node(f, _EMPTY, ndev)
        if i >= 0:
            return candidates[i : i + 1], np.array([ndev], dtype=np.int64)
        return _take_largest_first(free, candidates, ndev)


class Spread(Placement):
    """One device per node where possible (round-robin over the freest nodes)."""

    name = "spread"

    def choose(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, f: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        order = np.lexsort((candidates, -f))
        nodes, f = candidates[order], f[order]
        counts = np.zeros(len(nodes), dtype=np.int64)
        left = ndev
        while left > 0:  # each pass adds one device to every node that still has room
            room = f > counts
            take = np.flatnonzero(room)[:left]
            counts[take] += 1
            left -= len(take)
        used = counts > 0
        return nodes[used], counts[used]


class RandomPlacement(Placement):
    """Nodes in a random order (seeded), filled in that order.

    The order is drawn from the run's seed (``uses_seed``): the one strategy whose results an
    experiment's seeds change, so each seed is a run of its own.
    """

    name = "random"
    uses_seed = True

    def reset(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def choose(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, f: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        order = self._rng.permutation(len(candidates))
        return _fill_in_order(candidates[order], f[order], ndev)


class TopologyAware(Placement):
    """Fewest racks, then fewest nodes.

    A gang that fits in one node goes to the best-fitting node (one rack, one node).
    Otherwise, if one rack can hold it, the rack with the fewest free devices that can is
    chosen (best fit) and the gang is consolidated inside it; otherwise racks are taken
    freest first.
    """

    name = "topology"
    best_fit_one_node = True

    def choose(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, f: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        inner = Consolidate()
        if (f >= ndev).any():
            return inner.choose(cluster, free, candidates, f, ndev)
        racks = cluster.node_rack[candidates]
        rack_free = np.bincount(racks, weights=f).astype(np.int64)
        fits = rack_free >= ndev
        if fits.any():
            r = int(np.argmin(np.where(fits, rack_free, _BIG)))
            sel = racks == r
            return inner.choose(cluster, free, candidates[sel], f[sel], ndev)
        chosen_nodes: list[IntArray] = []
        chosen_counts: list[IntArray] = []
        left = ndev
        for r in np.lexsort((np.arange(len(rack_free)), -rack_free)):
            if left == 0 or rack_free[r] == 0:
                break
            take = min(left, int(rack_free[r]))
            nodes, counts = _take_largest_first(free, candidates[racks == r], take)
            chosen_nodes.append(nodes)
            chosen_counts.append(counts)
            left -= take
        return np.concatenate(chosen_nodes), np.concatenate(chosen_counts)


class CommAware(Placement):
    """Least bandwidth lost: one node if possible, else one rack, else the racks whose uplinks
    leave the gang the most bandwidth (not merely the fewest racks).

    A gang that fits in one node goes to the best-fitting node, and one that fits in a rack
    to the best-fitting rack (as :class:`TopologyAware`): neither crosses an uplink. A gang
    that must cross racks gets the best bandwidth any set of racks holding it can give (rank
    the racks by the bandwidth it would get on their uplinks; the last rack of the shortest
    prefix that holds it sets it) from the fewest racks: the freest of the racks at least
    that good (ties: lower index), consolidated inside each rack. The gang's bandwidth is the
    least over the racks it crosses, so no set of racks gives more; fewer racks load fewer
    uplinks.

    The bandwidth on rack ``k``'s uplink is ``min(nic_k, max(C_k − load_k,
    C_k / (users_k + 1)))``: the max-min share a new job would at least get (the residual
    capacity, or an equal split with the ``users_k`` jobs crossing it now), capped by the
    rack's NIC, read from the network model's live view
    (:class:`clustersim.network.NetworkView`). Gangs placed before the model next shares
    the links (several starts of one decision) count on the uplinks they cross with the
    bandwidth estimated for them. Without network contention: the engine's static rule,
    ``nic_k / oversub_k``.

    This is the consolidation of Tiresias (Gu et al., NSDI'19, §4.2) and Themis (Mahajan et
    al., NSDI'20), made aware of current uplink load as network-aware schedulers are
    (CASSINI, Rajasekaran et al., NSDI'24, places jobs to avoid congested links). Departure:
    the estimate ignores NICs shared with other jobs.
    """

    name = "comm-aware"
    best_fit_one_node = True

    def __init__(self) -> None:
        self._view: Any = None
        self._version = -1  # the view's version the gangs below were placed after
        self._load = np.zeros(0)  # their estimated load on each uplink, and their count
        self._users = np.zeros(0, dtype=np.int64)

    def bind_network(self, view: Any) -> None:
        self._view = view
        self._version = -1

    def uplink_bandwidth(self, cluster: Cluster, candidates: IntArray) -> np.ndarray:
        """(n_racks,) bandwidth (GB/s) a new gang on ``candidates`` would get on each rack's
        uplink (class doc), counting the gangs this strategy placed since the model last
        shared the links."""
        n_racks = len(cluster.rack_oversub)
        nic = np.zeros(n_racks)
        np.maximum.at(nic, cluster.node_rack[candidates], cluster.node_nic_gbps[candidates] / 8.0)
        view = self._view
        if view is None:
            return nic / cluster.rack_oversub
        if self._version != int(view.version[0]):
            self._version = int(view.version[0])
            self._load = np.zeros(n_racks)
            self._users = np.zeros(n_racks, dtype=np.int64)
        cap = view.uplink_cap
        load = view.uplink_load + self._load
        left = np.maximum(cap - load, cap / (view.uplink_users + self._users + 1))
        return np.minimum(nic, left)

    def choose(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, f: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        inner = Consolidate()
        if (f >= ndev).any():
            return inner.choose(cluster, free, candidates, f, ndev)
        racks = cluster.node_rack[candidates]
        n_racks = len(cluster.rack_oversub)
        rack_free = np.bincount(racks, weights=f, minlength=n_racks).astype(np.int64)
        fits = rack_free >= ndev
        if fits.any():
            r = int(np.argmin(np.where(fits, rack_free, _BIG)))
            sel = racks == r
            return inner.choose(cluster, free, candidates[sel], f[sel], ndev)
        bw = self.uplink_bandwidth(cluster, candidates)
        # the best bandwidth any set of racks holding the gang can have: the racks ranked by
        # bandwidth, the last one of the shortest prefix that holds it
        has = rack_free > 0
        rank = np.lexsort((np.arange(n_racks), -rack_free, -bw))
        rank = rank[has[rank]]
        last = int(np.searchsorted(np.cumsum(rack_free[rank]), ndev))
        best = bw[rank[last]]
        # the fewest racks that give it: the freest of the racks at least that good
        ok = has & (bw >= best)
        order = np.lexsort((np.arange(n_racks), -rack_free))
        order = order[ok[order]]
        used: list[int] = []
        chosen_nodes: list[IntArray] = []
        chosen_counts: list[IntArray] = []
        left = ndev
        for r in order.tolist():
            if left == 0:
                break
            if rack_free[r] == 0:
                continue
            take = min(left, int(rack_free[r]))
            nodes, counts = _take_largest_first(free, candidates[racks == r], take)
            chosen_nodes.append(nodes)
            chosen_counts.append(counts)
            left -= take
            used.append(r)
        if self._view is not None:  # until the model shares the links anew
            self._load[used] += bw[used].min()
            self._users[used] += 1
        return np.concatenate(chosen_nodes), np.concatenate(chosen_counts)


class FreestFirst(Placement):
    """The freest node first, wholly, again until the gang is placed (ties: lowest index),
    even when the gang would fit a fuller node.

    Pollux's simulator's placement for its baselines (petuum/adaptdl ``simulator/
    tiresias.py`` and ``optimus.py``: ``Counter.most_common(1)`` over the free GPUs per
    node, repeated); ``--compat pollux`` gives it to ``tiresias`` and ``optimus``.
    :class:`Consolidate` differs only for a gang that fits one node (it takes the fullest
    node that holds it).
    """

    name = "freest"

    def choose(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, f: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        return _take_largest_first(free, candidates, ndev)


class FirstFit(Placement):
    """Nodes in index order, each filled before the next (any rack, any number of nodes).

    What a simulator that only counts devices amounts to (the Tiresias simulator's ``count``
    scheme, and its ``dlas-gpu`` schedule, which ignores nodes whatever the scheme): a gang
    runs whenever enough devices of its type are free.
    """

    name = "first-fit"
    fills_in_node_order = True

    def choose(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, f: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        return _fill_in_order(candidates, f, ndev)


class Yarn(Placement):
    """The Tiresias simulator's ``yarn`` scheme (its default; ``switch.py``,
    ``ms_yarn_alloc_res``): all devices from one rack, racks tried in index order.

    A gang no larger than a node goes to the first node (index order) with room for it. A
    larger gang takes ``ndev // per_node`` wholly idle nodes (the first ones) and, for the
    remainder, the first other node with room; when a rack cannot do that, the next is tried,
    and a gang no rack can hold waits.

    Departures from the simulator: ``per_node`` is the largest node of the type in the rack
    (the simulator's nodes are all alike); the simulator's CPU and memory checks (6 cores per
    GPU of a multi-GPU job, 2 for a one-GPU job, a few GB per worker) are not modelled: they
    never bind on the cluster specs it ships (at least 10 cores per GPU).
    """

    name = "yarn"
    may_decline = True
    yarn_rule = True
    _out: IntArray = _EMPTY  # output buffers of the kernel, grown as needed

    def choose(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, f: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        if len(self._out) < 2 * len(candidates):
            self._out = np.empty(2 * max(len(candidates), 64), dtype=np.int64)
        half = len(self._out) // 2
        nodes, counts = self._out[:half], self._out[half:]
        k = yarn_nodes(
            np.ascontiguousarray(free, dtype=np.int64),
            np.ascontiguousarray(candidates, dtype=np.int64),
            cluster.node_rack,
            cluster.node_devices,
            ndev,
            nodes,
            counts,
        )
        return (nodes[:k].copy(), counts[:k].copy()) if k else None


class _SharePlacement(Placement):
    """A placement of the FGD paper, scored on single GPUs' milli (base of the six below).

    In a run the engine turns on the GPU-sharing model (``shares_gpus``) and each start of a
    job that fits one node is placed by the model's copy of the FGD study's scoring
    (:meth:`clustersim.gpushare.GpuShare.choose`: the rules of ``docs/fgd-fidelity.md``, on
    the candidate nodes of the type the policy chose, one job at a time); the GPU a share
    goes to is the one the rule picks. A gang larger than any node (openb pods never are)
    and calls outside a run (no model bound, whole devices only) fall back to
    :class:`Consolidate`.
    """

    shares_gpus = True
    code = -1

    def __init__(self) -> None:
        self._model: Any = None
        self._rng = np.random.default_rng(0)

    def reset(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def bind_share(self, model: Any) -> None:
        self._model = model

    def choose(
        self, cluster: Cluster, free: IntArray, candidates: IntArray, f: IntArray, ndev: int
    ) -> tuple[IntArray, IntArray] | None:
        if self._model is not None:
            u = self._rng.random(2) if self.uses_seed else np.zeros(2)
            got = self._model.choose(self.code, candidates, f, ndev, u)
            if got is not None:
                return got
        return Consolidate().choose(cluster, free, candidates, f, ndev)


class FGD(_SharePlacement):
    """Fragmentation gradient descent (Weng et al., "Beware of Fragmentation", ATC'23, §4):
    the node (and GPU) whose fragmentation, measured against the workload's typical jobs,
    grows least."""

    name = "fgd"
    code = 0


class BestFit(_SharePlacement):
    """Best fit on CPU and total GPU milli left (the FGD paper's baseline, §6.1)."""

    name = "best-fit"
    code = 1


class DotProduct(_SharePlacement):
    """Tetris' dot product of free resources and request (the FGD paper's baseline)."""

    name = "dot-product"
    code = 2


class GpuPacking(_SharePlacement):
    """GPU packing: shares onto used GPUs, whole GPUs onto used nodes (FGD paper baseline)."""

    name = "gpu-packing"
    code = 3


class GpuClustering(_SharePlacement):
    """GPU clustering: jobs of one kind (share, k GPUs) together (FGD paper baseline)."""

    name = "gpu-clustering"
    code = 4


class RandomFit(_SharePlacement):
    """A uniformly drawn feasible node and GPU (seeded; the FGD paper's baseline)."""

    name = "random-fit"
    code = 5
    uses_seed = True
