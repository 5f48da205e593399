"""Tiresias job CSV (``60_job.csv``, ``tf_job.csv``).

Format: comma-separated with a header line; one row a job (Gu et al., "Tiresias: A GPU
Cluster Manager for Distributed Deep Learning", NSDI'19; the simulator in
SymbioticLab/Tiresias reads these files). The two published layouts are

- ``job_id,num_gpu,submit_time,iterations,model_name,duration,interval`` (``60_job.csv``);
- ``job_id,num_gpu,submit_time,start_time,duration,model_size,aggr_interval,model_name,
  model_scale`` (``tf_job.csv``).

Columns are found by name, in any order: ``job_id``, ``num_gpu``, ``submit_time`` and
``duration`` are required, ``model_name`` is optional, every other column is ignored.

Mapping to the job table
------------------------
- ``job_id``: ``job_id`` as written; ``submit_time``: ``submit_time`` in seconds, not re-based
  (the Tiresias simulator replays them as they are); ``num_gpus``: ``num_gpu``;
- ``work``: ``duration`` in reference seconds (the file does not say which GPU the duration
  was measured on; it is taken as the reference type);
- ``job_type``: ``model_name`` as written (e.g. ``vgg19``; not a Gavel job type, so the work
  stays in reference seconds), ``""`` without that column;
- ``iterations``, ``interval``, ``start_time``, ``model_size``, ``aggr_interval`` and
  ``model_scale`` describe the testbed runs (parameter-server synchronisation) and are
  ignored; ``user``, ``vc`` and ``gpu_type`` are unknown.

The cluster the jobs ran on is described by the simulator's cluster spec CSV
(``cluster_spec.csv``, ``n32g4.csv``, ...), read by
:func:`clustersim.spec.tiresias_cluster_spec`; replayed alone on it, every job runs exactly its
``duration`` (``docs/identity-replay.md``).

Rows are dropped when ``duration`` ≤ 0 or not finite, ``num_gpu`` is < 1, not an integer or
implausibly large, or ``submit_time`` is negative or not finite. A ``job_id`` that appears
more than once is a warning (``tf_job.csv`` lists its one job twice).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, ClassVar

import numpy as np

from clustersim.jobs import JobTable
from clustersim.traces.arrow import pc
from clustersim.traces.base import (
    ColumnParser,
    IntArray,
    ParseReport,
    TraceReader,
    build_table,
    check_options,
    drop_rows,
    gpu_checks,
    later_repeats,
    read_header_table,
    small_header_table,
    small_trimmed,
    sniff_header,
    trimmed,
)
from clustersim.traces.limits import ReadLimits

REQUIRED = ("job_id", "num_gpu", "submit_time", "duration")
#: Columns of the two published layouts that are read but not used.
IGNORED = ("iterations", "interval", "start_time", "model_size", "aggr_interval", "model_scale")


class TiresiasReader(TraceReader):
    """Reader of Tiresias job CSVs (``job_id,num_gpu,submit_time,...,duration,...``)."""

    name: ClassVar[str] = "tiresias"
    description: ClassVar[str] = (
        "Tiresias job CSV (job_id, num_gpu, submit_time, duration, model_name, ...; "
        "60_job.csv and tf_job.csv layouts)"
    )

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first line is a CSV header with the required Tiresias columns."""
        return sniff_header(head, REQUIRED)

    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse a Tiresias job CSV (no options).

        A small plain file (see :func:`~clustersim.traces.base.small_header_table`) is read
        without pyarrow; the job table and the report are the same either way.
        """
        check_options(self, path, options, set())
        report = ParseReport(format=self.name, path=path)
        numbers = dict.fromkeys(("num_gpu", "submit_time", "duration"), False)
        pick: Callable[[str, IntArray], Any]
        small = small_header_table(data, path, REQUIRED, report, numbers=numbers, limits=limits)
        if small is not None:
            text, values, lines = small
            gpus, submit, duration = (values[c] for c in numbers)
            names: Collection[str] = text.keys()
            pick = lambda name, rows: small_trimmed(text[name], rows)  # noqa: E731
        else:
            cols, lines = read_header_table(
                data, path, REQUIRED, report, numbers=numbers, limits=limits
            )
            parser = ColumnParser(path, lines)
            parser.required(cols["job_id"], "job_id")
            gpus = parser.numbers(cols["num_gpu"], "num_gpu")
            submit = parser.numbers(cols["submit_time"], "submit_time")
            duration = parser.numbers(cols["duration"], "duration")
            parser.check()
            names = cols.keys()
            pick = lambda name, rows: trimmed(cols[name], rows)  # noqa: E731

        keep = drop_rows(
            report,
            lines,
            [
                ("duration <= 0", duration <= 0),
                ("duration not finite", ~np.isfinite(duration)),
                *gpu_checks(gpus, "num_gpu"),
                ("submit_time < 0", submit < 0),
                ("submit_time not finite", ~np.isfinite(submit)),
            ],
        )
        idx = np.flatnonzero(keep)
        ids = pick("job_id", idx)
        report.warn(
            "job_id appears more than once (rows kept as separate jobs)",
            lines[idx][later_repeats(ids)],
        )
        model: Any
        if "model_name" in names:
            model = pick("model_name", idx)
            if small is None:
                model = pc.dictionary_encode(model)
            report.assume("job_type = model_name (not a Gavel job type: work in reference seconds)")
        else:
            model = np.full(len(idx), "", dtype=object)
            report.assume("no model_name column: job types unknown")
        report.assume(
            "submit_time taken as relative seconds, not re-based "
            f"(first submit {submit[idx].min() if len(idx) else 0.0:g} s)"
        )
        report.assume(
            "durations taken as measured on the reference accelerator type P100 "
            "(the file does not name the GPU)"
        )
        ignored = [c for c in IGNORED if c in names]
        if ignored:
            report.assume(
                f"ignored columns: {', '.join(ignored)}; user and virtual cluster unknown"
            )
        table = build_table(
            path,
            report,
            lines[idx],
            {"num_gpus": "num_gpu", "work": "duration"},
            job_id=ids,
            submit_time=submit[idx],
            num_gpus=gpus[idx].astype(np.int64),
            work=duration[idx],
            job_type=model,
        )
        return table, report
