"""The accelerator catalog: known accelerator types, their aliases, and how names resolve.

The catalog is read from ``clustersim/data/accelerators.csv``, which ships with the package.
That file was derived once from ``shared/data/hardware/`` (Epoch AI's ML hardware table,
the Teads/CCF AWS power model and ``accelerators_reference.csv``); the package never reads
the shared folder at run time. Every row names its sources in the ``source`` column, and every
value that is not in those shared files is explained in the ``assumptions`` column, one entry
per value, as ``"<field>: [<tag>] <text>"`` where the tag is

``assumed``
    filled by a stated rule or estimate (e.g. ``idle_w`` = 11.4 % of ``busy_w``, the
    idle/max ratio of the Teads model; a rule-priced type's ``price_per_hour`` =
    ``purchase_usd`` / 5,112.5 h);
``external``
    taken from a named public source outside the shared data (a vendor datasheet, a cloud
    list price recorded by hand);
``note``
    a caveat that fills no value (e.g. the K80 figures are per two-GPU board).

Conventions: ``fp16_tflops`` is the dense (no sparsity) FP16/BF16 tensor peak, or the plain
FP16 rate, or, where FP16 is missing or crippled (K80, P40), the FP32 rate; ``busy_w`` is the
TDP; ``intra_gbs`` (the default intra-node bandwidth of a node of this type) follows the vendor
convention of Epoch's table: the sum over both directions of all of a device's links (NVLink,
PCIe x16, ICI), e.g. 300 GB/s for V100 SXM2, 32 GB/s for PCIe 3.0.

Prices: ``price_per_hour`` is an on-demand cloud price in $ per device-hour with exactly one
source per type, named in the ``price_source`` column, and ``price_date`` the date of that price
(the day it was recorded from the source; for a product the cloud has withdrawn, the last day it
was listed). The source is Google Cloud's published list price wherever Google rents the type
per device: Compute Engine's per-GPU price without the VM in us-central1 (K80, P100, V100, T4,
L4, A100 40 GB) and Cloud TPU's per-chip price. Memory or form-factor variants take their
listed sibling's price (V100 PCIe and 32 GB, P40 as P100). Types no cloud rents per device are
priced by a rule, ``purchase_usd / PURCHASE_HOURS`` (:data:`clustersim.cluster.PURCHASE_HOURS`,
the A100's purchase-to-rent ratio), so a rule-priced type costs what a listed one of the same
purchase price costs; the L40 (no purchase price either) takes the L4's price per dense TFLOPS.
``purchase_usd`` is the capital cost of one device: Epoch's ``Release price (USD)`` where the
table gives one, a vendor's announced price or a stated rule otherwise, and
``price_per_hour × PURCHASE_HOURS`` (a capital equivalent) for TPUs, which are not sold.
``amortisation_years`` is 4 (:data:`clustersim.cluster.DEFAULT_AMORTISATION_YEARS`) except for
the Jetson modules, whose price rule already spreads the kit over 3 years. How the cost metrics
use these fields: ``docs/metrics.md``.

Names resolve case-insensitively, ignoring spaces, ``-``, ``_`` and ``.`` and a leading vendor
word (NVIDIA, Tesla, AMD, Instinct, Radeon, Google, Intel, Habana), so ``"NVIDIA Tesla T4"``,
``"tesla-t4"`` and ``"T4"`` are one type. Some names seen in public traces are deliberately
left unmapped (:data:`UNMAPPED`).

Examples
--------
>>> cat = load_catalog()
>>> cat.get("v100").name
'V100-SXM2-16GB'
>>> cat.resolve("G2") is None
True
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import functools
import io
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from importlib import resources
from types import MappingProxyType

from clustersim.cluster import AcceleratorType

KINDS: tuple[str, ...] = ("gpu", "tpu", "npu", "edge")
"""The accelerator kinds a type may have."""

UNMAPPED: Mapping[str, str] = MappingProxyType(
    {
        "G1": "an undisclosed Alibaba-internal GPU code (openb 2023 trace)",
        "G2": "an undisclosed Alibaba-internal GPU code (openb 2023 trace)",
        "G3": "an undisclosed Alibaba-internal GPU code (openb 2023 trace)",
        "MISC": "Alibaba PAI 2020's bucket of miscellaneous older GPU models",
        "GPU-series-1": "an undisclosed GPU family of the Alibaba spot 2026 trace",
        "GPU-series-2": "an undisclosed GPU family of the Alibaba spot 2026 trace",
        "CPU": "CPU-only machines (no accelerator)",
    }
)
"""Names that occur in public traces but are deliberately not mapped to a catalog type.

