"""The normalised job table (DESIGN §3.2).

Every trace reader and workload generator produces a :class:`JobTable`: one row a job, every
column a numpy array of length ``n``. Rows are sorted by submit time (stable, so jobs submitted
at the same instant keep their order in the source), which is the order the engine uses to break
ties.

Units
-----
``work`` is in the units of the job's throughput: training steps (iterations) for jobs whose
``job_type`` has a measured throughput (Gavel's table), otherwise *reference seconds*: the
wall-clock seconds the whole gang of ``num_gpus`` devices needs on the reference accelerator
type, consolidated on as few nodes as possible. Readers of traces that give only a duration
measured on some type convert it (``work = duration × speed of that type / speed of the
reference type``) and record the assumption in their parse report.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from clustersim.errors import ClustersimError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
ObjArray = npt.NDArray[np.object_]

#: Columns with their dtype and the value used when a reader does not provide them.
_DEFAULTS: dict[str, tuple[Any, Any]] = {
    "job_id": (object, None),
    "submit_time": (np.float64, None),
    "num_gpus": (np.int64, None),
    "work": (np.float64, None),
    "user": (object, ""),
    "vc": (object, ""),
    "job_type": (object, ""),
    "gpu_type": (object, ""),
    "priority": (np.int64, 0),
    "deadline": (np.float64, np.nan),
    "cpu": (np.float64, np.nan),
    "mem_gb": (np.float64, np.nan),
    "min_gpus": (np.int64, None),
    "max_gpus": (np.int64, None),
    "gpu_fraction": (np.float64, 1.0),
}


@dataclass(frozen=True, eq=False)
class JobTable:
    """Jobs as parallel arrays, sorted by ``submit_time``.

    Attributes
    ----------
    job_id : (n,) object
        Identifier from the source (string).
    submit_time : (n,) float64
        Arrival time in seconds from the trace start (non-negative, ascending).
    num_gpus : (n,) int64
        Gang size: devices the job needs to run (>= 1).
    work : (n,) float64
        Work to do (> 0), see the module docstring for units.
    user, vc : (n,) object
        User and group / virtual cluster (``""`` when unknown).
    job_type : (n,) object
        Model / job type, e.g. ``"ResNet-50 (batch size 64)"`` (``""`` when unknown).
    gpu_type : (n,) object
        Required accelerator type name (``""``: any).
    priority : (n,) int64
        Larger is more important.
    deadline : (n,) float64
        Absolute deadline in seconds, ``nan`` when none.
    cpu, mem_gb : (n,) float64
        Optional host demands, ``nan`` when unknown.
    min_gpus, max_gpus : (n,) int64
        Elastic range; both equal ``num_gpus`` for rigid jobs.
    gpu_fraction : (n,) float64
        Share of each device the job asks for, in (0, 1]: 1 (the default) a whole device;
        less for a GPU-sharing job (e.g. an openb pod with ``gpu_milli`` 460 has 0.46). With
        GPU sharing on (:mod:`clustersim.gpushare`, docs/gpu-sharing.md) such a one-device
        job takes that share of one GPU and several share a device; otherwise it holds a
        whole device.
    """

    job_id: ObjArray
    submit_time: FloatArray
    num_gpus: IntArray
    work: FloatArray
    user: ObjArray
    vc: ObjArray
    job_type: ObjArray
    gpu_type: ObjArray
    priority: IntArray
    deadline: FloatArray
    cpu: FloatArray
    mem_gb: FloatArray
    min_gpus: IntArray
    max_gpus: IntArray
    gpu_fraction: FloatArray

    @classmethod
    def from_columns(cls, **columns: Any) -> JobTable:
        """Build a validated, submit-sorted table from column sequences.

        Required: ``job_id, submit_time, num_gpus, work``; every other column is optional.
        ``min_gpus``/``max_gpus`` default to ``num_gpus``.

        Raises
        ------
        ClustersimError
            If a column is missing, has the wrong length, or holds an invalid value
            (the message names the column and the first offending row).
        """
        unknown = set(columns) - set(_DEFAULTS)
        if unknown:
            raise ClustersimError(f"unknown job columns: {sorted(unknown)}")
        n = None
        out: dict[str, np.ndarray] = {}
        for name, (dtype, default) in _DEFAULTS.items():
            if name in columns and columns[name] is not None:
                try:
                    arr = np.asarray(columns[name], dtype=dtype)
                except (TypeError, ValueError) as exc:
                    raise ClustersimError(f"job column {name!r}: {exc}") from None
                if arr.ndim != 1:
                    raise ClustersimError(f"job column {name!r} must be one-dimensional")
                if n is None:
                    n = len(arr)
                elif len(arr) != n:
                    raise ClustersimError(f"job column {name!r} has {len(arr)} rows, expected {n}")
                out[name] = arr
            elif default is None and name not in ("min_gpus", "max_gpus"):
                raise ClustersimError(f"job column {name!r} is required")
        assert n is not None
        for name, (dtype, default) in _DEFAULTS.items():
            if name not in out:
                if name in ("min_gpus", "max_gpus"):
                    out[name] = out["num_gpus"].copy()
                else:
                    out[name] = np.full(n, default, dtype=dtype)
        out["job_id"] = _as_str_ids(columns["job_id"], out["job_id"])
        order = np.argsort(out["submit_time"], kind="stable")
        if not np.all(order == np.arange(n)):
            out = {k: v[order] for k, v in out.items()}
        table = cls(**out)
        table.validate()
        return table

    def validate(self) -> None:
        """Check invariants; raise :class:`ClustersimError` naming column and row."""

        def bad(name: str, mask: np.ndarray, what: str) -> None:
            if mask.any():
                i = int(np.flatnonzero(mask)[0])
                raise ClustersimError(
                    f"job column {name!r}: {what} (row {i}, job {self.job_id[i]!r})"
                )

        bad("submit_time", ~np.isfinite(self.submit_time), "not a finite number")
        bad("submit_time", self.submit_time < 0, "negative")
        bad("num_gpus", self.num_gpus < 1, "must be at least 1")
        bad("work", ~np.isfinite(self.work) | (self.work <= 0), "must be positive and finite")
        bad("min_gpus", (self.min_gpus < 1) | (self.min_gpus > self.num_gpus), "out of range")
        bad("max_gpus", self.max_gpus < self.num_gpus, "smaller than num_gpus")
        bad(
            "gpu_fraction",
            ~((self.gpu_fraction > 0) & (self.gpu_fraction <= 1)),
            "must be in (0, 1]",
        )

    def __len__(self) -> int:
        return len(self.submit_time)

    @property
    def elastic(self) -> npt.NDArray[np.bool_]:
        """(n,) bool: jobs whose device count may change while they run."""
        return (self.min_gpus != self.num_gpus) | (self.max_gpus != self.num_gpus)

    def take(self, index: npt.ArrayLike) -> JobTable:
        """Rows ``index`` (bool mask or integer indices), still sorted by submit time."""
        idx = np.asarray(index)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        idx = np.sort(idx)
        return JobTable(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    def replace(self, **columns: Any) -> JobTable:
        """A copy with some columns replaced (re-sorted and re-validated)."""
        cols = {f.name: getattr(self, f.name) for f in fields(self)}
        cols.update(columns)
        return JobTable.from_columns(**cols)

    def columns(self) -> dict[str, np.ndarray]:
        """The columns by name (the arrays themselves, not copies)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _as_str_ids(src: Any, ids: np.ndarray) -> np.ndarray:
    """Job ids as an object array of ``str``, converted in C where the source type allows."""
    kind = getattr(getattr(src, "dtype", None), "kind", "")
    if kind and kind in "iuU":  # integers and numpy strings: numpy's str() is Python's
        return np.asarray(src).astype(str).astype(object)
    if str(getattr(src, "type", "")) in ("string", "large_string"):
        return ids  # a pyarrow string array: its elements are already ``str``
    return np.array([str(x) for x in ids], dtype=object)
