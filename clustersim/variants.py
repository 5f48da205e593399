"""What-if variants of a cluster spec, and the pieces of a spec an editor shows.

A capacity planner asks "what if we add 64 H100s", "what if the K80 pool were L4s", "what if
every pool were 1.5x larger". Each operation here takes a spec (:mod:`clustersim.spec`) and
returns a :class:`Variant`: a new, validated spec (the input is never modified) and a label
naming the change, so the variant can be called e.g. ``"small + 64 H100-SXM5-80GB"``.

``add_pool(spec, accelerator, devices, devices_per_node=None, region=None, rack=None,
pool=None)``
    Add ``devices`` accelerators of one type in a new pool of whole nodes of
    ``devices_per_node`` (default: the kind's, 8 for GPUs, :data:`~clustersim.spec.
    DEFAULT_DEVICES_PER_NODE`). ``devices`` must be a multiple of ``devices_per_node``: one
    buys whole servers, and we do not invent a smaller last one. The new pool gets its own
    non-blocking rack (``<pool>-rack``) in ``region`` (default the first region) unless
    ``rack`` names a declared rack, and the spec defaults for every node parameter (NIC,
    intra-node bandwidth, node power, availability).
``replace_type(spec, pool, accelerator)``
    Pool ``pool`` (by name; unnamed pools are ``pool<i>``) gets accelerators of another type,
    keeping its node count, devices per node, racks, region and node parameters, except an
    explicit ``intra_gbs``: it described the old part's links (NVLink on an SXM part, PCIe on
    a PCIe card), so it is dropped and the new type's catalog default applies.
``scale_pools(spec, factor, pool=None)``
    Every pool's node count (or only pool ``pool``'s) times ``factor``, rounded to the nearest
    whole node with halves rounded up: ``floor(n * factor + 0.5)``, with a 1e-9 guard for
    binary fractions (45 x 0.7 is computed as 31.499999999999996 and still becomes 32); so
    3 x 1.5 = 4.5 -> 5 nodes, 7 x 0.3 = 2.1 -> 2 nodes. A pool that would round to 0 nodes
    is an error naming it (remove the pool in the editor instead); a pool spread over
    ``racks: N`` keeps N racks, at most one per node.
    Devices per node stay as they are: scaling buys or retires whole servers.

User-defined types can be named when ``extra_types`` lists them (spec ``accelerators``
entries, e.g. the web app's own types): a pool naming one is resolved and validated as if the
spec defined it, and the spec is left naming it only, as the web app stores specs.

Every error is a :class:`~clustersim.errors.SpecError` whose ``field`` is the operation's
parameter (``"devices"``, ``"pool"``, ``"factor"``, ...) or, for a result the simulator
refuses, the path in the spec.

For the editor: :func:`price_keys` lists the accelerator keys that are prices (those of
:data:`COST_KEYS` the spec format defines), :func:`price_override` writes a catalog type's
entry with other prices, and :func:`split_price_overrides` tells such entries apart from
types of the user's own.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clustersim.catalog import Catalog, load_catalog, normalize_name
from clustersim.cluster import AcceleratorType
from clustersim.errors import SpecError
from clustersim.spec import (
    _ACCEL_KEYS,
    _ACCEL_REQUIRED,
    _POOL_KEYS,
    _RACK_KEYS,
    _REGION_KEYS,
    DEFAULT_DEVICES_PER_NODE,
    DEFAULT_REGION_NAME,
    MAX_DEVICES_PER_NODE,
    MAX_NODES,
    _accelerator_spec,
    cluster_from_spec,
)

#: The keys of each part of a spec, as :mod:`clustersim.spec` accepts them (an editor builds
#: its fields from these, so a key the format gains appears there too).
ACCELERATOR_KEYS: tuple[str, ...] = _ACCEL_KEYS
ACCELERATOR_REQUIRED: tuple[str, ...] = _ACCEL_REQUIRED
POOL_KEYS: tuple[str, ...] = _POOL_KEYS
RACK_KEYS: tuple[str, ...] = _RACK_KEYS
REGION_KEYS: tuple[str, ...] = _REGION_KEYS

#: Accelerator keys that are prices or capital costs, whichever the spec format defines
#: (:func:`price_keys`).
COST_KEYS: tuple[str, ...] = ("price_per_hour", "purchase_usd", "amortisation_years")

#: The assumption :func:`price_override` notes for a price it changes (after ``"<key>: "``).
OVERRIDE_NOTE = "[user] set in this cluster's spec"

#: Rounding guard of :func:`scale_pools` (a product 1e-9 below a half still rounds up).
ROUNDING_GUARD = 1e-9


@dataclass(frozen=True)
class Variant:
    """A changed spec and what changed.

    Attributes
    ----------
    spec : dict
        The new spec, valid for :func:`~clustersim.spec.cluster_from_spec` (with the
        ``extra_types`` the operation was given).
    change : str
        What changed, appended to the original name: ``" + 64 H100-SXM5-80GB"``,
        ``", k80 → L4"``, ``" × 1.5"``, ``", k80 × 0.5"``.
    """

    spec: dict[str, Any]
    change: str

    def name(self, base: str) -> str:
        """The variant's name, ``base`` followed by the change."""
        return f"{base}{self.change}"


