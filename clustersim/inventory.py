"""Cluster inventories from node lists: Kubernetes, Slurm, the Alibaba node files, Tiresias.

>>> spec, report = import_inventory("nodes.json")                          # doctest: +SKIP
>>> spec, report = import_inventory("nodes.txt", aliases={"tesla": "P100"})  # doctest: +SKIP
>>> cluster = cluster_from_spec(spec)                                       # doctest: +SKIP

Each importer reads one node per record, resolves the accelerator model name through the
catalog's alias table (extended with ``aliases`` by :meth:`Catalog.with_aliases
<clustersim.catalog.Catalog.with_aliases>`), groups identical nodes into pools and returns a
spec dict that :func:`~clustersim.spec.cluster_from_spec` accepts with the built-in catalog
(pools name catalog keys), plus an :class:`ImportReport`.

Unmapped names are never guessed: nodes whose model the catalog (with ``aliases``) does not
resolve are left out, and the report lists every such name with its node and device counts,
the first place it occurs and the catalog's explanation (close matches, or why a known trace
name such as Alibaba's ``G2`` is deliberately unmapped). Pass an alias to include them. Nodes
without accelerators (CPU-only machines, control-plane nodes) are left out and counted.

Formats
-------
``kubectl``
    ``kubectl get nodes -o json`` (a ``List``/``NodeList`` with ``items``, or one ``Node``).
    Devices: ``status.capacity`` of ``nvidia.com/gpu``, ``amd.com/gpu`` or ``google.com/tpu``.
    Model: the first label present of ``nvidia.com/gpu.product`` (NVIDIA GPU feature
    discovery, e.g. ``NVIDIA-A100-SXM4-80GB``), ``gpu.nvidia.com/class``,
    ``cloud.google.com/gke-accelerator`` (``nvidia-tesla-t4``),
    ``k8s.amazonaws.com/accelerator`` for NVIDIA; ``amd.com/gpu.product-name`` or
    ``beta.amd.com/gpu.product-name`` for AMD; ``cloud.google.com/gke-tpu-accelerator`` for
    TPUs; without a label, the resource name itself (e.g. ``nvidia.com/gpu``, unmapped unless
    aliased). With GPU time-slicing (label ``nvidia.com/gpu.replicas`` > 1) the capacity
    counts replicas: devices = capacity / replicas (and the ``-SHARED`` suffix of the product
    label is dropped). CPU cores and host memory from
    ``status.capacity`` ``cpu`` and ``memory`` (Kubernetes quantities, e.g. ``96``,
    ``7910m``, ``792Gi``). Region and zone from ``topology.kubernetes.io/region|zone`` (or the
    older ``failure-domain.beta.kubernetes.io/...``): each region becomes a spec region (no
    carbon zone: set it yourself), each zone one non-blocking rack. Cordoned nodes
    (``spec.unschedulable``) are kept with a warning.
``slurm``
    ``scontrol show node`` (or ``scontrol show nodes``) text: records of ``Key=Value`` fields
    starting at ``NodeName=``. Devices and model from ``Gres`` items ``gpu:TYPE:N`` (with an
    optional socket suffix such as ``(S:0-1)``); ``gpu:N`` has no type and gets the model
    name ``gpu`` (map it with an alias); a node with GPUs of several types becomes one node
    per type (warned). CPU cores from ``CPUTot``, host memory from ``RealMemory`` (MiB),
    partitions are reported. Nodes in state ``DOWN``, ``DRAIN``, ``FAIL`` or ``INVAL`` are kept
    with a warning. ``scontrol`` shows no topology: each pool gets its own non-blocking rack
    unless ``nodes_per_rack`` is given.
``pai``
    Alibaba PAI 2020 ``pai_machine_spec.csv`` (no header: ``machine, gpu_type, cap_cpu,
    cap_mem [GB], cap_gpu``).
``openb``
    Alibaba GPU 2023 node lists ``openb_node_list_*.csv`` (``sn, cpu_milli, memory_mib, gpu,
    model``).
``spot``
    Alibaba spot 2026 ``node_info_df.csv`` (``gpu_model, gpu_capacity_num, cpu_num,
    node_name``).
``tiresias``
    The Tiresias simulator's cluster spec (``num_switch, num_node_p_switch,
    num_gpu_p_node, num_cpu_p_node, mem_p_node``, one data row; ``cluster_spec.csv``,
    ``n32g4.csv``, ...), built by :func:`~clustersim.spec.tiresias_cluster_spec`: one rack
    per switch, P100 nodes, links chosen so that Tiresias traces replay to their durations.
    ``aliases`` and ``nodes_per_rack`` do not apply.

The three Alibaba formats are laid out as :mod:`clustersim.presets` lays them out (racks of
:data:`~clustersim.presets.ALIBABA_NODES_PER_RACK` servers, NVLink capped at 400 GB/s for
A800/H800), so importing the shared files reproduces the presets.

Units: host memory in GiB (``host_mem_gb``, as the presets). NIC bandwidth, intra-node
bandwidth and node power are not in any of these formats: the spec defaults apply (see
:mod:`clustersim.spec`), and the report says so.

Errors
------
Input that is not in the format raises :class:`InventoryError` (a
:class:`~clustersim.errors.SpecError`) naming the file and, for text formats, the line and
field (``nodes.txt:14 [RealMemory]: ...``), for JSON the path of the value
(``nodes.json: items[3].status.capacity["nvidia.com/gpu"]: ...``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from clustersim.catalog import Catalog, load_catalog
from clustersim.errors import ClustersimError, SpecError
from clustersim.presets import ALIBABA_NODES_PER_RACK, NVLINK_CAPPED_GBS
from clustersim.spec import SpecFileError, cluster_from_spec, tiresias_cluster_spec

#: Formats by name, with a one-line description.
FORMATS: Mapping[str, str] = MappingProxyType(
    {
        "kubectl": "Kubernetes node list (kubectl get nodes -o json)",
        "slurm": "Slurm node list (scontrol show node)",
        "pai": "Alibaba PAI 2020 pai_machine_spec.csv",
        "openb": "Alibaba GPU 2023 openb_node_list_*.csv",
        "spot": "Alibaba spot 2026 node_info_df.csv",
        "tiresias": "Tiresias simulator cluster spec (num_switch,num_node_p_switch,...)",
    }
)

#: Kubernetes extended resources counted as accelerators, with the labels naming their model.
K8S_RESOURCES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "nvidia.com/gpu": (
            "nvidia.com/gpu.product",
            "gpu.nvidia.com/class",
            "cloud.google.com/gke-accelerator",
            "k8s.amazonaws.com/accelerator",
        ),
        "amd.com/gpu": ("amd.com/gpu.product-name", "beta.amd.com/gpu.product-name"),
        "google.com/tpu": ("cloud.google.com/gke-tpu-accelerator",),
    }
)
_K8S_ZONE = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
_K8S_REGION = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
_SLURM_BAD_STATES = ("DOWN", "DRAIN", "FAIL", "INVAL", "NOT_RESPONDING")
#: How many places a report lists per unmapped name or skip reason.
FIRST_PLACES = 5
#: Largest input accepted (bytes).
MAX_BYTES = 512 * 1024 * 1024


class InventoryError(SpecError):
    """A node list that cannot be read.

    Parameters
    ----------
    path
        The file (as given), or ``"<input>"``.
    line
        1-based line number (0 when the error is not tied to a line, e.g. in JSON).
    field
        Field name (text formats) or JSON path of the value, or ``""``.
    message
        What is wrong.
    """

    def __init__(self, path: str, line: int, field: str, message: str) -> None:
        self.path = path
        self.line = line
        if line:
            where = f"{path}:{line}" + (f" [{field}]" if field else "")
        else:
            where = f"{path}: {field}" if field else path
        ClustersimError.__init__(self, f"{where}: {message}")
        self.field = field
        self.message = message


@dataclass
class _Node:
    """One node as read (internal)."""

    name: str
    model: str
    devices: int
    where: str
    cpu: float = math.nan
    mem_gb: float = math.nan
    zone: str = ""
    region: str = ""


@dataclass
class ImportReport:
    """What an importer did with one node list.

    Attributes
    ----------
    format, path : str
        Importer name and the file.
    nodes_read, devices_read : int
        Nodes (records) in the file, and accelerators on them.
    nodes_kept, devices_kept : int
        Nodes and accelerators in the spec.
    pools : int
        Pools in the spec.
    resolved : dict of str to str
        Every model name seen → the catalog key it resolved to.
    unmapped : dict of str to dict
        Model names that resolve to nothing: ``{"nodes", "devices", "first": [places],
        "hint"}``; these nodes are not in the spec.
    skipped : dict of str to dict
        Nodes left out by reason (``"unmapped model"``, ``"no accelerators"``):
        ``{"nodes", "devices", "first": [places]}``.
    warnings, assumptions : list of str
        Data-quality warnings and the interpretations made.
    """

    format: str
    path: str
    nodes_read: int = 0
    devices_read: int = 0
    nodes_kept: int = 0
    devices_kept: int = 0
    pools: int = 0
    resolved: dict[str, str] = field(default_factory=dict)
    unmapped: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    def _skip(self, reason: str, node: _Node) -> None:
        s = self.skipped.setdefault(reason, {"nodes": 0, "devices": 0, "first": []})
        s["nodes"] += 1
        s["devices"] += node.devices
        if len(s["first"]) < FIRST_PLACES:
            s["first"].append(node.where)

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form."""
        return {
            "format": self.format,
            "path": self.path,
            "nodes_read": self.nodes_read,
            "devices_read": self.devices_read,
            "nodes_kept": self.nodes_kept,
            "devices_kept": self.devices_kept,
            "pools": self.pools,
            "resolved": dict(self.resolved),
            "unmapped": {k: dict(v, first=list(v["first"])) for k, v in self.unmapped.items()},
            "skipped": {k: dict(v, first=list(v["first"])) for k, v in self.skipped.items()},
            "warnings": list(self.warnings),
            "assumptions": list(self.assumptions),
        }

    def summary(self) -> list[str]:
        """Lines for a terminal or a page."""
        lines = [
            f"{self.path}: {self.format}",
            f"  nodes read {self.nodes_read:,} ({self.devices_read:,} accelerators), kept "
            f"{self.nodes_kept:,} ({self.devices_kept:,}) in {self.pools} pools",
        ]
        for reason, s in self.skipped.items():
            lines.append(
                f"  skipped {s['nodes']:,} nodes ({s['devices']:,} accelerators): {reason} "
                f"(first at {', '.join(s['first'])})"
            )
        for name, u in self.unmapped.items():
            lines.append(
                f"  unmapped {name!r}: {u['nodes']:,} nodes, {u['devices']:,} accelerators - "
                f"{u['hint']}"
            )
        for name, key in self.resolved.items():
            lines.append(f"  model {name!r} -> {key}")
        lines += [f"  warning: {w}" for w in self.warnings]
        lines += [f"  assumption: {a}" for a in self.assumptions]
        return lines


