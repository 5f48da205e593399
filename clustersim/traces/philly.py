"""Microsoft Philly trace, as processed by the Pollux authors (``philly.csv``).

Format: comma-separated with a header line ``timestamp,duration,num_gpus,gpu_time,cluster``;
one row a job. ``timestamp`` is the submit time (``YYYY-MM-DD HH:MM:SS``, no time zone),
``duration`` the measured run time in seconds, ``num_gpus`` the gang size, ``gpu_time`` =
``duration × num_gpus`` and ``cluster`` the virtual-cluster hash. Columns may come in any
order; ``gpu_time`` and ``cluster`` are optional and extra columns are ignored.

Mapping to the job table
------------------------
- ``job_id``: the 0-based index of the data row in the file (blank lines not counted), so a
  job keeps its id whatever else is dropped;
- ``submit_time``: seconds since the earliest kept submit time (re-based to 0; the report's
  ``start_time`` holds the original calendar time);
- ``work``: ``duration`` in reference seconds (the trace has no job types and does not say
  which GPU a job ran on; the Philly cluster was mostly P100 — taken as the reference type);
- ``num_gpus``: ``num_gpus``; ``vc``: ``cluster``; ``user`` and ``job_type``: unknown (``""``).

Rows are dropped when ``duration`` ≤ 0 or is not finite, or when ``num_gpus`` is < 1, not an
integer or implausibly large. A ``gpu_time`` that disagrees with ``duration × num_gpus`` is
a warning.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from clustersim.jobs import JobTable
from clustersim.traces.arrow import pc
from clustersim.traces.base import (
    ColumnParser,
    ParseReport,
    TraceReader,
    blank,
    build_table,
    check_options,
    drop_rows,
    gpu_checks,
    index_ids,
    read_header_table,
    sniff_header,
    to_float,
    trimmed,
)
from clustersim.traces.limits import ReadLimits

REQUIRED = ("timestamp", "duration", "num_gpus")
OPTIONAL = ("gpu_time", "cluster")
#: Relative tolerance when comparing ``gpu_time`` with ``duration × num_gpus``.
GPU_TIME_RTOL = 1e-6


class PhillyReader(TraceReader):
    """Reader of the processed Philly CSV (``timestamp,duration,num_gpus,gpu_time,cluster``)."""

    name: ClassVar[str] = "philly"
    description: ClassVar[str] = (
        "Microsoft Philly jobs, processed CSV "
        "(timestamp, duration, num_gpus, gpu_time, cluster; Pollux's philly.csv)"
    )

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first line is a CSV header with the required Philly columns."""
        return sniff_header(head, REQUIRED)

    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse a processed Philly CSV (no options)."""
        check_options(self, path, options, set())
        report = ParseReport(format=self.name, path=path)
        cols, lines = read_header_table(data, path, REQUIRED, report, limits=limits)

        parser = ColumnParser(path, lines)
        stamps = parser.timestamps(cols["timestamp"], "timestamp")
        duration = parser.numbers(cols["duration"], "duration")
        gpus = parser.numbers(cols["num_gpus"], "num_gpus")
        parser.check()

        keep = drop_rows(
            report,
            lines,
            [
                ("duration <= 0", duration <= 0),
                ("duration not finite", ~np.isfinite(duration)),
                *gpu_checks(gpus, "num_gpus", "<= 0"),
            ],
        )

        if "gpu_time" in cols:
            gpu_time, unparseable = to_float(cols["gpu_time"])
            report.warn(
                "gpu_time is not a number", lines[keep & unparseable & ~blank(cols["gpu_time"])]
            )
            with np.errstate(invalid="ignore", over="ignore"):
                mismatch = ~np.isclose(gpu_time, duration * gpus, rtol=GPU_TIME_RTOL, atol=0.5)
            report.warn(
                "gpu_time differs from duration × num_gpus (kept; duration used)",
                lines[keep & mismatch & ~np.isnan(gpu_time)],
            )

        idx = np.flatnonzero(keep)
        kept_stamps = stamps[idx]
        if len(idx):
            origin = kept_stamps.min()
            submit = (kept_stamps - origin) / np.timedelta64(1, "s")
            report.start_time = str(np.datetime_as_string(origin, unit="s"))
            report.assume(
                f"submit times re-based: t = 0 is the earliest kept submit time "
                f"{report.start_time}; timestamps carry no time zone and are used as written "
                "(if they are US Pacific local time like the raw Philly logs, gaps spanning "
                "the 2017-11-05 DST change are off by one hour)"
            )
        else:
            submit = np.zeros(0)
        report.assume(
            "durations taken as measured on the reference accelerator type P100; "
            "no job types in this trace"
        )
        report.assume("job_id is the 0-based index of the data row in the file; user unknown")
        if "cluster" in cols:
            vc = pc.dictionary_encode(trimmed(cols["cluster"], idx))
        else:
            vc = np.full(len(idx), "", dtype=object)
            report.assume("no cluster column: virtual cluster unknown")
        table = build_table(
            path,
            report,
            lines[idx],
            {"submit_time": "timestamp", "work": "duration"},
            job_id=index_ids(idx),
            submit_time=submit,
            num_gpus=gpus[idx].astype(np.int64),
            work=duration[idx],
            vc=vc,
        )
        return table, report
