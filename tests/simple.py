"""Small builders for engine and policy tests: hand-made clusters, jobs and rates.

The rate model here is deliberately trivial (a fixed speed per accelerator type, no
communication cost) so hand-worked completion times are easy to compute.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from clustersim.cluster import AcceleratorType, Cluster, Region
from clustersim.jobs import JobTable
from clustersim.perf import JobRates


def acc(
    name: str, busy_w: float = 300.0, idle_w: float = 30.0, price: float = 1.0
) -> AcceleratorType:
    return AcceleratorType(
        name=name,
        kind="gpu",
        fp16_tflops=100.0,
        memory_gb=32.0,
        memory_bw_tbs=1.0,
        busy_w=busy_w,
        idle_w=idle_w,
        price_per_hour=price,
        release_year=2020,
    )


def cluster(nodes: Sequence[tuple[str, int]], racks: Sequence[int] | None = None) -> Cluster:
    """A cluster with one node per ``(type name, devices)`` entry."""
    names: list[str] = []
    for name, _ in nodes:
        if name not in names:
            names.append(name)
    n = len(nodes)
    rack = np.asarray(racks if racks is not None else [0] * n, dtype=np.int64)
    return Cluster(
        name="test",
        types=tuple(acc(x) for x in names),
        node_type=np.array([names.index(t) for t, _ in nodes], dtype=np.int64),
        node_devices=np.array([d for _, d in nodes], dtype=np.int64),
        node_rack=rack,
        node_region=np.zeros(n, dtype=np.int64),
        node_intra_gbs=np.full(n, 300.0),
        node_nic_gbps=np.full(n, 100.0),
        node_overhead_w=np.zeros(n),
        rack_oversub=np.ones(int(rack.max()) + 1),
        regions=(Region(name="r", pue=1.0, carbon_g_per_kwh=100.0),),
        node_availability=np.ones(n),
    )


def jobs(rows: Sequence[tuple[float, int, float]], **extra: Sequence[object]) -> JobTable:
    """Jobs from ``(submit, num_gpus, work)`` rows; ids are ``"j0", "j1", ...``."""
    return JobTable.from_columns(
        job_id=[f"j{i}" for i in range(len(rows))],
        submit_time=[r[0] for r in rows],
        num_gpus=[r[1] for r in rows],
        work=[r[2] for r in rows],
        **extra,
    )


class FixedRates(JobRates):
    """Rates = ``speed[type]`` work units per second for any gang size and placement."""

    def placement_rate(self, jobs, types, ndev, link_gbs):  # type: ignore[no-untyped-def]
        return self.rate[jobs, types].copy()


def fixed_rates(
    table: JobTable, cl: Cluster, speed: Sequence[float] | None = None, restore_s: float = 0.0
) -> FixedRates:
    sp = np.asarray(speed if speed is not None else [1.0] * cl.n_types, dtype=np.float64)
    rate = np.tile(sp, (len(table), 1))
    return FixedRates(rate=rate, restore_s=np.full(len(table), restore_s))


def yarn_reference(free, cand, rack, cap, nd):  # type: ignore[no-untyped-def]
    """The Tiresias simulator's yarn scheme, the obvious way (racks ascending)."""
    for r in sorted(set(rack[cand].tolist())):
        nodes = [int(x) for x in cand if rack[x] == r]
        per_node = max(int(cap[x]) for x in nodes)
        if nd <= per_node:
            fit = [x for x in nodes if free[x] >= nd]
            if fit:
                return [fit[0]], [nd]
            continue
        full, rest = divmod(nd, per_node)
        idle = [x for x in nodes if free[x] == cap[x]][:full]
        if len(idle) < full:
            continue
        if not rest:
            return idle, [int(cap[x]) for x in idle]
        last = [x for x in nodes if x not in idle and free[x] >= rest]
        if last:
            return [*idle, last[0]], [*(int(cap[x]) for x in idle), rest]
    return None