# --------------------------------------------------------------------------------------------
# entry points


def import_inventory(
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    aliases: Mapping[str, str] | None = None,
    catalog: Catalog | None = None,
    name: str | None = None,
    nodes_per_rack: int | None = None,
) -> tuple[dict[str, Any], ImportReport]:
    """Read a node list file into a cluster spec (module docstring).

    Parameters
    ----------
    path
        The file.
    format
        One of :data:`FORMATS`; ``None`` detects it from the content.
    aliases
        ``{model name as in the file: catalog key or alias}`` added to the catalog's alias
        table.
    catalog
        Base catalog; default :func:`~clustersim.catalog.load_catalog`.
    name
        Cluster name; default the file's stem.
    nodes_per_rack
        Spread each pool over racks of this many nodes (Slurm and Alibaba formats; Kubernetes
        uses zones). Default: Slurm one rack per pool, Alibaba
        :data:`~clustersim.presets.ALIBABA_NODES_PER_RACK`.

    Returns
    -------
    spec : dict
        Accepted by :func:`~clustersim.spec.cluster_from_spec` (with the built-in catalog).
    report : ImportReport

    Raises
    ------
    InventoryError
        If the file cannot be read or is not valid in the format, or no node is left.
    """
    p = os.fspath(path)
    try:
        size = os.path.getsize(p)
        if size > MAX_BYTES:
            raise InventoryError(p, 0, "", f"file too large ({size:,} bytes)")
        data = Path(p).read_bytes()
    except OSError as exc:
        raise InventoryError(p, 0, "", f"cannot read file: {exc.strerror or exc}") from None
    return parse_inventory(
        data,
        format,
        path=p,
        aliases=aliases,
        catalog=catalog,
        name=name or Path(p).stem,
        nodes_per_rack=nodes_per_rack,
    )