Map one yourself with :meth:`Catalog.with_aliases` (``{"G2": "A10"}``) or define a type for
it with :meth:`Catalog.with_types`.
"""

IDLE_FRACTION = 0.114
"""Idle power as a fraction of busy power where no measurement exists.

The Teads/CCF AWS model's idle/max GPU watts: K80 34.8/305.6, T4 8.1/71.3, A100 46.5/407.4,
each 11.4 %.
"""

DEFAULT_INTRA_GBS_BY_KIND: Mapping[str, float] = MappingProxyType(
    {"gpu": 32.0, "npu": 32.0, "tpu": 200.0, "edge": 8.0}
)
"""Intra-node bandwidth (GB/s) assumed for user-defined types, which carry none.

PCIe 3.0 x16 for GPUs and NPUs (the conservative case), the TPU v5e's ICI for TPUs, a PCIe
4.0 x4 carrier-board link for edge modules.
"""

_VENDOR_WORDS = ("nvidia", "tesla", "amd", "instinct", "radeon", "google", "intel", "habana")
_SEPARATORS = re.compile(r"[\s\-_.]+")

_CSV_COLUMNS = (
    "key",
    "kind",
    "manufacturer",
    "fp16_tflops",
    "memory_gb",
    "memory_bw_tbs",
    "busy_w",
    "idle_w",
    "price_per_hour",
    "price_source",
    "price_date",
    "purchase_usd",
    "amortisation_years",
    "release_year",
    "intra_gbs",
    "aliases",
    "epoch_name",
    "source",
    "assumptions",
)
_FLOAT_FIELDS = (
    "fp16_tflops",
    "memory_gb",
    "memory_bw_tbs",
    "busy_w",
    "idle_w",
    "price_per_hour",
    "purchase_usd",
    "amortisation_years",
    "intra_gbs",
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def normalize_name(name: str) -> str:
    """The lookup form of an accelerator name.

    Lower case, without spaces, ``-``, ``_`` or ``.``, and without leading vendor words.

    Parameters
    ----------
    name
        Any spelling, e.g. ``"NVIDIA Tesla V100-SXM2-16GB"``.

    Returns
    -------
    str
        E.g. ``"v100sxm216gb"``; ``""`` for a name made only of vendor words.
    """
    words = [w for w in _SEPARATORS.split(name.strip().lower()) if w]
    while len(words) > 1 and words[0] in _VENDOR_WORDS:
        words.pop(0)
    return "".join(words)


def check_type(acc: AcceleratorType) -> None:
    """Raise ``ValueError`` if an accelerator type has an impossible value.

    Parameters
    ----------
    acc
        The type to check.
    """
    if not acc.name.strip():
        raise ValueError("an accelerator type needs a name")
    if acc.kind not in KINDS:
        raise ValueError(f"{acc.name}: kind {acc.kind!r} is not one of {', '.join(KINDS)}")
    for f in ("fp16_tflops", "memory_gb", "memory_bw_tbs", "busy_w"):
        v = getattr(acc, f)
        if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
            raise ValueError(f"{acc.name}: {f} must be a positive number, not {v!r}")
    for f in ("idle_w", "price_per_hour"):
        v = getattr(acc, f)
        if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
            raise ValueError(f"{acc.name}: {f} must be a number >= 0, not {v!r}")
    p = acc.purchase_usd
    if p is not None and not (isinstance(p, int | float) and math.isfinite(p) and p >= 0):
        raise ValueError(f"{acc.name}: purchase_usd must be a number >= 0 or None, not {p!r}")
    y = acc.amortisation_years
    if not (isinstance(y, int | float) and math.isfinite(y) and y > 0):
        raise ValueError(f"{acc.name}: amortisation_years must be a positive number, not {y!r}")
    if acc.idle_w > acc.busy_w:
        raise ValueError(f"{acc.name}: idle_w ({acc.idle_w}) exceeds busy_w ({acc.busy_w})")
    if not 1990 <= acc.release_year <= 2100:
        raise ValueError(f"{acc.name}: release_year {acc.release_year} is not a plausible year")


class Catalog:
    """An immutable set of accelerator types with a case-insensitive alias table.

    Parameters
    ----------
    types
        The types, in display order. Each type's ``aliases`` are entered into the alias
        table. Names and aliases must be unique after :func:`normalize_name`.
    intra_gbs
        Default intra-node bandwidth (GB/s) per type key; types without an entry fall back on
        :data:`DEFAULT_INTRA_GBS_BY_KIND`.

    Raises
    ------
    ValueError
        If two types share a name, an alias clashes with another type's name or alias, or a
        type has an impossible value.
    """

    def __init__(
        self,
        types: Iterable[AcceleratorType],
        intra_gbs: Mapping[str, float] | None = None,
    ) -> None:
        self._types: tuple[AcceleratorType, ...] = tuple(types)
        self._by_key: dict[str, AcceleratorType] = {}
        self._lookup: dict[str, str] = {}  # normalized name or alias -> key
        for t in self._types:
            check_type(t)
            if t.name in self._by_key:
                raise ValueError(f"duplicate accelerator type {t.name!r}")
            self._by_key[t.name] = t
        for t in self._types:
            for n in (t.name, *t.aliases):
                norm = normalize_name(n)
                if not norm:
                    raise ValueError(f"{t.name}: alias {n!r} is empty after normalisation")
                other = self._lookup.get(norm)
                if other is not None and other != t.name:
                    raise ValueError(
                        f"name {n!r} of {t.name!r} clashes with {other!r} "
                        f"(names compare case-insensitively, ignoring separators)"
                    )
                self._lookup[norm] = t.name
        self._intra: dict[str, float] = {
            k: float(v) for k, v in (intra_gbs or {}).items() if k in self._by_key
        }

    # -- lookup ---------------------------------------------------------------------------

    def resolve(self, name: str) -> AcceleratorType | None:
        """The type called ``name`` (key or alias, any case), or ``None``.

        Parameters
        ----------
        name
            A catalog key or alias.
        """
        key = self._lookup.get(normalize_name(name))
        return None if key is None else self._by_key[key]

    def get(self, name: str) -> AcceleratorType:
        """The type called ``name`` (key or alias, any case).

        Parameters
        ----------
        name
            A catalog key or alias.

        Raises
        ------
        KeyError
            If no type has that name; the message lists close matches, or why a known trace
            name (:data:`UNMAPPED`) is left unmapped.
        """
        t = self.resolve(name)
        if t is None:
            raise KeyError(self.unknown_message(name))
        return t

    def unknown_message(self, name: str) -> str:
        """A one-line explanation that ``name`` is not in the catalog, with close matches."""
        for u, why in UNMAPPED.items():
            if normalize_name(u) == normalize_name(name):
                return (
                    f"accelerator {name!r} is {why} and is not mapped to a catalog type; "
                    "map it to a catalog type with an alias, or define it as a type of your own"
                )
        close = self.close_matches(name)
        hint = f"; close matches: {', '.join(close)}" if close else ""
        return f"unknown accelerator {name!r}{hint} (the catalog lists every known type)"

    def close_matches(self, name: str, n: int = 5) -> list[str]:
        """Catalog keys whose names or aliases resemble ``name``, best first.

        Parameters
        ----------
        name
            The unknown name.
        n
            At most this many keys.
        """
        norm = normalize_name(name)
        found: list[str] = []
        for m in difflib.get_close_matches(norm, list(self._lookup), n=4 * n, cutoff=0.6):
            key = self._lookup[m]
            if key not in found:
                found.append(key)
        if norm:
            for k, key in self._lookup.items():
                if (k.startswith(norm) or norm.startswith(k)) and key not in found:
                    found.append(key)
        return found[:n]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.resolve(name) is not None

    def __iter__(self) -> Iterator[AcceleratorType]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)

    def names(self) -> tuple[str, ...]:
        """The catalog keys, in catalog order."""
        return tuple(t.name for t in self._types)

    def types(self) -> tuple[AcceleratorType, ...]:
        """The types, in catalog order."""
        return self._types

    def aliases(self) -> dict[str, str]:
        """Every alias (as spelt in the types) mapped to its catalog key."""
        return {a: t.name for t in self._types for a in t.aliases}

    def default_intra_gbs(self, name: str) -> float:
        """Default intra-node bandwidth (GB/s) for nodes of the type called ``name``.

        Parameters
        ----------
        name
            A catalog key or alias.

        Raises
        ------
        KeyError
            If the name is unknown.
        """
        t = self.get(name)
        return self._intra.get(t.name, DEFAULT_INTRA_GBS_BY_KIND[t.kind])

    # -- derived catalogs -------------------------------------------------------------------

    def with_types(self, extra: Iterable[AcceleratorType]) -> Catalog:
        """A catalog with user-defined types added.

        A type whose name equals an existing key replaces that entry (its aliases too), so
        users can override e.g. a price. Other names and aliases must not clash.

        Parameters
        ----------
        extra
            The types to add, appended in order after the existing ones.

        Raises
        ------
        ValueError
            On a clash or an impossible value.
        """
        extra = list(extra)
        replaced = {t.name for t in extra}
        if len(replaced) != len(extra):
            raise ValueError("with_types got two types with the same name")
        kept = [
            t if t.name not in replaced else next(x for x in extra if x.name == t.name)
            for t in self._types
        ]
        new = [t for t in extra if t.name not in self._by_key]
        intra = {k: v for k, v in self._intra.items() if k not in replaced}
        return Catalog([*kept, *new], intra_gbs=intra)

    def with_aliases(self, aliases: Mapping[str, str]) -> Catalog:
        """A catalog with an edited alias table.

        Parameters
        ----------
        aliases
            ``{alias: target}``; the target is a key or existing alias. An alias that already
            names another type is moved to the new target.

        Raises
        ------
        KeyError
            If a target is unknown.
        ValueError
            If an alias is (the normalised form of) a catalog key.
        """
        moves: dict[str, tuple[str, str]] = {}  # normalized alias -> (alias, target key)
        for alias, target in aliases.items():
            key = self.get(target).name
            norm = normalize_name(alias)
            if not norm:
                raise ValueError(f"alias {alias!r} is empty")
            if norm in (normalize_name(k) for k in self._by_key) and self._lookup[norm] != key:
                raise ValueError(f"{alias!r} is a catalog key and cannot become an alias")
            moves[norm] = (alias, key)
        types: list[AcceleratorType] = []
        for t in self._types:
            kept = tuple(a for a in t.aliases if normalize_name(a) not in moves)
            added = tuple(
                a for n, (a, k) in moves.items() if k == t.name and n != normalize_name(t.name)
            )
            types.append(
                t if kept + added == t.aliases else dataclasses.replace(t, aliases=kept + added)
            )
        return Catalog(types, intra_gbs=self._intra)

    def __repr__(self) -> str:
        return f"Catalog({len(self._types)} types)"


@dataclasses.dataclass(frozen=True)
class CatalogRow:
    """One row of the shipped CSV with its provenance columns.

    Attributes
    ----------
    type
        The accelerator type built from the row.
    intra_gbs
        Default intra-node bandwidth, GB/s.
    manufacturer, epoch_name, source
        Provenance: vendor, the row of Epoch's table used (``""`` for none), and the cited
        sources.
    price_source, price_date
        Where ``price_per_hour`` comes from (one source per type, or the rule that set it) and
        the date of that price (ISO ``YYYY-MM-DD``, see the module docstring).
    """

    type: AcceleratorType
    intra_gbs: float
    manufacturer: str
    epoch_name: str
    source: str
    price_source: str = ""
    price_date: str = ""


def read_catalog_csv(text: str) -> list[CatalogRow]:
    """Parse the catalog CSV format (see the module docstring).

    Parameters
    ----------
    text
        The CSV text, with the header row.

    Raises
    ------
    ValueError
        On a missing column or a bad value, naming the row.
    """
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in _CSV_COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise ValueError(f"catalog CSV lacks columns {missing}")
    rows: list[CatalogRow] = []
    for lineno, r in enumerate(reader, start=2):
        try:
            values = {f: float(r[f]) for f in _FLOAT_FIELDS}
            if not all(math.isfinite(v) for v in values.values()):
                raise ValueError("non-finite value")
            intra = values.pop("intra_gbs")
            acc = AcceleratorType(
                name=r["key"].strip(),
                kind=r["kind"].strip(),
                release_year=int(r["release_year"]),
                aliases=tuple(a.strip() for a in r["aliases"].split("|") if a.strip()),
                assumptions=tuple(a.strip() for a in r["assumptions"].split(" | ") if a.strip()),
                **values,
            )
            check_type(acc)
            if not r["price_source"].strip():
                raise ValueError("price_source is empty")
            if not _DATE.match(r["price_date"].strip()):
                raise ValueError(f"price_date {r['price_date']!r} is not YYYY-MM-DD")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"catalog CSV line {lineno} ({r.get('key')!r}): {exc}") from exc
        rows.append(
            CatalogRow(
                type=acc,
                intra_gbs=intra,
                manufacturer=r["manufacturer"],
                epoch_name=r["epoch_name"],
                source=r["source"],
                price_source=r["price_source"].strip(),
                price_date=r["price_date"].strip(),
            )
        )
    return rows


@functools.lru_cache(maxsize=1)
def catalog_rows() -> tuple[CatalogRow, ...]:
    """The rows of the shipped ``accelerators.csv`` (cached)."""
    text = resources.files("clustersim").joinpath("data", "accelerators.csv").read_text("utf-8")
    return tuple(read_catalog_csv(text))


@functools.lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The built-in catalog (read once, then cached; it is immutable)."""
    rows = catalog_rows()
    return Catalog((r.type for r in rows), intra_gbs={r.type.name: r.intra_gbs for r in rows})
