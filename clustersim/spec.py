"""Cluster specifications: plain JSON-compatible dicts in, :class:`~clustersim.cluster.Cluster` out.

A spec is what the REST API accepts unchanged and what a JSON spec file holds::

    {"name": "demo",
     "regions": [{"name": "us-west", "carbon_zone": "US-CAL-CISO", "pue": 1.2,
                  "price_per_kwh": 0.12}],
     "racks": [{"name": "r1", "region": "us-west", "oversubscription": 2.0}],
     "accelerators": [{"name": "MyChip", "kind": "gpu", "fp16_tflops": 100, ...}],
     "pools": [{"name": "v100s", "accelerator": "V100-SXM2-16GB", "nodes": 4,
                "devices_per_node": 8, "rack": "r1", "intra_gbs": 300, "nic_gbps": 100,
                "cpu_cores": 64, "host_mem_gb": 512, "overhead_w": 300,
                "availability": 1.0}]}

Only ``pools`` is required. The keys, their meaning and defaults:

``name``
    Display name (default ``"cluster"``).
``regions``
    List of ``{name, carbon_zone="", pue=1.2, price_per_kwh=0.10, carbon_g_per_kwh=400}``
    (defaults of :class:`~clustersim.cluster.Region`). Default: one region ``"default"``
    with no carbon zone. Racks and pools that name no region are in the first region.
``racks``
    List of ``{name, region=<first region>, oversubscription=1.0}``; ``oversubscription``
    is the ratio of a rack's uplink (1.0 = non-blocking, must be >= 1).
``accelerators``
    User-defined accelerator types, ``{name, kind="gpu", fp16_tflops, memory_gb,
    memory_bw_tbs, busy_w, idle_w=11.4 % of busy_w, price_per_hour, release_year,
    aliases=[], assumptions=[], purchase_usd=price_per_hour × 5,112.5 h, amortisation_years=4}``
    (``price_per_hour`` is the cloud price per device-hour, ``purchase_usd`` what buying one
    device costs, spread over ``amortisation_years`` for the owned-cluster cost; the defaults
    are :data:`~clustersim.cluster.PURCHASE_HOURS` and
    :data:`~clustersim.cluster.DEFAULT_AMORTISATION_YEARS`, see ``docs/metrics.md``). A type
    named like a catalog key replaces it (e.g. to change a price).
``pools``
    Groups of identical nodes, ``{name=pool<i>, accelerator, nodes, devices_per_node, rack |
    racks, rack_oversubscription, region, intra_gbs, nic_gbps=100, cpu_cores, host_mem_gb,
    overhead_w, availability=1.0, mtbf_hours, repair_hours, failure_shape=1, spot=false,
    spot_price_per_hour | spot_discount, spot_reclaim_hours, spot_return_hours,
    spot_notice_s}``:

    - ``accelerator``: catalog key or alias (any case) or a user-defined type;
    - ``devices_per_node``: default by kind, 8 for GPUs and NPUs, 4 for TPU hosts, 1 for edge;
    - ``rack`` names a declared rack; ``racks: N`` instead spreads the nodes as evenly as
      possible over N new racks ``<pool>-rack<i>`` (uplink ratio ``rack_oversubscription``,
      default 1.0); with neither, the pool gets one new rack ``<pool>-rack``;
    - ``region``: for the pool's new racks; with ``rack`` it must be that rack's region;
    - ``intra_gbs``: default from the catalog (NVLink-class for SXM parts, PCIe for PCIe
      parts, see :mod:`clustersim.catalog`);
    - ``overhead_w``: non-accelerator power of a node; default
      :data:`DEFAULT_OVERHEAD_W_PER_DEVICE` per device, 0 for edge devices;
    - ``cpu_cores`` (a whole number >= 1), ``host_mem_gb`` (GB, > 0): each node's host CPU
      cores and memory, which jobs' CPU and memory demands draw on
      (:mod:`clustersim.resources`, ``docs/resources.md``); left out, the node has no limit
      on that resource (``inf`` in :attr:`~clustersim.cluster.Cluster.node_cpu_cores`), so
      a cluster without them runs as before;
    - ``availability``: probability a node is online, in (0, 1];
    - ``mtbf_hours``, ``repair_hours``, ``failure_shape``: each node's failure model, used
      only by runs with failures on (:mod:`clustersim.failures`, ``docs/failures.md``): mean
      time between failures of one node (h, > 0), mean repair time (h, > 0) and the Weibull
      shape of the time to failure (> 0, at most 20; 1 = exponential). Left out, they take
      the documented defaults of :func:`clustersim.failures.node_parameters` (per device
      type; with ``availability`` < 1 the repair time is the one that makes the node online
      that share of the time, so a pool gives ``repair_hours`` or an availability below 1,
      not both).
    - ``spot`` (default false) marks spot capacity (:mod:`clustersim.spot`,
      ``docs/failures.md``): ``spot_price_per_hour`` ($/device-hour, >= 0) or
      ``spot_discount`` (0..1 off the type's on-demand price, default 0.6), not both;
      ``spot_reclaim_hours`` (mean hours between reclaims of a node, > 0, default 3,600),
      ``spot_return_hours`` (mean hours until it returns, > 0, default 1) and
      ``spot_notice_s`` (notice before a reclaim, 0..3600 s, default 120). The spot keys on a
      pool that is not spot are errors.

Every invalid spec raises :class:`~clustersim.errors.SpecError` whose ``field`` is the dotted
path of the offending value (``"pools[1].devices_per_node"``); unknown keys are errors too.

Besides JSON specs, :func:`load_cluster` reads presets, Gavel-style shorthand
(:func:`spec_from_shorthand`) and the Tiresias simulator's cluster spec CSV
(:func:`tiresias_cluster_spec`).

Nodes are laid out pool by pool, each pool's nodes rack by rack. ``Cluster.types`` holds the
types present, in order of first appearance in ``pools``. Racks are indexed declared racks
first, then the pools' new racks; regions in spec order.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clustersim.catalog import IDLE_FRACTION, KINDS, Catalog, load_catalog
from clustersim.cluster import DEFAULT_AMORTISATION_YEARS, AcceleratorType, Cluster, Region
from clustersim.errors import SpecError
from clustersim.perf import (
    REFERENCE_INTRA_GBS,
    REFERENCE_NETWORK_GBS,
    REFERENCE_NODE_DEVICES,
    REFERENCE_TYPE,
)

GAVEL_DEVICES_PER_SERVER = 4  # our choice, not Gavel's; the lead may change it
"""Devices per server assumed by Gavel-style shorthand (``"v100:8"`` = two 4-GPU servers).