def parse_inventory(
    data: bytes | str,
    format: str | None = None,
    *,
    path: str = "<input>",
    aliases: Mapping[str, str] | None = None,
    catalog: Catalog | None = None,
    name: str = "imported",
    nodes_per_rack: int | None = None,
) -> tuple[dict[str, Any], ImportReport]:
    """:func:`import_inventory` on content already in memory (e.g. a web upload).

    Parameters
    ----------
    data
        The file's content (UTF-8 bytes or text).
    path
        Name used in errors and the report.
    format, aliases, catalog, name, nodes_per_rack
        As for :func:`import_inventory`.
    """
    text = _text(data, path)
    fmt = format if format is not None else detect_inventory_format(text, path)
    if fmt not in FORMATS:
        raise InventoryError(
            path, 0, "format", f"unknown format {fmt!r}; known formats: {', '.join(FORMATS)}"
        )
    if nodes_per_rack is not None and not (isinstance(nodes_per_rack, int) and nodes_per_rack >= 1):
        raise InventoryError(path, 0, "nodes_per_rack", "must be an integer >= 1")
    cat = catalog if catalog is not None else load_catalog()
    if aliases:
        for alias, target in aliases.items():
            try:
                cat = cat.with_aliases({alias: target})
            except (KeyError, ValueError) as exc:
                msg = str(exc.args[0]) if exc.args else str(exc)
                raise InventoryError(path, 0, f"aliases[{alias!r}]", msg) from None
    report = ImportReport(format=fmt, path=path)
    if aliases:
        report.assumptions.append(
            "aliases: " + ", ".join(f"{a!r} -> {t!r}" for a, t in aliases.items())
        )
    if fmt == "tiresias":
        return _tiresias(text, path, name, nodes_per_rack, report), report
    nodes = _PARSERS[fmt](text, path, report)
    report.nodes_read = len({n.where for n in nodes})
    report.devices_read = sum(n.devices for n in nodes)
    if not nodes:
        raise InventoryError(path, 0, "", "no node in the file")
    if fmt in ("pai", "openb", "spot"):
        per_rack = nodes_per_rack or ALIBABA_NODES_PER_RACK
    else:
        per_rack = nodes_per_rack or 0
    spec = _build_spec(nodes, cat, report, name, per_rack, fmt)
    try:
        cluster_from_spec(spec)
    except SpecError as exc:  # pragma: no cover - the builder only writes valid specs
        raise InventoryError(path, 0, exc.field, f"built an invalid spec: {exc.message}") from None
    return spec, report


