"""GAIA job CSV (``pai-100k.csv``).

Format: comma-separated with a header line ``arrival_time,length,cpus``; one row a job
(Hanafy et al., "Going Green for Less Green: Optimizing the Cost of Reducing Cloud Carbon
Emissions", ASPLOS'24; ``src/cluster_traces`` of umassos/GAIA). ``arrival_time`` and
``length`` are in **hours**, ``cpus`` the job's CPU cores. The published file holds 99,998
jobs over one year derived from the Alibaba PAI 2020 trace. Columns may come in any order;
extra columns are ignored.

Mapping to the job table
------------------------
- ``job_id``: the 0-based index of the data row (blank lines not counted);
- ``submit_time``: ``arrival_time`` × 3600, not re-based: the trace spans one year of hours
  (0 to 8,760) meant to be laid over an hourly carbon-intensity series (GAIA's simulator
  starts the series at a chosen hour, ``--start-index``). The report's ``start_time`` is the
  calendar time of hour 0: by default ``2023-01-01T00:00:00`` (UTC), the first hour of the
  shared 2023 carbon data (``shared/data/README.md``: the trace "lines up with hourly carbon
  data"); option ``start_time`` changes it (``None`` leaves it unset);
- ``work``: ``length`` × 3600 in reference seconds (GAIA jobs are CPU jobs whose length does
  not depend on a GPU type);
- ``num_gpus``: GAIA's jobs ask for CPUs, not GPUs. By default every job takes one device
  (a job is one schedulable unit; its CPU count is kept in ``cpu``). With option
  ``cpus_per_gpu`` = k, a job takes ``ceil(cpus / k)`` devices instead;
- ``cpu``: ``cpus``; ``user``, ``vc``, ``job_type`` and ``gpu_type`` are unknown.

Rows are dropped when ``length`` ≤ 0 or not finite, ``arrival_time`` is negative or not
finite, ``cpus`` is not positive and finite, or (with ``cpus_per_gpu``) the device count is
implausibly large.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

import numpy as np

from clustersim.errors import TraceError
from clustersim.jobs import JobTable
from clustersim.traces.base import (
    MAX_GPUS,
    ColumnParser,
    ParseReport,
    TraceReader,
    build_table,
    check_options,
    drop_rows,
    index_ids,
    positive_option,
    read_header_table,
    sniff_header,
)
from clustersim.traces.limits import ReadLimits

REQUIRED = ("arrival_time", "length", "cpus")
#: Calendar time of hour 0 by default: the first hour of the shared 2023 carbon data (UTC).
DEFAULT_START = "2023-01-01T00:00:00"
_UNSET = object()


class GaiaReader(TraceReader):
    """Reader of GAIA job CSVs (``arrival_time,length,cpus``, hours)."""

    name: ClassVar[str] = "gaia"
    description: ClassVar[str] = (
        "GAIA job CSV (arrival_time and length in hours, cpus; carbon-aware scheduling traces)"
    )

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first line is a CSV header with the GAIA columns."""
        return sniff_header(head, REQUIRED)

    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse a GAIA CSV (options ``cpus_per_gpu``, ``start_time``)."""
        check_options(self, path, options, {"cpus_per_gpu", "start_time"})
        given = options.get("cpus_per_gpu")
        per_gpu = None if given is None else positive_option(given, path, "cpus_per_gpu")
        start = _start(options.get("start_time", _UNSET), path)
        report = ParseReport(format=self.name, path=path)
        cols, lines = read_header_table(
            data, path, REQUIRED, report, numbers=dict.fromkeys(REQUIRED, False), limits=limits
        )

        parser = ColumnParser(path, lines)
        arrival = parser.numbers(cols["arrival_time"], "arrival_time")
        length = parser.numbers(cols["length"], "length")
        cpus = parser.numbers(cols["cpus"], "cpus")
        parser.check()

        with np.errstate(over="ignore", invalid="ignore"):
            submit = arrival * 3600.0
            work = length * 3600.0
            gpus = np.ones(len(lines)) if per_gpu is None else np.ceil(cpus / per_gpu)
        checks = [
            ("length <= 0", length <= 0),
            ("length not finite", ~np.isfinite(work)),
            ("arrival_time < 0", arrival < 0),
            ("arrival_time not finite", ~np.isfinite(submit)),
            ("cpus not positive and finite", ~(np.isfinite(cpus) & (cpus > 0))),
        ]
        if per_gpu is not None:
            checks.append((f"devices (cpus / cpus_per_gpu) > {MAX_GPUS}", gpus > MAX_GPUS))
        keep = drop_rows(report, lines, checks)
        idx = np.flatnonzero(keep)

        report.assume(
            "arrival_time and length in hours; submit times not re-based "
            f"(first arrival {arrival[idx].min() if len(idx) else 0.0:g} h): hour 0 is laid on "
            "the first hour of the carbon-intensity series"
        )
        if start is not None:
            report.start_time = start
            report.assume(f"hour 0 taken as {start} (UTC; option start_time)")
        report.assume("work = length in reference seconds (CPU jobs: no GPU type to convert from)")
        if per_gpu is None:
            report.assume(
                "GAIA jobs ask for CPUs, not GPUs: one device per job (option cpus_per_gpu maps "
                "CPUs to devices); CPU count kept in the cpu column"
            )
        else:
            report.assume(f"devices = ceil(cpus / {per_gpu:g}) (option cpus_per_gpu)")
        report.assume("job_id is the 0-based index of the data row; user and job type unknown")
        table = build_table(
            path,
            report,
            lines[idx],
            {"submit_time": "arrival_time", "work": "length", "num_gpus": "cpus", "cpu": "cpus"},
            job_id=index_ids(idx),
            submit_time=submit[idx],
            num_gpus=gpus[idx].astype(np.int64),
            work=work[idx],
            cpu=cpus[idx],
        )
        return table, report


def _start(value: Any, path: str) -> str | None:
    if value is _UNSET:
        return DEFAULT_START
    if value is None:
        return None
    try:
        stamp = datetime.fromisoformat(str(value))
    except ValueError:
        raise TraceError(
            path, 0, "start_time", f"start_time {value!r} is not an ISO 8601 time"
        ) from None
    if stamp.tzinfo is not None:
        raise TraceError(path, 0, "start_time", "start_time must be a naive UTC time")
    return stamp.isoformat(timespec="seconds")