Gavel's sweep scripts take the server size per type as a parameter (``--num_gpus_per_server``,
``1:1:1`` by default, i.e. no consolidation at all). We assume 4, the shape of the common cloud
V100 server (AWS p3.8xlarge), so multi-GPU jobs can be consolidated. Override per type with
``"v100:8:8"``.
"""

DEFAULT_REGION_NAME = "default"
"""Name of the region created when a spec gives none."""

DEFAULT_NIC_GBPS = 100.0
"""Node network bandwidth when a pool gives no ``nic_gbps`` (Gbit/s)."""

DEFAULT_OVERHEAD_W_PER_DEVICE = 50.0
"""Non-accelerator node power per device when a pool gives no ``overhead_w`` (W).

From the Teads/CCF AWS model: a p3.16xlarge (8 V100) draws 429 W besides its GPUs at 50 %
load (CPU package 183 W + DRAM 195 W + 52 W rest of the machine), 54 W per GPU. Edge devices
get 0 W: their module power already includes the CPU.
"""

DEFAULT_DEVICES_PER_NODE: Mapping[str, int] = {"gpu": 8, "npu": 8, "tpu": 4, "edge": 1}
"""Devices per node by accelerator kind when a pool gives no ``devices_per_node``."""

MAX_NODES = 1_000_000
"""Most nodes a spec may describe (guards the web API against absurd requests)."""

MAX_DEVICES_PER_NODE = 1024
"""Most devices one node may hold."""

_TOP_KEYS = ("name", "regions", "racks", "accelerators", "pools")
_REGION_KEYS = ("name", "carbon_zone", "pue", "price_per_kwh", "carbon_g_per_kwh")
_RACK_KEYS = ("name", "region", "oversubscription")
_ACCEL_KEYS = (
    "name",
    "kind",
    "fp16_tflops",
    "memory_gb",
    "memory_bw_tbs",
    "busy_w",
    "idle_w",
    "price_per_hour",
    "release_year",
    "aliases",
    "assumptions",
    "purchase_usd",
    "amortisation_years",
)
_ACCEL_REQUIRED = (
    "name",
    "fp16_tflops",
    "memory_gb",
    "memory_bw_tbs",
    "busy_w",
    "price_per_hour",
    "release_year",
)
_POOL_KEYS = (
    "name",
    "accelerator",
    "nodes",
    "devices_per_node",
    "rack",
    "racks",
    "rack_oversubscription",
    "region",
    "intra_gbs",
    "nic_gbps",
    "cpu_cores",
    "host_mem_gb",
    "overhead_w",
    "availability",
    "mtbf_hours",
    "repair_hours",
    "failure_shape",
    "spot",
    "spot_price_per_hour",
    "spot_discount",
    "spot_reclaim_hours",
    "spot_return_hours",
    "spot_notice_s",
)
#: The keys of a spot pool besides ``spot`` itself (:mod:`clustersim.spot`).
_SPOT_KEYS = (
    "spot_price_per_hour",
    "spot_discount",
    "spot_reclaim_hours",
    "spot_return_hours",
    "spot_notice_s",
)
#: Largest Weibull shape a pool may give (20 is already nearly a fixed lifetime).
MAX_FAILURE_SHAPE = 20.0
_MISSING: Any = object()


# -- small typed readers; each raises SpecError naming the field ------------------------------


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def _check_keys(obj: Mapping[Any, Any], allowed: Sequence[str], path: str) -> None:
    for k in obj:
        if k not in allowed:
            name = k if isinstance(k, str) else repr(k)
            close = difflib.get_close_matches(str(k), allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; allowed: {', '.join(allowed)}"
            raise SpecError(_path(path, name), f"unknown key{hint}")


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(path or "spec", f"must be an object, not {_kind(value)}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise SpecError(path, f"must be a list, not {_kind(value)}")
    return list(value)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def _str(obj: Mapping[str, Any], key: str, path: str, default: Any = _MISSING) -> str:
    p = _path(path, key)
    if key not in obj:
        if default is _MISSING:
            raise SpecError(p, "is required")
        return str(default)
    v = obj[key]
    if not isinstance(v, str):
        raise SpecError(p, f"must be a string, not {_kind(v)}")
    return v


def _name(obj: Mapping[str, Any], key: str, path: str, default: Any = _MISSING) -> str:
    v = _str(obj, key, path, default).strip()
    if not v:
        raise SpecError(_path(path, key), "must not be empty")
    return v


def _number(
    obj: Mapping[str, Any],
    key: str,
    path: str,
    default: Any = _MISSING,
    *,
    low: float | None = None,
    low_open: bool = False,
    high: float | None = None,
) -> float:
    p = _path(path, key)
    if key not in obj:
        if default is _MISSING:
            raise SpecError(p, "is required")
        return float(default)
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise SpecError(p, f"must be a number, not {_kind(v)}")
    x = float(v)
    if not math.isfinite(x):
        raise SpecError(p, "must be a finite number")
    if low is not None and (x <= low if low_open else x < low):
        raise SpecError(p, f"must be {'>' if low_open else '>='} {low:g}, not {x:g}")
    if high is not None and x > high:
        raise SpecError(p, f"must be <= {high:g}, not {x:g}")
    return x


def _integer(
    obj: Mapping[str, Any],
    key: str,
    path: str,
    default: Any = _MISSING,
    *,
    low: int = 1,
    high: int | None = None,
) -> int:
    p = _path(path, key)
    if key not in obj:
        if default is _MISSING:
            raise SpecError(p, "is required")
        return int(default)
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise SpecError(p, f"must be an integer, not {_kind(v)}")
    if isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
        raise SpecError(p, f"must be an integer, not {v!r}")
    n = int(v)
    if n < low:
        raise SpecError(p, f"must be >= {low}, not {n}")
    if high is not None and n > high:
        raise SpecError(p, f"must be <= {high}, not {n}")
    return n


def _strings(obj: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    if key not in obj:
        return ()
    p = _path(path, key)
    items = _list(obj[key], p)
    for i, s in enumerate(items):
        if not isinstance(s, str) or not s.strip():
            raise SpecError(_path(p, i), f"must be a non-empty string, not {_kind(s)}")
    return tuple(s.strip() for s in items)


def _unique(name: str, seen: dict[str, str], path: str, what: str) -> None:
    if name in seen:
        raise SpecError(path, f"duplicate {what} name {name!r} (first used at {seen[name]})")
    seen[name] = path


# -- spec -> Cluster ----------------------------------------------------------------------------


def _parse_accelerator(obj: Mapping[str, Any], path: str) -> AcceleratorType:
    _check_keys(obj, _ACCEL_KEYS, path)
    for k in _ACCEL_REQUIRED:
        if k not in obj:
            raise SpecError(_path(path, k), "is required")
    kind = _str(obj, "kind", path, "gpu")
    if kind not in KINDS:
        raise SpecError(_path(path, "kind"), f"must be one of {', '.join(KINDS)}, not {kind!r}")
    busy = _number(obj, "busy_w", path, low=0, low_open=True)
    assumptions = _strings(obj, "assumptions", path)
    if "idle_w" in obj:
        idle = _number(obj, "idle_w", path, low=0, high=busy)
    else:
        idle = round(IDLE_FRACTION * busy, 1)
        assumptions += (
            f"idle_w: [assumed] {IDLE_FRACTION:.1%} of busy_w (the Teads model's idle/max ratio)",
        )
    return AcceleratorType(
        name=_name(obj, "name", path),
        kind=kind,
        fp16_tflops=_number(obj, "fp16_tflops", path, low=0, low_open=True),
        memory_gb=_number(obj, "memory_gb", path, low=0, low_open=True),
        memory_bw_tbs=_number(obj, "memory_bw_tbs", path, low=0, low_open=True),
        busy_w=busy,
        idle_w=idle,
        price_per_hour=_number(obj, "price_per_hour", path, low=0),
        release_year=_integer(obj, "release_year", path, low=1990, high=2100),
        aliases=_strings(obj, "aliases", path),
        assumptions=assumptions,
        purchase_usd=_number(obj, "purchase_usd", path, low=0) if "purchase_usd" in obj else None,
        amortisation_years=_number(
            obj, "amortisation_years", path, DEFAULT_AMORTISATION_YEARS, low=0, low_open=True
        ),
    )


def _resolve(catalog: Catalog, name: str, path: str) -> AcceleratorType:
    t = catalog.resolve(name)
    if t is None:
        raise SpecError(path, catalog.unknown_message(name))
    return t


def _carbon_zone(r: Mapping[str, Any], path: str, default: str) -> str:
    """A region's ``carbon_zone``: ``""`` or a zone with shipped hourly data (canonical
    spelling), else a :class:`SpecError` naming the field, never a silent constant."""
    from clustersim.carbon import zones

    zone = _str(r, "carbon_zone", path, default).strip()
    if not zone:
        return ""
    known = {z.lower(): z for z in zones()}
    if zone.lower() not in known:
        raise SpecError(
            _path(path, "carbon_zone"),
            f"no hourly carbon data for zone {zone!r}; known zones:"
            f" {', '.join(sorted(known.values()))} (leave it empty to use carbon_g_per_kwh)",
        )
    return known[zone.lower()]


def cluster_from_spec(spec: Mapping[str, Any], catalog: Catalog | None = None) -> Cluster:
    """Build a :class:`~clustersim.cluster.Cluster` from a spec dict (see the module docstring).

    Parameters
    ----------
    spec
        The JSON-compatible spec.
    catalog
        Accelerator catalog for names in ``pools[*].accelerator``; default
        :func:`~clustersim.catalog.load_catalog`. The spec's ``accelerators`` are added to it.

    Returns
    -------
    Cluster
        With node arrays of shape ``(n_nodes,)`` and ``rack_oversub`` of shape ``(n_racks,)``.

    Raises
    ------
    SpecError
        For any invalid spec; ``field`` is the dotted path of the offending value.
    """
    spec = _object(spec, "spec")
    _check_keys(spec, _TOP_KEYS, "")
    base = catalog if catalog is not None else load_catalog()
    name = _name(spec, "name", "", "cluster")

    # regions
    regions: list[Region] = []
    region_index: dict[str, int] = {}
    if "regions" in spec:
        items = _list(spec["regions"], "regions")
        if not items:
            raise SpecError("regions", "must not be empty (leave it out for one default region)")
        seen: dict[str, str] = {}
        for i, item in enumerate(items):
            p = _path("regions", i)
            r = _object(item, p)
            _check_keys(r, _REGION_KEYS, p)
            rname = _name(r, "name", p)
            _unique(rname, seen, _path(p, "name"), "region")
            d = Region(name=rname)
            zone = _carbon_zone(r, p, d.carbon_zone)
            region_index[rname] = len(regions)
            regions.append(
                Region(
                    name=rname,
                    carbon_zone=zone,
                    pue=_number(r, "pue", p, d.pue, low=1.0),
                    price_per_kwh=_number(r, "price_per_kwh", p, d.price_per_kwh, low=0),
                    carbon_g_per_kwh=_number(r, "carbon_g_per_kwh", p, d.carbon_g_per_kwh, low=0),
                )
            )
    else:
        regions.append(Region(name=DEFAULT_REGION_NAME))
        region_index[DEFAULT_REGION_NAME] = 0

    def region_of(obj: Mapping[str, Any], path: str) -> int:
        if "region" not in obj:
            return 0
        rname = _str(obj, "region", path)
        if rname not in region_index:
            known = ", ".join(r.name for r in regions)
            raise SpecError(_path(path, "region"), f"undefined region {rname!r} (defined: {known})")
        return region_index[rname]

    # racks
    rack_names: dict[str, str] = {}  # name -> path where defined
    rack_index: dict[str, int] = {}
    rack_region: list[int] = []
    rack_oversub: list[float] = []
    if "racks" in spec:
        for i, item in enumerate(_list(spec["racks"], "racks")):
            p = _path("racks", i)
            r = _object(item, p)
            _check_keys(r, _RACK_KEYS, p)
            rname = _name(r, "name", p)
            _unique(rname, rack_names, _path(p, "name"), "rack")
            rack_index[rname] = len(rack_oversub)
            rack_region.append(region_of(r, p))
            rack_oversub.append(_number(r, "oversubscription", p, 1.0, low=1.0))

    # user-defined accelerators
    catalog_ = base
    if "accelerators" in spec:
        seen = {}
        for i, item in enumerate(_list(spec["accelerators"], "accelerators")):
            p = _path("accelerators", i)
            acc = _parse_accelerator(_object(item, p), p)
            _unique(acc.name, seen, _path(p, "name"), "accelerator")
            try:
                catalog_ = catalog_.with_types([acc])
            except ValueError as exc:
                raise SpecError(_path(p, "name"), str(exc)) from None

    # pools
    if "pools" not in spec:
        raise SpecError("pools", "is required: a cluster needs at least one pool of nodes")
    pools = _list(spec["pools"], "pools")
    if not pools:
        raise SpecError("pools", "must not be empty: a cluster needs at least one pool of nodes")
    types: list[AcceleratorType] = []
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "type",
            "dev",
            "rack",
            "region",
            "intra",
            "nic",
            "over",
            "avail",
            "mtbf",
            "repair",
            "shape",
            "spot_price",
            "spot_reclaim",
            "spot_return",
            "spot_notice",
            "cpu",
            "mem",
        )
    }
    pool_names: dict[str, str] = {}
    total_nodes = 0
    for i, item in enumerate(pools):
        p = _path("pools", i)
        pool = _object(item, p)
        _check_keys(pool, _POOL_KEYS, p)
        pname = _name(pool, "name", p, f"pool{i}")
        _unique(pname, pool_names, _path(p, "name"), "pool")
        acc = _resolve(catalog_, _name(pool, "accelerator", p), _path(p, "accelerator"))
        nodes = _integer(pool, "nodes", p, high=MAX_NODES)
        total_nodes += nodes
        if total_nodes > MAX_NODES:
            raise SpecError(_path(p, "nodes"), f"the cluster would exceed {MAX_NODES} nodes")
        dev = _integer(
            pool,
            "devices_per_node",
            p,
            DEFAULT_DEVICES_PER_NODE[acc.kind],
            high=MAX_DEVICES_PER_NODE,
        )
        intra = _number(
            pool, "intra_gbs", p, catalog_.default_intra_gbs(acc.name), low=0, low_open=True
        )
        nic = _number(pool, "nic_gbps", p, DEFAULT_NIC_GBPS, low=0, low_open=True)
        default_over = 0.0 if acc.kind == "edge" else DEFAULT_OVERHEAD_W_PER_DEVICE * dev
        over = _number(pool, "overhead_w", p, default_over, low=0)
        avail = _number(pool, "availability", p, 1.0, low=0, low_open=True, high=1.0)
        # failure model (clustersim.failures): nan = the documented default
        mtbf = _number(pool, "mtbf_hours", p, math.nan, low=0, low_open=True)
        repair = _number(pool, "repair_hours", p, math.nan, low=0, low_open=True)
        shape = _number(
            pool, "failure_shape", p, math.nan, low=0, low_open=True, high=MAX_FAILURE_SHAPE
        )
        if "repair_hours" in pool and avail < 1.0:
            raise SpecError(
                _path(p, "repair_hours"),
                f"give either repair_hours or an availability below 1 ({avail:g}), not both: "
                "the availability sets the repair time (mtbf x (1 - availability) / "
                "availability)",
            )
        spot_price, spot_reclaim, spot_return, spot_notice = _spot_pool(pool, p, acc)
        # host CPU and memory (clustersim.resources): inf = no limit
        cpu = (
            float(_integer(pool, "cpu_cores", p, high=1_000_000))
            if "cpu_cores" in pool
            else math.inf
        )
        mem = (
            _number(pool, "host_mem_gb", p, low=0, low_open=True)
            if "host_mem_gb" in pool
            else math.inf
        )

        # racks of this pool: a list of (rack index, node count)
        placement: list[tuple[int, int]] = []
        if "rack" in pool:
            for k in ("racks", "rack_oversubscription"):
                if k in pool:
                    raise SpecError(_path(p, k), "give either 'rack' (a declared rack) or 'racks'")
            rname = _str(pool, "rack", p)
            if rname not in rack_index:
                known = ", ".join(rack_index) or "none"
                raise SpecError(_path(p, "rack"), f"undefined rack {rname!r} (defined: {known})")
            ri = rack_index[rname]
            if "region" in pool and region_of(pool, p) != rack_region[ri]:
                raise SpecError(
                    _path(p, "region"),
                    f"rack {rname!r} is in region {regions[rack_region[ri]].name!r}",
                )
            placement.append((ri, nodes))
        else:
            n_racks = _integer(pool, "racks", p, 1, high=nodes) if "racks" in pool else 0
            oversub = _number(pool, "rack_oversubscription", p, 1.0, low=1.0)
            region = region_of(pool, p)
            names = (
                [f"{pname}-rack"] if n_racks == 0 else [f"{pname}-rack{j}" for j in range(n_racks)]
            )
            q, extra_nodes = divmod(nodes, max(n_racks, 1))
            counts = [q + 1] * extra_nodes + [q] * (max(n_racks, 1) - extra_nodes)
            for rname, count in zip(names, counts, strict=True):
                if rname in rack_names:
                    raise SpecError(
                        _path(p, "racks" if n_racks else "name"),
                        f"the pool's new rack {rname!r} clashes with the rack defined "
                        f"at {rack_names[rname]}",
                    )
                rack_names[rname] = _path(p, "racks" if n_racks else "name")
                rack_index[rname] = len(rack_oversub)
                rack_region.append(region)
                rack_oversub.append(oversub)
                placement.append((rack_index[rname], count))

        if acc not in types:
            types.append(acc)
        t = types.index(acc)
        for ri, count in placement:
            for key, value in (
                ("type", t),
                ("dev", dev),
                ("rack", ri),
                ("region", rack_region[ri]),
                ("intra", intra),
                ("nic", nic),
                ("over", over),
                ("avail", avail),
                ("mtbf", mtbf),
                ("repair", repair),
                ("shape", shape),
                ("spot_price", spot_price),
                ("spot_reclaim", spot_reclaim),
                ("spot_return", spot_return),
                ("spot_notice", spot_notice),
                ("cpu", cpu),
                ("mem", mem),
            ):
                cols[key].append(np.full(count, value))

    def cat(key: str, dtype: type) -> Any:
        return np.concatenate(cols[key]).astype(dtype)

    return Cluster(
        name=name,
        types=tuple(types),
        node_type=cat("type", np.int64),
        node_devices=cat("dev", np.int64),
        node_rack=cat("rack", np.int64),
        node_region=cat("region", np.int64),
        node_intra_gbs=cat("intra", np.float64),
        node_nic_gbps=cat("nic", np.float64),
        node_overhead_w=cat("over", np.float64),
        rack_oversub=np.asarray(rack_oversub, dtype=np.float64),
        regions=tuple(regions),
        node_availability=cat("avail", np.float64),
        node_mtbf_h=cat("mtbf", np.float64),
        node_repair_h=cat("repair", np.float64),
        node_failure_shape=cat("shape", np.float64),
        **(
            {
                "node_spot_price": spot_price_col,
                "node_spot_reclaim_h": cat("spot_reclaim", np.float64),
                "node_spot_return_h": cat("spot_return", np.float64),
                "node_spot_notice_s": cat("spot_notice", np.float64),
            }
            if not np.isnan(spot_price_col := cat("spot_price", np.float64)).all()
            else {}
        ),
        **(
            {"node_cpu_cores": cpu_col, "node_host_mem_gb": cat("mem", np.float64)}
            if np.isfinite(cpu_col := cat("cpu", np.float64)).any()
            or np.isfinite(cat("mem", np.float64)).any()
            else {}
        ),
    )


def _spot_pool(
    pool: Mapping[str, Any], path: str, acc: AcceleratorType
) -> tuple[float, float, float, float]:
    """A pool's spot price ($/device-hour), mean hours between reclaims, mean hours until the
    capacity returns and notice (s); all ``nan`` for an on-demand pool.

    Defaults and their sources: :mod:`clustersim.spot`. A spot key on a pool that is not
    ``spot: true`` is an error (it would be ignored), as are a price and a discount together.
    """
    from clustersim.spot import (
        DEFAULT_DISCOUNT,
        DEFAULT_NOTICE_S,
        DEFAULT_RECLAIM_HOURS,
        DEFAULT_RETURN_HOURS,
        MAX_NOTICE_S,
    )

    spot = pool.get("spot", False)
    if not isinstance(spot, bool):
        raise SpecError(_path(path, "spot"), f"must be true or false, not {_kind(spot)}")
    if not spot:
        for key in _SPOT_KEYS:
            if key in pool:
                raise SpecError(_path(path, key), "only for a spot pool: set spot: true")
        return math.nan, math.nan, math.nan, math.nan
    if "spot_price_per_hour" in pool and "spot_discount" in pool:
        raise SpecError(
            _path(path, "spot_discount"),
            "give either spot_price_per_hour or spot_discount (off the on-demand price), not both",
        )
    if "spot_price_per_hour" in pool:
        price = _number(pool, "spot_price_per_hour", path, low=0)
    else:
        discount = _number(pool, "spot_discount", path, DEFAULT_DISCOUNT, low=0, high=1)
        price = float(acc.price_per_hour) * (1.0 - discount)
    return (
        price,
        _number(pool, "spot_reclaim_hours", path, DEFAULT_RECLAIM_HOURS, low=0, low_open=True),
        _number(pool, "spot_return_hours", path, DEFAULT_RETURN_HOURS, low=0, low_open=True),
        _number(pool, "spot_notice_s", path, DEFAULT_NOTICE_S, low=0, high=MAX_NOTICE_S),
    )


# -- Cluster -> spec ----------------------------------------------------------------------------


def _accelerator_spec(t: AcceleratorType) -> dict[str, Any]:
    return {
        "name": t.name,
        "kind": t.kind,
        "fp16_tflops": float(t.fp16_tflops),
        "memory_gb": float(t.memory_gb),
        "memory_bw_tbs": float(t.memory_bw_tbs),
        "busy_w": float(t.busy_w),
        "idle_w": float(t.idle_w),
        "price_per_hour": float(t.price_per_hour),
        "release_year": int(t.release_year),
        "aliases": list(t.aliases),
        "assumptions": list(t.assumptions),
        **({} if t.purchase_usd is None else {"purchase_usd": float(t.purchase_usd)}),
        "amortisation_years": float(t.amortisation_years),
    }


def _same_type(a: AcceleratorType, b: AcceleratorType) -> bool:
    return (
        a.name,
        a.kind,
        a.fp16_tflops,
        a.memory_gb,
        a.memory_bw_tbs,
        a.busy_w,
        a.idle_w,
        a.price_per_hour,
        a.release_year,
        a.assumptions,
        a.purchase_usd,
        a.amortisation_years,
    ) == (
        b.name,
        b.kind,
        b.fp16_tflops,
        b.memory_gb,
        b.memory_bw_tbs,
        b.busy_w,
        b.idle_w,
        b.price_per_hour,
        b.release_year,
        b.assumptions,
        b.purchase_usd,
        b.amortisation_years,
    )


def cluster_to_spec(cluster: Cluster, catalog: Catalog | None = None) -> dict[str, Any]:
    """The spec dict of a cluster; ``cluster_from_spec`` of it rebuilds the same cluster.

    Types equal to a catalog entry (aliases aside) are referred to by key; other types are
    written out under ``accelerators``. Runs of consecutive identical nodes become one pool
    each; racks are named ``rack0``, ``rack1``, ... in index order.

    Parameters
    ----------
    cluster
        The cluster.
    catalog
        The catalog the spec will be read with; default
        :func:`~clustersim.catalog.load_catalog`.

    Returns
    -------
    dict
        JSON-compatible (``json.dumps`` works on it).

    Raises
    ------
    ValueError
        If a rack holds nodes of several regions (a spec cannot say that).
    """
    cat = catalog if catalog is not None else load_catalog()
    n = cluster.n_nodes
    avail = cluster.node_availability if len(cluster.node_availability) == n else np.ones(n)

    def failure_col(a: Any) -> Any:  # nan (the default) as -1, so runs of nodes compare equal
        a = np.asarray(a, dtype=np.float64)
        return np.where(np.isnan(a), -1.0, a) if len(a) == n else np.full(n, -1.0)

    mtbf, repair, shape = (
        failure_col(a)
        for a in (cluster.node_mtbf_h, cluster.node_repair_h, cluster.node_failure_shape)
    )
    spot_price, spot_reclaim, spot_return, spot_notice = (
        failure_col(a)
        for a in (
            cluster.node_spot_price,
            cluster.node_spot_reclaim_h,
            cluster.node_spot_return_h,
            cluster.node_spot_notice_s,
        )
    )
    cpu, mem = (
        np.where(np.isfinite(a), a, -1.0) for a in (cluster.node_cpu, cluster.node_mem)
    )  # inf (no limit) as -1, as failure_col does for nan
    n_racks = len(cluster.rack_oversub)
    rack_region = np.zeros(n_racks, dtype=np.int64)
    for r in range(n_racks):
        regs = np.unique(cluster.node_region[cluster.node_rack == r])
        if len(regs) > 1:
            raise ValueError(f"rack {r} holds nodes of several regions {regs.tolist()}")
        if len(regs):
            rack_region[r] = regs[0]
    accelerators = []
    for t in cluster.types:
        known = cat.resolve(t.name)
        if known is None or not _same_type(known, t):
            accelerators.append(_accelerator_spec(t))
    pools: list[dict[str, Any]] = []
    cols = (
        cluster.node_type,
        cluster.node_devices,
        cluster.node_rack,
        cluster.node_intra_gbs,
        cluster.node_nic_gbps,
        cluster.node_overhead_w,
        avail,
        mtbf,
        repair,
        shape,
        spot_price,
        spot_reclaim,
        spot_return,
        spot_notice,
        cpu,
        mem,
    )
    start = 0
    for i in range(1, n + 1):
        if i < n and all(c[i] == c[start] for c in cols):
            continue
        pools.append(
            {
                "name": f"pool{len(pools)}",
                "accelerator": cluster.types[int(cluster.node_type[start])].name,
                "nodes": i - start,
                "devices_per_node": int(cluster.node_devices[start]),
                "rack": f"rack{int(cluster.node_rack[start])}",
                "intra_gbs": float(cluster.node_intra_gbs[start]),
                "nic_gbps": float(cluster.node_nic_gbps[start]),
                "overhead_w": float(cluster.node_overhead_w[start]),
                "availability": float(avail[start]),
                **({"cpu_cores": int(cpu[start])} if cpu[start] >= 0 else {}),
                **({"host_mem_gb": float(mem[start])} if mem[start] >= 0 else {}),
                **{
                    key: float(col[start])
                    for key, col in (
                        ("mtbf_hours", mtbf),
                        ("repair_hours", repair),
                        ("failure_shape", shape),
                    )
                    if col[start] > 0
                },
                **(
                    {
                        "spot": True,
                        "spot_price_per_hour": float(spot_price[start]),
                        "spot_reclaim_hours": float(spot_reclaim[start]),
                        "spot_return_hours": float(spot_return[start]),
                        "spot_notice_s": float(spot_notice[start]),
                    }
                    if spot_price[start] >= 0
                    else {}
                ),
            }
        )
        start = i
    spec: dict[str, Any] = {
        "name": cluster.name,
        "regions": [
            {
                "name": r.name,
                "carbon_zone": r.carbon_zone,
                "pue": float(r.pue),
                "price_per_kwh": float(r.price_per_kwh),
                "carbon_g_per_kwh": float(r.carbon_g_per_kwh),
            }
            for r in cluster.regions
        ],
        "racks": [
            {
                "name": f"rack{r}",
                "region": cluster.regions[int(rack_region[r])].name,
                "oversubscription": float(cluster.rack_oversub[r]),
            }
            for r in range(n_racks)
        ],
    }
    if accelerators:
        spec["accelerators"] = accelerators
    spec["pools"] = pools
    return spec


# -- Gavel-style shorthand and the one-argument loader -------------------------------------------


def spec_from_shorthand(text: str, catalog: Catalog | None = None) -> dict[str, Any]:
    """The spec of Gavel-style shorthand such as ``"v100:8,p100:8,k80:8"``.

    Each item is ``type:count[:devices_per_server]``; ``count`` counts devices (as Gavel's
    ``cluster_spec`` does), ``devices_per_server`` defaults to
    :data:`GAVEL_DEVICES_PER_SERVER`. Items are separated by ``,`` or ``|`` (Gavel's own
    ``v100:36|p100:36|k80:36``). A count of 0 drops the type; a count that is not a multiple
    of the server size gets one smaller last server. Each type gets its own rack.

    Parameters
    ----------
    text
        The shorthand.
    catalog
        For the type names; default :func:`~clustersim.catalog.load_catalog`.

    Raises
    ------
    SpecError
        With ``field="cluster"`` for any malformed item, unknown type or empty result.
    """
    cat = catalog if catalog is not None else load_catalog()
    items = [s.strip() for s in text.replace("|", ",").split(",")]
    if not any(items):
        raise SpecError("cluster", "empty shorthand; expected e.g. 'v100:8,p100:8,k80:8'")
    racks: list[dict[str, Any]] = []
    pools: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for item in items:
        parts = [s.strip() for s in item.split(":")]
        if len(parts) not in (2, 3) or not all(parts):
            raise SpecError(
                "cluster",
                f"bad item {item!r}: expected type:count or type:count:devices_per_server",
            )
        t = cat.resolve(parts[0])
        if t is None:
            raise SpecError("cluster", f"in {item!r}: {cat.unknown_message(parts[0])}")
        if t.name in seen:
            raise SpecError(
                "cluster", f"{item!r} repeats {t.name} (already given as {seen[t.name]!r})"
            )
        seen[t.name] = item
        try:
            count = int(parts[1])
            per = int(parts[2]) if len(parts) == 3 else GAVEL_DEVICES_PER_SERVER
        except ValueError:
            raise SpecError("cluster", f"bad item {item!r}: counts must be integers") from None
        if count < 0 or per < 1 or per > MAX_DEVICES_PER_NODE:
            raise SpecError(
                "cluster",
                f"bad item {item!r}: count must be >= 0 and devices per server in "
                f"1..{MAX_DEVICES_PER_NODE}",
            )
        if count == 0:
            continue
        label = parts[0].lower()
        racks.append({"name": label})
        full, rest = divmod(count, per)
        if full:
            pools.append(
                {
                    "name": label,
                    "accelerator": t.name,
                    "nodes": full,
                    "devices_per_node": per,
                    "rack": label,
                }
            )
        if rest:
            pools.append(
                {
                    "name": f"{label}-rest",
                    "accelerator": t.name,
                    "nodes": 1,
                    "devices_per_node": rest,
                    "rack": label,
                }
            )
    if not pools:
        raise SpecError("cluster", f"{text!r} describes no devices")
    return {"name": ",".join(i for i in items if i), "racks": racks, "pools": pools}


def cluster_from_shorthand(text: str, catalog: Catalog | None = None) -> Cluster:
    """Build a cluster from Gavel-style shorthand (see :func:`spec_from_shorthand`).

    Parameters
    ----------
    text
        E.g. ``"v100:8,p100:8,k80:8"`` or ``"v100:16:8"``.
    catalog
        For the type names; default :func:`~clustersim.catalog.load_catalog`.

    Raises
    ------
    SpecError
        With ``field="cluster"`` for malformed shorthand.
    """
    spec = spec_from_shorthand(text, catalog)
    return cluster_from_spec(spec, catalog)


# -- the Tiresias simulator's cluster spec -----------------------------------------------------

TIRESIAS_SPEC_COLUMNS: tuple[str, ...] = (
    "num_switch",
    "num_node_p_switch",
    "num_gpu_p_node",
    "num_cpu_p_node",
    "mem_p_node",
)
"""Columns of a Tiresias cluster spec CSV (SymbioticLab/Tiresias ``cluster_spec/*.csv``)."""

_UINT = re.compile(r"^\+?[0-9]+$")


class SpecFileError(SpecError):
    """A cluster file that cannot be read, located by file, line and field.

    Parameters
    ----------
    path
        The file as given, or ``"<input>"`` for text.
    line
        1-based line number (0 when the error is about the whole file).
    field
        Column name, or ``""``.
    message
        What is wrong.

    Notes
    -----
    ``str(error)`` reads ``n32g4.csv:2 [num_gpu_p_node]: must be a positive integer, not 'x'``.
    """

    def __init__(self, path: str, line: int, field: str, message: str) -> None:
        where = f"{path}:{line}" if line else path
        if field:
            where += f" [{field}]"
        SpecError.__init__(self, where, message)
        self.path = path
        self.line = line
        self.column = field


def _looks_like_text(source: str) -> bool:
    return "\n" in source or source.lstrip("\ufeff \t").lower().startswith("num_switch")


def is_tiresias_cluster_spec(text: str) -> bool:
    """True when the first non-blank line of ``text`` is a Tiresias cluster spec header.

    The header must hold every column of :data:`TIRESIAS_SPEC_COLUMNS` (in any order).
    """
    for raw in text.lstrip("\ufeff").splitlines():
        if raw.strip():
            names = {c.strip().lower() for c in raw.split(",")}
            return set(TIRESIAS_SPEC_COLUMNS) <= names
    return False


def tiresias_cluster_spec(
    source: str | os.PathLike[str] | bytes, *, name: str | None = None, path: str | None = None
) -> dict[str, Any]:
    """The spec dict of a Tiresias simulator cluster spec CSV.

    The Tiresias simulator (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep
    Learning", NSDI'19; github.com/SymbioticLab/Tiresias, Apache-2.0) describes its cluster
    by one header line ``num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,
    mem_p_node`` and one data row, e.g. ``1,16,4,128,254`` (``cluster_spec.csv``: 16 nodes of
    4 GPUs under one switch) or ``5,32,8,128,256`` (``n160g8.csv``). The cluster built:

    - one rack per switch (``switch0``, ``switch1``, ...; non-blocking), each with
      ``num_node_p_switch`` nodes of ``num_gpu_p_node`` :data:`~clustersim.perf.REFERENCE_TYPE`
      (P100) devices — the Tiresias testbed's GPU, and the type whose seconds a Tiresias
      trace's durations are (:mod:`clustersim.traces.tiresias`);
    - ``cpu_cores`` = ``num_cpu_p_node``, ``host_mem_gb`` = ``mem_p_node`` (GB);
    - links chosen so that a Tiresias trace replays to its durations (identity: a job alone,
      consolidated, runs its ``duration``, as in Tiresias's simulator, which gives every job
      its duration wherever it is placed — its ``simulator/README.md``: placement "only
      affect[s] resource allocation and job queuing delay"): intra-node
      :data:`~clustersim.perf.REFERENCE_INTRA_GBS`; the NIC carries what the reference
      placement's slowest link carries for the gangs that cross it. With
      ``num_gpu_p_node >= REFERENCE_NODE_DEVICES`` (8) that is the reference network,
      100 Gbit/s (:data:`~clustersim.perf.REFERENCE_NETWORK_GBS`). With smaller nodes a
      gang of up to 8 GPUs crosses nodes where the reference keeps it on one node, so the
      NIC gets the reference node's link, ``8 x REFERENCE_INTRA_GBS`` = 256 Gbit/s: gangs of
      up to 8 replay exactly, larger gangs on such nodes run faster than their durations
      (their ring crosses 32 GB/s instead of the reference's 12.5 GB/s), and gangs larger
      than 8 on nodes of more than 8 GPUs likewise (none of the published specs or traces
      has either). See ``docs/identity-replay.md``.

    Parameters
    ----------
    source
        A path (``str`` or path-like) to the CSV, or its content (``bytes``, or a ``str`` that
        holds a newline or starts with ``num_switch``).
    name
        Cluster name; default the file's stem, ``"tiresias"`` for text.
    path
        Name of the input in error messages when ``source`` is content; default
        ``"<input>"``.

    Returns
    -------
    dict
        A spec for :func:`cluster_from_spec`.

    Raises
    ------
    SpecFileError
        Naming the file, the line and the column: unreadable file, missing column, a value
        that is not a positive integer (``mem_p_node``: a positive number), no data row or
        more than one, a row with the wrong number of fields, a cluster larger than
        :data:`MAX_NODES` nodes or :data:`MAX_DEVICES_PER_NODE` devices per node.

    Examples
    --------
    >>> spec = tiresias_cluster_spec("num_switch,num_node_p_switch,num_gpu_p_node,"
    ...                              "num_cpu_p_node,mem_p_node\\n1,16,4,128,254\\n")
    >>> cluster_from_spec(spec).total_devices
    64
    """
    where = path or "<input>"
    if isinstance(source, bytes):
        data = source
    elif isinstance(source, str) and _looks_like_text(source):
        data = source.encode("utf-8")
    else:
        where = path or os.fspath(source)
        try:
            data = Path(os.fspath(source)).read_bytes()
        except OSError as exc:
            raise SpecFileError(where, 0, "", f"cannot read file: {exc.strerror or exc}") from None
        if name is None:
            name = Path(os.fspath(source)).stem
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SpecFileError(where, line, "", "not UTF-8 text") from None
    rows = [
        (i + 1, raw.strip())
        for i, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
        if raw.strip()
    ]
    if not rows:
        raise SpecFileError(where, 0, "", "empty file; expected a Tiresias cluster spec")
    head_line, head = rows[0]
    columns = [c.strip().lower() for c in head.split(",")]
    for col in TIRESIAS_SPEC_COLUMNS:
        if col not in columns:
            raise SpecFileError(
                where,
                head_line,
                col,
                f"missing column; a Tiresias cluster spec has the header "
                f"{','.join(TIRESIAS_SPEC_COLUMNS)}",
            )
    if len(rows) < 2:
        raise SpecFileError(where, 0, "", "no data row after the header")
    if len(rows) > 2:
        raise SpecFileError(
            where,
            rows[2][0],
            "",
            "more than one data row; a Tiresias cluster spec describes one cluster in one row",
        )
    line, row = rows[1]
    values = [v.strip() for v in row.split(",")]
    if len(values) != len(columns):
        raise SpecFileError(where, line, "", f"{len(values)} fields, the header has {len(columns)}")
    got: dict[str, int] = {}
    for col in TIRESIAS_SPEC_COLUMNS:
        v = values[columns.index(col)]
        if not _UINT.match(v):
            raise SpecFileError(where, line, col, f"must be a positive integer, not {v!r}")
        got[col] = int(v)
        if got[col] < 1:
            raise SpecFileError(where, line, col, f"must be >= 1, not {got[col]}")
    switches, per_switch = got["num_switch"], got["num_node_p_switch"]
    gpus = got["num_gpu_p_node"]
    if switches * per_switch > MAX_NODES:
        raise SpecFileError(
            where,
            line,
            "num_node_p_switch",
            f"{switches} x {per_switch} nodes exceed the limit of {MAX_NODES}",
        )
    if gpus > MAX_DEVICES_PER_NODE:
        raise SpecFileError(
            where, line, "num_gpu_p_node", f"must be <= {MAX_DEVICES_PER_NODE}, not {gpus}"
        )
    nic_gbs = REFERENCE_NETWORK_GBS if gpus >= REFERENCE_NODE_DEVICES else REFERENCE_INTRA_GBS
    racks = [{"name": f"switch{i}"} for i in range(switches)]
    pools = [
        {
            "name": f"switch{i}",
            "accelerator": REFERENCE_TYPE,
            "nodes": per_switch,
            "devices_per_node": gpus,
            "rack": f"switch{i}",
            "intra_gbs": REFERENCE_INTRA_GBS,
            "nic_gbps": nic_gbs * 8.0,
            "cpu_cores": got["num_cpu_p_node"],
            "host_mem_gb": float(got["mem_p_node"]),
        }
        for i in range(switches)
    ]
    return {"name": name or "tiresias", "racks": racks, "pools": pools}


def _is_file(text: str) -> bool:
    try:
        return Path(text).is_file()
    except (OSError, ValueError):
        return False


def load_cluster(arg: str, catalog: Catalog | None = None) -> Cluster:
    """A cluster from a spec file, a preset name, or shorthand (tried in that order).

    A spec file is a JSON spec, or a Tiresias cluster spec CSV (told apart by its header,
    see :func:`tiresias_cluster_spec`).

    Parameters
    ----------
    arg
        ``"cluster.json"``, ``"n32g4.csv"``, ``"philly"`` or ``"v100:8,p100:8"``.
    catalog
        Accelerator catalog; default :func:`~clustersim.catalog.load_catalog`.

    Raises
    ------
    SpecError
        ``field="cluster"`` when ``arg`` is none of the three or a file cannot be read; the
        spec's own field paths for an invalid spec.
    """
    from clustersim import presets  # presets import this module

    text = arg.strip()
    if not text:
        raise SpecError("cluster", "empty cluster argument")
    if _is_file(text) or text.lower().endswith((".json", ".csv")):
        path = Path(text)
        try:
            raw = path.read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise SpecError("cluster", f"cannot read spec file {text!r}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise SpecError("cluster", f"{text}: not UTF-8 text") from None
        if is_tiresias_cluster_spec(raw) or text.lower().endswith(".csv"):
            spec = tiresias_cluster_spec(raw, name=path.stem, path=text)
            return cluster_from_spec(spec, catalog)
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise SpecError(
                "cluster",
                f"{text}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            ) from None
        return cluster_from_spec(obj, catalog)
    if text.lower() in presets.PRESETS:
        return presets.preset(text.lower(), catalog)
    if ":" in text:
        return cluster_from_shorthand(text, catalog)
    names = ", ".join(presets.preset_names())
    raise SpecError(
        "cluster",
        f"{arg!r} is not a JSON spec file, a preset ({names}) or shorthand like 'v100:8,p100:8'",
    )