def detect_inventory_format(data: bytes | str, path: str = "<input>") -> str:
    """The format of a node list, from its content.

    Raises
    ------
    InventoryError
        If the content matches no format.
    """
    text = _text(data, path) if isinstance(data, bytes) else data
    head = text.lstrip()
    if head.startswith(("{", "[")):
        return "kubectl"
    if re.search(r"(?m)^\s*NodeName=", text):
        return "slurm"
    first = head.split("\n", 1)[0].strip().replace(" ", "").lower()
    if first.startswith("sn,cpu_milli,memory_mib,gpu"):
        return "openb"
    if first.startswith("gpu_model,gpu_capacity_num"):
        return "spot"
    if first.startswith("num_switch,"):
        return "tiresias"
    parts = first.split(",")
    if len(parts) == 5 and all(_is_number(x) for x in parts[2:]):
        return "pai"
    if head.startswith(("apiVersion:", "kind:", "items:")):
        raise InventoryError(path, 1, "", "YAML node lists are not supported: use kubectl -o json")
    raise InventoryError(
        path, 0, "format", f"unrecognised node list; choose one of: {', '.join(FORMATS)}"
    )


def _is_number(x: str) -> bool:
    try:
        float(x)
    except ValueError:
        return False
    return True


def _text(data: bytes | str, path: str) -> str:
    if isinstance(data, str):
        text = data
    else:
        if len(data) > MAX_BYTES:
            raise InventoryError(path, 0, "", f"input too large ({len(data):,} bytes)")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise InventoryError(path, line, "", "not UTF-8 text") from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise InventoryError(path, line, "", "binary data (NUL byte)")
    return text.replace("\r\n", "\n").replace("\r", "\n")


# --------------------------------------------------------------------------------------------
# Kubernetes


_QUANTITY = re.compile(
    r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$"
)
_SUFFIX = {
    None: 1.0,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}


def parse_quantity(value: Any) -> float:
    """A Kubernetes resource quantity as a number (``"7910m"`` → 7.91, ``"2Gi"`` → 2**31).

    Raises
    ------
    ValueError
        If ``value`` is not a quantity (a string or a JSON number).
    """
    if isinstance(value, bool) or value is None:
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        x = float(value)
    else:
        m = _QUANTITY.match(str(value).strip())
        if m is None:
            raise ValueError(f"not a quantity: {value!r}")
        x = float(m.group(1)) * _SUFFIX[m.group(2)]
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"not a non-negative finite quantity: {value!r}")
    return x


