"""Pure helpers around :class:`clustersim.jobs.JobTable`: Parquet bytes, load scaling, summary."""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import numpy as np
import pandas as pd

from clustersim.jobs import JobTable

_STRING_COLUMNS = ("job_id", "user", "vc", "job_type", "gpu_type")


def to_parquet(jobs: JobTable) -> bytes:
    """The table as zstd-compressed Parquet bytes (one column per :class:`JobTable` field)."""
    frame = pd.DataFrame(
        {
            f.name: (
                getattr(jobs, f.name).astype(str)
                if f.name in _STRING_COLUMNS
                else getattr(jobs, f.name)
            )
            for f in dataclasses.fields(JobTable)
        }
    )
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False, compression="zstd")
    return buf.getvalue()


def from_parquet(data: bytes) -> JobTable:
    """Inverse of :func:`to_parquet`.

    A column the file lacks takes the table's default (tables stored before the column
    existed, e.g. ``gpu_fraction``, read as whole-device jobs).
    """
    frame = pd.read_parquet(io.BytesIO(data))
    cols: dict[str, Any] = {}
    for f in dataclasses.fields(JobTable):
        if f.name not in frame.columns:
            continue
        values = frame[f.name].to_numpy()
        cols[f.name] = np.asarray(values, dtype=object) if f.name in _STRING_COLUMNS else values
    return JobTable.from_columns(**cols)


def scale_load(jobs: JobTable, factor: float) -> JobTable:
    """The workload arriving ``factor`` times as fast: submit times divided by ``factor``.

    Deadlines keep their slack (deadline − submit), so a job's urgency does not change.
    """
    if factor <= 0 or not np.isfinite(factor):
        raise ValueError(f"load factor must be a positive number, got {factor}")
    if factor == 1.0:
        return jobs
    submit = jobs.submit_time / factor
    deadline = jobs.deadline - jobs.submit_time + submit
    return dataclasses.replace(jobs, submit_time=submit, deadline=deadline)


_GPU_BUCKETS = ((1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (17, 64), (65, None))


def workload_summary(jobs: JobTable, bins: int = 48) -> dict[str, Any]:
    """What the workload page shows: counts, span, GPU-demand histogram, arrivals over time."""
    n = len(jobs)
    submit = jobs.submit_time
    span = float(submit[-1] - submit[0]) if n else 0.0
    hist = []
    for lo, hi in _GPU_BUCKETS:
        mask = jobs.num_gpus >= lo
        if hi is not None:
            mask &= jobs.num_gpus <= hi
        label = str(lo) if lo == hi else (f"{lo}-{hi}" if hi else f"{lo}+")
        hist.append({"gpus": label, "jobs": int(mask.sum())})
    arrivals: list[dict[str, float]] = []
    if n and span > 0:
        counts, edges = np.histogram(submit, bins=bins)
        width = float(edges[1] - edges[0])
        arrivals = [
            {"t_s": float(e), "jobs": int(c), "per_hour": float(c) / width * 3600.0}
            for e, c in zip(edges[:-1], counts, strict=True)
        ]
    known_type = int(np.count_nonzero(jobs.job_type != ""))
    return {
        "jobs": n,
        "first_submit_s": float(submit[0]) if n else None,
        "last_submit_s": float(submit[-1]) if n else None,
        "span_s": span,
        "arrival_rate_per_hour": (n / span * 3600.0) if span > 0 else None,
        "gpu_demand_total": int(jobs.num_gpus.sum()),
        "gpu_demand_max": int(jobs.num_gpus.max()) if n else 0,
        "users": len(set(jobs.user.tolist()) - {""}),
        "job_types_known": known_type,
        "gpu_demand_histogram": hist,
        "arrivals": arrivals,
    }