def price_keys() -> tuple[str, ...]:
    """The accelerator keys of :data:`COST_KEYS` that the spec format defines, in that order."""
    return tuple(k for k in COST_KEYS if k in ACCELERATOR_KEYS)


def pool_names(spec: Mapping[str, Any]) -> list[str]:
    """The pools' names, ``pool<i>`` for an unnamed one (as the simulator names them)."""
    return [
        str(p.get("name", f"pool{i}")) if isinstance(p, Mapping) else f"pool{i}"
        for i, p in enumerate(spec.get("pools") or [])
    ]


def with_extra_types(
    spec: Mapping[str, Any], extra_types: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """``spec`` with the ``extra_types`` its pools name and it does not define itself added to
    its ``accelerators`` (the web app's ``effective_spec``)."""
    defined = {normalize_name(str(a.get("name", ""))) for a in spec.get("accelerators") or []}
    wanted = {
        normalize_name(str(p.get("accelerator", "")))
        for p in spec.get("pools") or []
        if isinstance(p, Mapping)
    }
    extra = [
        dict(t) for t in extra_types if normalize_name(str(t.get("name", ""))) in wanted - defined
    ]
    if not extra:
        return dict(spec)
    return {**spec, "accelerators": [*(spec.get("accelerators") or []), *extra]}


def resolve_accelerator(
    spec: Mapping[str, Any],
    name: str,
    catalog: Catalog | None = None,
    extra_types: Sequence[Mapping[str, Any]] = (),
) -> AcceleratorType:
    """The type ``name`` means in ``spec``: one of its own ``accelerators``, one of
    ``extra_types``, or a catalog key or alias (any case).

    Raises
    ------
    SpecError
        ``field="accelerator"`` for an unknown name (with close matches).
    """
    if not isinstance(name, str) or not name.strip():
        raise SpecError("accelerator", "give an accelerator type")
    probe: dict[str, Any] = {"pools": [{"accelerator": name, "nodes": 1, "devices_per_node": 1}]}
    if spec.get("accelerators"):
        probe["accelerators"] = spec["accelerators"]
    try:
        cluster = cluster_from_spec(with_extra_types(probe, extra_types), catalog)
    except SpecError as exc:
        if exc.field == "pools[0].accelerator":
            raise SpecError("accelerator", exc.message) from None
        raise
    return cluster.types[0]


def _integer(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(field, f"must be an integer, not {value!r}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise SpecError(field, f"must be an integer, not {value!r}")
    n = int(value)
    if not low <= n <= high:
        raise SpecError(field, f"must be between {low} and {high}, not {n}")
    return n


def _pool_index(spec: Mapping[str, Any], pool: Any) -> int:
    names = pool_names(spec)
    if pool not in names:
        raise SpecError("pool", f"no pool named {pool!r} (pools: {', '.join(names) or 'none'})")
    return names.index(pool)


def _rack_names(spec: Mapping[str, Any]) -> set[str]:
    """Every rack name the spec declares or its pools create (``<pool>-rack[<i>]``)."""
    names = {str(r.get("name")) for r in spec.get("racks") or [] if isinstance(r, Mapping)}
    for pname, p in zip(pool_names(spec), spec.get("pools") or [], strict=True):
        if not isinstance(p, Mapping) or "rack" in p:
            continue
        racks = p.get("racks")
        if isinstance(racks, int) and racks > 0:
            names.update(f"{pname}-rack{j}" for j in range(racks))
        else:
            names.add(f"{pname}-rack")
    return names


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "pool"


def _checked(
    spec: dict[str, Any], catalog: Catalog | None, extra_types: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    cluster_from_spec(with_extra_types(spec, extra_types), catalog)
    return spec


def add_pool(
    spec: Mapping[str, Any],
    accelerator: str,
    devices: int,
    devices_per_node: int | None = None,
    *,
    region: str | None = None,
    rack: str | None = None,
    pool: str | None = None,
    catalog: Catalog | None = None,
    extra_types: Sequence[Mapping[str, Any]] = (),
) -> Variant:
    """``spec`` with ``devices`` accelerators of type ``accelerator`` in a new pool (module
    docstring).

    Parameters
    ----------
    spec
        The cluster spec.
    accelerator
        A catalog key or alias, a type the spec defines, or one of ``extra_types``.
    devices
        How many accelerators, a multiple of ``devices_per_node``.
    devices_per_node
        Accelerators per node; default by kind (8 for GPUs and NPUs, 4 for TPUs, 1 for edge).
    region
        Region of the pool's new rack (a region of the spec); default the first.
    rack
        A declared rack to put the nodes in instead of a new one.
    pool
        The new pool's name; default the type's name in lower case (``h100-sxm5-80gb``),
        numbered if taken.
    catalog, extra_types
        Where type names are looked up (default :func:`~clustersim.catalog.load_catalog`).

    Raises
    ------
    SpecError
        Naming the parameter, e.g. ``devices`` when they do not fill whole nodes.
    """
    t = resolve_accelerator(spec, accelerator, catalog, extra_types)
    n = _integer(devices, "devices", 1, MAX_NODES * MAX_DEVICES_PER_NODE)
    per = DEFAULT_DEVICES_PER_NODE[t.kind] if devices_per_node is None else devices_per_node
    per = _integer(per, "devices_per_node", 1, MAX_DEVICES_PER_NODE)
    if n % per:
        low, high = n - n % per, n - n % per + per
        options = f"{low} or {high}" if low else f"{high}"
        raise SpecError(
            "devices",
            f"{n} devices do not fill whole nodes of {per}: add {options} devices, or choose "
            "another number of devices per node",
        )
    names = pool_names(spec)
    if pool is not None and str(pool).strip():
        pname = str(pool).strip()
        if pname in names:
            raise SpecError("pool", f"the spec has a pool named {pname!r} already")
    else:
        racks = _rack_names(spec)
        base = _slug(t.name)
        pname, k = base, 2
        while pname in names or f"{pname}-rack" in racks:
            pname, k = f"{base}-{k}", k + 1
    if region is not None and str(region).strip():
        regions = [str(r.get("name")) for r in spec.get("regions") or []] or [DEFAULT_REGION_NAME]
        if region not in regions:
            raise SpecError("region", f"no region named {region!r} (regions: {', '.join(regions)})")
    new: dict[str, Any] = {
        "name": pname,
        "accelerator": t.name,
        "nodes": n // per,
        "devices_per_node": per,
    }
    if rack is not None and str(rack).strip():
        new["rack"] = str(rack).strip()
    if region is not None and str(region).strip() and "regions" in spec:
        new["region"] = region
    out = copy.deepcopy(dict(spec))
    out["pools"] = [*out.get("pools", []), new]
    return Variant(_checked(out, catalog, extra_types), f" + {n} {t.name}")


def replace_type(
    spec: Mapping[str, Any],
    pool: str,
    accelerator: str,
    *,
    catalog: Catalog | None = None,
    extra_types: Sequence[Mapping[str, Any]] = (),
) -> Variant:
    """``spec`` with pool ``pool``'s accelerators of type ``accelerator`` (module docstring).

    Raises
    ------
    SpecError
        ``pool`` for an unknown pool, ``accelerator`` for an unknown type or the pool's own.
    """
    i = _pool_index(spec, pool)
    t = resolve_accelerator(spec, accelerator, catalog, extra_types)
    old = resolve_accelerator(
        spec, str(spec["pools"][i].get("accelerator", "")), catalog, extra_types
    )
    if old.name == t.name:
        raise SpecError("accelerator", f"pool {pool!r} has {t.name} already")
    out = copy.deepcopy(dict(spec))
    new = {k: v for k, v in out["pools"][i].items() if k != "intra_gbs"}
    new["accelerator"] = t.name
    out["pools"][i] = new
    return Variant(_checked(out, catalog, extra_types), f", {pool} → {t.name}")


def scaled_nodes(nodes: int, factor: float) -> int:
    """``nodes * factor`` to the nearest whole node, halves up (:data:`ROUNDING_GUARD`)."""
    return math.floor(nodes * factor + 0.5 + ROUNDING_GUARD)


def scale_pools(
    spec: Mapping[str, Any],
    factor: float,
    pool: str | None = None,
    *,
    catalog: Catalog | None = None,
    extra_types: Sequence[Mapping[str, Any]] = (),
) -> Variant:
    """``spec`` with every pool's node count (or pool ``pool``'s) times ``factor``, rounded
    as the module docstring says.

    Raises
    ------
    SpecError
        ``factor`` when it is not a positive number other than 1, or a pool would have no
        node left; ``pool`` for an unknown pool.
    """
    if isinstance(factor, bool) or not isinstance(factor, int | float):
        raise SpecError("factor", f"must be a number, not {factor!r}")
    f = float(factor)
    if not (math.isfinite(f) and f > 0):
        raise SpecError("factor", f"must be a positive number, not {factor!r}")
    if f == 1.0:
        raise SpecError("factor", "1 changes nothing")
    chosen = None if pool is None or pool == "" else _pool_index(spec, pool)
    out = copy.deepcopy(dict(spec))
    names = pool_names(spec)
    for i, p in enumerate(out.get("pools", [])):
        if chosen is not None and i != chosen:
            continue
        nodes = _integer(p.get("nodes"), f"pools[{i}].nodes", 1, MAX_NODES)
        n = scaled_nodes(nodes, f)
        if n < 1:
            raise SpecError(
                "factor",
                f"pool {names[i]!r}: {nodes} nodes × {f:g} = {nodes * f:g} rounds to 0 nodes; "
                "use a larger factor, or remove the pool in the editor",
            )
        p["nodes"] = n
        if isinstance(p.get("racks"), int) and p["racks"] > n:
            p["racks"] = n
    where = "" if chosen is None else f", {names[chosen]}"
    return Variant(_checked(out, catalog, extra_types), f"{where} × {f:g}")


#: The operations by name, for a caller that gets the name as data (a web form, the API).
OPERATIONS: Mapping[str, Callable[..., Variant]] = {
    "add_pool": add_pool,
    "replace_type": replace_type,
    "scale": scale_pools,
}


# -- prices for the editor ------------------------------------------------------------------


def price_override(
    name: str, prices: Mapping[str, Any], catalog: Catalog | None = None
) -> dict[str, Any]:
    """The ``accelerators`` entry of catalog type ``name`` with other ``prices`` (keys of
    :func:`price_keys`; a missing or ``None`` one keeps the catalog's). The catalog's
    assumption about a changed price (its source) is replaced by one saying the spec sets it.

    Raises
    ------
    SpecError
        ``field="name"`` for a name that is not a catalog type; a key that is no price.
    """
    cat = catalog if catalog is not None else load_catalog()
    t = cat.resolve(name)
    if t is None:
        raise SpecError("name", cat.unknown_message(name))
    entry = _accelerator_spec(t)
    notes = list(entry.get("assumptions", []))
    for key, value in prices.items():
        if key not in price_keys():
            raise SpecError(key, f"not a price (prices: {', '.join(price_keys())})")
        if value is None or value == entry.get(key):
            continue
        was = entry.get(key)
        notes = [a for a in notes if not a.startswith(f"{key}:")]
        notes.append(f"{key}: {OVERRIDE_NOTE}" + ("" if was is None else f" (catalog: {was:g})"))
        entry[key] = value
    entry["assumptions"] = notes
    return entry


def _without_price_notes(notes: Any) -> list[str]:
    return [a for a in notes or [] if not a.startswith(tuple(f"{k}:" for k in price_keys()))]


def split_price_overrides(
    accelerators: Sequence[Mapping[str, Any]], catalog: Catalog | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(own types, price overrides)`` of a spec's ``accelerators``.

    An entry is a price override when it is a catalog type's entry exactly
    (:func:`price_override`) but for its prices; the override is ``{"name", <price keys>}``
    with the prices it sets. Every other entry is a type of the user's own, returned as is.
    """
    cat = catalog if catalog is not None else load_catalog()
    own: list[dict[str, Any]] = []
    overrides: list[dict[str, Any]] = []
    prices = price_keys()
    for entry in accelerators:
        t = cat.resolve(str(entry.get("name", "")))
        if t is not None and t.name == entry.get("name"):
            base = _accelerator_spec(t)
            same = set(entry) <= set(base) and all(
                k in entry and entry[k] == base[k]
                for k in base
                if k not in (*prices, "assumptions")
            )
            same = same and _without_price_notes(entry.get("assumptions")) == (
                _without_price_notes(base.get("assumptions"))
            )
            if same:
                overrides.append({"name": t.name, **{k: entry[k] for k in prices if k in entry}})
                continue
        own.append(dict(entry))
    return own, overrides