def _jpath(base: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{base}[{key}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{base}.{key}" if base else key
    return f'{base}["{key}"]'


def _obj(parent: Mapping[str, Any], key: str, at: str, path: str) -> dict[str, Any]:
    """``parent[key]`` as an object (``{}`` when absent or null)."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InventoryError(path, 0, _jpath(at, key), "must be an object")
    return value


def _quantity(cap: Mapping[str, Any], key: str, at: str, path: str) -> float:
    try:
        return parse_quantity(cap[key])
    except ValueError as exc:
        raise InventoryError(path, 0, _jpath(at, key), str(exc)) from None


def _parse_kubectl(text: str, path: str, report: ImportReport) -> list[_Node]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InventoryError(path, exc.lineno, "", f"invalid JSON: {exc.msg}") from None
    if isinstance(doc, dict) and doc.get("kind") == "Node":
        items: list[Any] = [doc]
        base = ""
        single = True
    else:
        if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
            raise InventoryError(
                path, 0, "items", "expected a node list (kubectl get nodes -o json) with 'items'"
            )
        items = doc["items"]
        base = "items"
        single = False
    nodes: list[_Node] = []
    replicated = cordoned = 0
    for i, item in enumerate(items):
        where = "" if single else _jpath(base, i)

        if not isinstance(item, dict):
            raise InventoryError(path, 0, where or "(top level)", "a node must be an object")
        meta = _obj(item, "metadata", where, path)
        status = _obj(item, "status", where, path)
        labels = _obj(meta, "labels", _jpath(where, "metadata"), path)
        cap_at = _jpath(_jpath(where, "status"), "capacity")
        cap = _obj(status, "capacity", _jpath(where, "status"), path)
        node_name = meta.get("name")
        if not isinstance(node_name, str) or not node_name:
            raise InventoryError(
                path, 0, _jpath(_jpath(where, "metadata"), "name"), "missing or not a string"
            )
        for k, v in labels.items():
            if not isinstance(v, str):
                raise InventoryError(
                    path, 0, _jpath(_jpath(_jpath(where, "metadata"), "labels"), k), "not a string"
                )

        cpu = _quantity(cap, "cpu", cap_at, path) if "cpu" in cap else math.nan
        mem = _quantity(cap, "memory", cap_at, path) / 2.0**30 if "memory" in cap else math.nan
        zone = next((labels[k] for k in _K8S_ZONE if labels.get(k)), "")
        region = next((labels[k] for k in _K8S_REGION if labels.get(k)), "")
        spec_obj = item.get("spec")
        if isinstance(spec_obj, dict) and spec_obj.get("unschedulable") is True:
            cordoned += 1
        found = False
        for resource, label_keys in K8S_RESOURCES.items():
            if resource not in cap:
                continue
            count = _quantity(cap, resource, cap_at, path)
            if count != int(count):
                raise InventoryError(path, 0, _jpath(cap_at, resource), "not a whole number")
            devices = int(count)
            if devices == 0:
                continue
            shared = False
            if resource == "nvidia.com/gpu" and labels.get("nvidia.com/gpu.replicas"):
                try:
                    reps = int(labels["nvidia.com/gpu.replicas"])
                except ValueError:
                    reps = 1
                if reps > 1:
                    devices = max(1, devices // reps)
                    replicated += 1
                    shared = True
            model = next((labels[k] for k in label_keys if labels.get(k)), resource)
            if shared and model.upper().endswith("-SHARED"):
                model = model[: -len("-SHARED")]  # GPU feature discovery marks shared GPUs
            nodes.append(
                _Node(node_name, model, devices, where or node_name, cpu, mem, zone, region)
            )
            found = True
        if not found:
            nodes.append(_Node(node_name, "", 0, where or node_name, cpu, mem, zone, region))
    if replicated:
        report.warnings.append(
            f"{replicated} nodes share GPUs by time-slicing (nvidia.com/gpu.replicas > 1): "
            "devices = capacity / replicas"
        )
    if cordoned:
        report.warnings.append(f"{cordoned} nodes are cordoned (spec.unschedulable): kept")
    report.assumptions.append(
        "devices, CPU cores and memory from status.capacity; a zone is one non-blocking rack, "
        "a region a spec region without a carbon zone"
    )
    return nodes


# --------------------------------------------------------------------------------------------
# Slurm

_SLURM_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_]*)=")
_GRES_ITEM = re.compile(r"^([^:(]+)(?::([^:(]+))?(?::([^:(]+))?(?:\(.*\))?$")


def _split_gres(text: str) -> list[str]:
    """Split a Gres value at commas outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [s.strip() for s in out if s.strip()]


def _slurm_number(rec: Mapping[str, tuple[str, int]], key: str, path: str) -> float:
    """A numeric field of a Slurm record, ``nan`` when absent."""
    if key not in rec:
        return math.nan
    value, line = rec[key]
    try:
        x = float(value)
    except ValueError:
        raise InventoryError(path, line, key, f"not a number: {value!r}") from None
    if not math.isfinite(x) or x < 0:
        raise InventoryError(path, line, key, f"not a non-negative number: {value!r}")
    return x


def _slurm_gpus(gres: str, line: int, path: str) -> dict[str, int]:
    """``{GPU type: count}`` of a ``Gres`` value (type ``"gpu"`` when it names none)."""
    out: dict[str, int] = {}
    if not gres or gres.lower() in ("(null)", "none", "n/a"):
        return out
    for item in _split_gres(gres):
        g = _GRES_ITEM.match(item)
        if g is None:
            raise InventoryError(path, line, "Gres", f"bad item {item!r}")
        kind, a, b = g.group(1), g.group(2), g.group(3)
        if kind.strip().lower() != "gpu":
            continue  # mps, shard, nic, ...
        if a is None:  # "gpu": Slurm's default count is 1
            model, count = "gpu", "1"
        elif b is None:  # "gpu:N" or "gpu:TYPE"
            model, count = ("gpu", a) if a.strip().isdigit() else (a, "1")
        else:
            model, count = a, b
        count = count.strip()
        if not count.isdigit():
            raise InventoryError(path, line, "Gres", f"GPU count {count!r} in {item!r}")
        model = model.strip()
        out[model] = out.get(model, 0) + int(count)
    return out


def _parse_slurm(text: str, path: str, report: ImportReport) -> list[_Node]:
    records: list[dict[str, tuple[str, int]]] = []
    current: dict[str, tuple[str, int]] | None = None
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        matches = list(_SLURM_KEY.finditer(line))
        if current is None and (not matches or matches[0].group(1) != "NodeName"):
            raise InventoryError(path, lineno, "", "expected NodeName=... to start a node")
        for k, m in enumerate(matches):
            key = m.group(1)
            end = matches[k + 1].start() if k + 1 < len(matches) else len(line)
            value = line[m.end() : end].strip()
            if key == "NodeName":
                current = {}
                records.append(current)
            assert current is not None
            current.setdefault(key, (value, lineno))
        # a line without Key= continues a free-text value (OS, Reason): ignored
    nodes: list[_Node] = []
    bad_state: dict[str, int] = {}
    partitions: dict[str, int] = {}
    mixed = 0
    for rec in records:
        node_name, rec_line = rec["NodeName"]
        if not node_name:
            raise InventoryError(path, rec_line, "NodeName", "empty node name")
        cpu = _slurm_number(rec, "CPUTot", path)
        mem = _slurm_number(rec, "RealMemory", path) / 1024.0
        state = rec.get("State", ("", 0))[0].upper()
        for st in _SLURM_BAD_STATES:
            if st in state:
                bad_state[st] = bad_state.get(st, 0) + 1
                break
        for part in rec.get("Partitions", ("", 0))[0].split(","):
            if part.strip():
                partitions[part.strip()] = partitions.get(part.strip(), 0) + 1
        gres, gres_line = rec.get("Gres", ("", rec_line))
        per_model = _slurm_gpus(gres, gres_line, path)
        where = f"line {rec_line}"
        label = node_name
        if len(per_model) > 1:
            mixed += 1
        if not per_model or all(c == 0 for c in per_model.values()):
            nodes.append(_Node(label, "", 0, where, cpu, mem))
        for model, count in per_model.items():
            if count > 0:
                nodes.append(_Node(label, model, count, where, cpu, mem))
    for s, c in bad_state.items():
        report.warnings.append(f"{c} nodes in state {s}: kept in the inventory")
    if mixed:
        report.warnings.append(
            f"{mixed} nodes hold GPUs of several types: each type became a node of its own "
            "(sharing the node's CPU and memory figures)"
        )
    if partitions:
        report.assumptions.append(
            "partitions (not modelled; nodes per partition): "
            + ", ".join(f"{p} {c}" for p, c in sorted(partitions.items()))
        )
    report.assumptions.append(
        "devices and GPU type from Gres (gpu:TYPE:N), CPU cores from CPUTot, memory from "
        "RealMemory (MiB); no topology in scontrol output"
    )
    return nodes


# --------------------------------------------------------------------------------------------
# Alibaba node files


def _csv_rows(
    text: str, path: str, header: Sequence[str] | None
) -> list[tuple[int, dict[str, str]]]:
    """Rows as ``(line number, {column: value})``; checks the header and field counts."""
    lines = text.split("\n")
    rows: list[tuple[int, dict[str, str]]] = []
    cols: list[str]
    start = 0
    if header is not None:
        while start < len(lines) and not lines[start].strip():
            start += 1
        if start == len(lines):
            return rows
        got = [c.strip() for c in next(csv.reader([lines[start]]))]
        missing = [c for c in header if c not in got]
        if missing:
            raise InventoryError(
                path, start + 1, missing[0], f"missing column (header has {', '.join(got)})"
            )
        cols = got
        start += 1
    else:
        cols = ["machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"]
    for i in range(start, len(lines)):
        if not lines[i].strip():
            continue
        values = next(csv.reader(io.StringIO(lines[i])))
        if len(values) != len(cols):
            raise InventoryError(
                path, i + 1, "", f"expected {len(cols)} fields, found {len(values)}"
            )
        rows.append((i + 1, {c: v.strip() for c, v in zip(cols, values, strict=True)}))
    return rows


def _num(path: str, line: int, row: Mapping[str, str], key: str, blank_ok: bool = False) -> float:
    value = row[key]
    if value == "" and blank_ok:
        return math.nan
    try:
        x = float(value)
    except ValueError:
        raise InventoryError(path, line, key, f"not a number: {value!r}") from None
    if not math.isfinite(x) or x < 0:
        raise InventoryError(path, line, key, f"not a non-negative number: {value!r}")
    return x


def _count(path: str, line: int, row: Mapping[str, str], key: str) -> int:
    x = _num(path, line, row, key)
    if x != int(x):
        raise InventoryError(path, line, key, f"not a whole number: {row[key]!r}")
    return int(x)


def _parse_pai(text: str, path: str, report: ImportReport) -> list[_Node]:
    nodes = []
    for line, row in _csv_rows(text, path, None):
        gpus = _count(path, line, row, "cap_gpu")
        model = row["gpu_type"] if gpus > 0 else ""
        cpu = _num(path, line, row, "cap_cpu")
        mem = _num(path, line, row, "cap_mem")
        nodes.append(_Node(row["machine"], model, gpus, f"line {line}", cpu, mem))
    report.assumptions.append("columns machine, gpu_type, cap_cpu, cap_mem (GB), cap_gpu")
    return nodes


def _parse_openb(text: str, path: str, report: ImportReport) -> list[_Node]:
    nodes = []
    for line, row in _csv_rows(text, path, ("sn", "cpu_milli", "memory_mib", "gpu", "model")):
        gpus = _count(path, line, row, "gpu")
        model = row["model"] if gpus > 0 else ""
        cpu = _num(path, line, row, "cpu_milli") / 1000.0
        mem = _num(path, line, row, "memory_mib") / 1024.0
        nodes.append(_Node(row["sn"], model, gpus, f"line {line}", cpu, mem))
    report.assumptions.append("cpu_milli / 1000 = cores, memory_mib / 1024 = host_mem_gb")
    return nodes


def _parse_spot(text: str, path: str, report: ImportReport) -> list[_Node]:
    nodes = []
    cols = ("gpu_model", "gpu_capacity_num", "cpu_num", "node_name")
    for line, row in _csv_rows(text, path, cols):
        gpus = _count(path, line, row, "gpu_capacity_num")
        model = row["gpu_model"] if gpus > 0 else ""
        cpu = _num(path, line, row, "cpu_num")
        nodes.append(_Node(row["node_name"], model, gpus, f"line {line}", cpu))
    report.assumptions.append("host memory is not in this node list")
    return nodes


def _tiresias(
    text: str, path: str, name: str, nodes_per_rack: int | None, report: ImportReport
) -> dict[str, Any]:
    """A Tiresias cluster spec CSV as a spec (:func:`~clustersim.spec.tiresias_cluster_spec`)."""
    try:
        spec = tiresias_cluster_spec(text.encode("utf-8"), name=name, path=path)
    except SpecFileError as exc:
        raise InventoryError(path, exc.line, exc.column, exc.message) from None
    pools = spec["pools"]
    nodes = sum(int(p["nodes"]) for p in pools)
    devices = sum(int(p["nodes"]) * int(p["devices_per_node"]) for p in pools)
    report.nodes_read = report.nodes_kept = nodes
    report.devices_read = report.devices_kept = devices
    report.pools = len(pools)
    report.resolved["P100"] = "P100"
    pool = pools[0]
    report.assumptions += [
        "every GPU a P100 (the Tiresias testbed's GPU and the reference type of Tiresias "
        "traces' durations); one non-blocking rack per switch",
        f"intra-node {pool['intra_gbs']:g} GB/s and NIC {pool['nic_gbps']:g} Gbit/s, chosen "
        "so that Tiresias traces replay to their durations (docs/identity-replay.md)",
        "mem_p_node read as GB of host memory",
    ]
    if nodes_per_rack is not None:
        report.warnings.append("nodes_per_rack ignored: the racks are the file's switches")
    return spec


_PARSERS = {
    "kubectl": _parse_kubectl,
    "slurm": _parse_slurm,
    "pai": _parse_pai,
    "openb": _parse_openb,
    "spot": _parse_spot,
}


# --------------------------------------------------------------------------------------------
# nodes -> spec


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "pool"


def _build_spec(
    nodes: list[_Node],
    cat: Catalog,
    report: ImportReport,
    name: str,
    per_rack: int,
    fmt: str,
) -> dict[str, Any]:
    groups: dict[tuple[Any, ...], int] = {}
    source_model: dict[tuple[Any, ...], str] = {}
    fractional_cpu = 0
    for node in nodes:
        if node.devices <= 0:
            report._skip("no accelerators", node)
            continue
        acc = cat.resolve(node.model)
        if acc is None:
            if node.model in ("gpu", *K8S_RESOURCES):
                hint = (
                    "the node list names no model for these devices; map "
                    f"{node.model!r} to a catalog type with an alias"
                )
            else:
                hint = cat.unknown_message(node.model)
            u = report.unmapped.setdefault(
                node.model, {"nodes": 0, "devices": 0, "first": [], "hint": hint}
            )
            u["nodes"] += 1
            u["devices"] += node.devices
            if len(u["first"]) < FIRST_PLACES:
                u["first"].append(node.where)
            report._skip("unmapped model", node)
            continue
        report.resolved.setdefault(node.model, acc.name)
        cpu = node.cpu
        if math.isfinite(cpu) and cpu != int(cpu):
            fractional_cpu += 1
        cores = int(cpu) if math.isfinite(cpu) else -1
        mem = round(node.mem_gb, 3) if math.isfinite(node.mem_gb) else -1.0
        capped = NVLINK_CAPPED_GBS.get(node.model) if node.devices > 1 else None
        key = (node.region, node.zone, acc.name, node.devices, cores, mem, capped)
        groups[key] = groups.get(key, 0) + 1
        source_model.setdefault(key, node.model)
        report.nodes_kept += 1
        report.devices_kept += node.devices
    if not groups:
        lost = ", ".join(f"{k} ({v['nodes']} nodes)" for k, v in report.skipped.items())
        raise InventoryError(report.path, 0, "", f"no node with a known accelerator left: {lost}")
    if fractional_cpu:
        report.warnings.append(f"{fractional_cpu} nodes have fractional CPUs: rounded down")

    zoned = any(k[0] or k[1] for k in groups)
    spec: dict[str, Any] = {"name": name}
    rack_of: dict[tuple[str, str], str] = {}
    if zoned:
        regions = sorted({k[0] or "default" for k in groups})
        spec["regions"] = [{"name": r} for r in regions]
        zones = sorted({(k[0] or "default", k[1] or "no-zone") for k in groups})
        zone_names = [z for _, z in zones]
        racks = []
        for region, zone in zones:
            rack = zone if zone_names.count(zone) == 1 else f"{region}-{zone}"
            rack_of[(region, zone)] = rack
            racks.append({"name": rack, "region": region})
        spec["racks"] = racks
    pools: list[dict[str, Any]] = []
    used: set[str] = set()
    for key in sorted(groups, key=lambda k: tuple(str(x) for x in k)):
        region, zone, acc_name, devices, cores, mem, capped = key
        count = groups[key]
        label = f"{source_model[key]}-{devices}g"
        if cores >= 0:
            label += f"-{cores}c"
        if mem >= 0:
            label += f"-{mem:.0f}gb"
        if zone:
            label += f"-{zone}"
        pname = _slug(label)
        base, k = pname, 2
        while pname in used:
            pname, k = f"{base}-{k}", k + 1
        used.add(pname)
        pool: dict[str, Any] = {
            "name": pname,
            "accelerator": acc_name,
            "nodes": count,
            "devices_per_node": devices,
        }
        if zoned:
            pool["rack"] = rack_of[(region or "default", zone or "no-zone")]
        elif per_rack:
            pool["racks"] = max(1, math.ceil(count / per_rack))
        if cores >= 0:
            pool["cpu_cores"] = cores
        if mem >= 0:
            pool["host_mem_gb"] = mem
        if capped is not None:
            pool["intra_gbs"] = capped
        pools.append(pool)
    spec["pools"] = pools
    report.pools = len(pools)
    if any(p.get("intra_gbs") for p in pools):
        report.assumptions.append(
            "A800/H800 nodes: NVLink capped at 400 GB/s (export variants), as the presets"
        )
    if not zoned:
        report.assumptions.append(
            f"racks of {per_rack} nodes per pool (assumed)"
            if per_rack
            else "no topology: each pool is one non-blocking rack"
        )
    report.assumptions.append(
        "NIC, intra-node bandwidth and node power are not in the node list: spec defaults"
    )
    if report.unmapped:
        report.warnings.append(
            f"{sum(u['nodes'] for u in report.unmapped.values()):,} nodes with unmapped models "
            f"left out ({', '.join(map(repr, report.unmapped))}): pass aliases to include them"
        )
    return spec
