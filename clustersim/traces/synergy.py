"""Synergy job trace CSV (``static_100job_6_3_1100.0.csv``, ``test_trace.csv``).

Format: comma-separated, no header, five fields a line: ``job_id, model, arrival, num_iters,
gpu_demand`` (Mohan et al., "Looking Beyond GPUs for DNN Scheduling on Multi-Tenant
Clusters", OSDI'22; written by ``Runner.record_job`` and read by
``Workload.populate_from_trace`` in msr-fiddle/synergy ``simulator/``).

Mapping to the job table
------------------------
- ``job_id``: ``job_id``; ``num_gpus``: ``gpu_demand``; ``job_type``: ``model`` as written
  (Synergy's model names such as ``res18`` or ``gnmt``; not Gavel job types, so the work is
  in reference seconds);
- ``submit_time``: ``arrival`` in **seconds** by default. Synergy's simulator keeps its clock
  in seconds (``poisson_next_arrival_time`` returns seconds, job logs divide the arrival by
  3600 to print hours, rounds last 300 s) and both writes and replays this field unchanged.
  ``shared/data/README.md`` calls the field hours; pass ``arrival_unit="h"`` to read it so.
  Not re-based;
- ``work``: ``num_iters`` × the model's iteration time (:data:`ITERATION_TIME_S`, seconds per
  iteration at Synergy's GPU-proportional "fair share" of CPU and memory, from
  ``Model.use_real_scores`` / ``models/<model>_1.py`` of Synergy's simulator; Synergy keeps
  the per-iteration time of a job independent of its GPU count) × the speed of the V100 that
  Synergy measured on relative to the reference type (Synergy's default cluster is 128 V100s,
  16 servers of 8 GPUs, 24 CPUs and 500 GB each; :func:`clustersim.jobtypes.reference_speed`);
- ``user``, ``vc`` and ``gpu_type`` are unknown. Synergy's CPU and memory sensitivity is not
  modelled.

Options
-------
``arrival_unit``
    ``"s"`` (default) or ``"h"``.
``iteration_time_s``
    ``{model: seconds per iteration on V100}``, overriding or extending
    :data:`ITERATION_TIME_S`.

Rows are dropped when ``num_iters`` ≤ 0 or not finite, ``gpu_demand`` is < 1, not an integer
or implausibly large, the arrival is negative or not finite, or the model has no iteration
time.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from clustersim.errors import TraceError
from clustersim.jobs import JobTable
from clustersim.jobtypes import reference_speed
from clustersim.traces.arrow import pc
from clustersim.traces.base import (
    ColumnParser,
    DelimitedText,
    ParseReport,
    TraceReader,
    build_table,
    check_options,
    drop_rows,
    gpu_checks,
    head_lines,
    positive_map_option,
    trim,
    trimmed,
)
from clustersim.traces.limits import ReadLimits

FIELDS = ("job_id", "model", "arrival", "num_iters", "gpu_demand")
#: Accelerator type Synergy's iteration times were measured on.
PROFILE_TYPE = "V100"
#: Seconds per iteration of each Synergy model at fair-share CPU and memory, on V100
#: (``Model.use_real_scores`` in Synergy's ``simulator/jobs/model.py``).
ITERATION_TIME_S: dict[str, float] = {
    "alexnet": 0.6,
    "res18": 0.64,
    "res50": 0.78,
    "mobilenet": 0.71,
    "shufflenet": 0.615,
    "deepspeech": 0.757,
    "m5": 0.486,
    "transformer": 0.67,
    "gnmt": 0.12,
    "lstm": 0.011,
}
_UNITS = {"s": 1.0, "h": 3600.0}


class SynergyReader(TraceReader):
    """Reader of Synergy's job traces (no header: ``job_id,model,arrival,num_iters,gpu_demand``)."""

    name: ClassVar[str] = "synergy"
    description: ClassVar[str] = (
        "Synergy job trace CSV without header (job_id, model, arrival, num_iters, gpu_demand)"
    )

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first lines have five fields: integer, name, number, number, integer."""
        lines = head_lines(head, limit=5)
        if not lines:
            return False
        for line in lines:
            f = [x.strip() for x in line.split(",")]
            if len(f) != 5 or not f[0].isdigit() or not f[4].isdigit():
                return False
            if not f[1] or not f[1][0].isalpha():
                return False
            try:
                float(f[2])
                float(f[3])
            except ValueError:
                return False
        return True

    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse a Synergy trace (options ``arrival_unit``, ``iteration_time_s``)."""
        check_options(self, path, options, {"arrival_unit", "iteration_time_s"})
        unit = options.get("arrival_unit", "s")
        if not isinstance(unit, str) or unit not in _UNITS:
            raise TraceError(
                path, 0, "arrival_unit", f"arrival_unit must be 's' or 'h', not {unit!r}"
            )
        iter_time = dict(ITERATION_TIME_S)
        iter_time.update(
            positive_map_option(
                options.get("iteration_time_s"), path, "iteration_time_s", "model names"
            )
        )
        report = ParseReport(format=self.name, path=path)
        text = DelimitedText(data, ",")
        if not text:
            raise TraceError(path, 0, "", "empty file")
        numbers = dict.fromkeys(("arrival", "num_iters", "gpu_demand"), False)
        cols = text.columns(path, list(FIELDS), numbers=numbers)
        lines = text.lines
        report.jobs_read = len(lines)

        parser = ColumnParser(path, lines)
        parser.required(cols["job_id"], "job_id")
        parser.required(cols["model"], "model")
        arrival = parser.numbers(cols["arrival"], "arrival") * _UNITS[unit]
        iters = parser.numbers(cols["num_iters"], "num_iters")
        gpus = parser.numbers(cols["gpu_demand"], "gpu_demand")
        parser.check()

        encoded = pc.dictionary_encode(trim(cols["model"]))
        names = [str(x) for x in encoded.dictionary.to_pylist()]
        code = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        per_model = np.array([iter_time.get(m, math.nan) for m in names])[code]
        speed = reference_speed(PROFILE_TYPE) or 1.0
        with np.errstate(invalid="ignore", over="ignore"):
            work = iters * per_model * speed

        with np.errstate(invalid="ignore"):
            keep = drop_rows(
                report,
                lines,
                [
                    ("num_iters <= 0", iters <= 0),
                    ("num_iters not finite", ~np.isfinite(iters)),
                    *gpu_checks(gpus, "gpu_demand"),
                    ("arrival < 0", arrival < 0),
                    ("arrival not finite", ~np.isfinite(arrival)),
                    ("model has no iteration time (give iteration_time_s)", np.isnan(per_model)),
                    ("work not finite", ~np.isfinite(work)),
                ],
            )
        idx = np.flatnonzero(keep)
        models = np.array(names, dtype=object)[code][idx]
        used = sorted(
            names[i] for i in np.flatnonzero(np.bincount(code[idx], minlength=len(names)))
        )
        report.assume(
            f"arrival in {'hours' if unit == 'h' else 'seconds'}"
            + (" (Synergy's simulator clock; arrival_unit='h' reads hours)" if unit == "s" else "")
            + f", not re-based (first arrival {arrival[idx].min() if len(idx) else 0.0:g} s)"
        )
        report.assume(
            "work = num_iters × iteration time of the model on V100 at fair-share CPU/memory "
            f"(Synergy's profiles) × V100 speed {speed:.3f} relative to the reference type; "
            "iteration times (s): " + ", ".join(f"{m} {iter_time[m]:g}" for m in used)
        )
        report.assume(
            "job_type = Synergy model name (work in reference seconds); CPU and memory "
            "sensitivity not modelled; user and virtual cluster unknown"
        )
        table = build_table(
            path,
            report,
            lines[idx],
            {"submit_time": "arrival", "num_gpus": "gpu_demand", "work": "num_iters"},
            job_id=trimmed(cols["job_id"], idx),
            submit_time=arrival[idx],
            num_gpus=gpus[idx].astype(np.int64),
            work=work[idx],
            job_type=models,
        )
        return table, report
