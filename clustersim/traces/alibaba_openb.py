"""Alibaba GPU 2023 "openb" pod lists (``openb_pod_list_*.csv``).

Format: comma-separated with a header line; one row a pod (Weng et al., "Beware of
Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent",
ATC'23; alibaba/clusterdata ``cluster-trace-gpu-v2023``). The full layout is
``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase, creation_time,
deletion_time, scheduled_time`` (times in seconds from the start of the trace); some variants
(``multigpu50``) keep only the first five columns. Columns are found by name, in any order:
the first five are required; the three time columns come all together or not at all;
``gpu_spec``, ``qos`` and ``pod_phase`` are optional. ``scheduled_time`` is empty for pods
that were never scheduled, ``gpu_spec`` for pods without a GPU-type constraint.

Mapping to the job table
------------------------
- ``job_id``: ``name``; ``submit_time``: ``creation_time``, not re-based (0 is the start of
  the trace in every variant);
- run time: ``deletion_time − scheduled_time``. A pod never scheduled (empty
  ``scheduled_time``: in ``openb_pod_list_default.csv`` exactly the ``Pending`` pods, 897 of
  them, 861 asking for GPUs) never ran: it is dropped, counted under its own reason. (Its
  waiting time before deletion is not a run time; replaying it as one would add demand the
  cluster never served.) A pod without ``deletion_time`` runs until the trace end (the
  latest time in the file). Known quirk: ``Running`` pods carry a ``deletion_time``
  (alibaba/clusterdata#218): it is used as their end. Those whose ``deletion_time`` is the
  trace end were still running when the trace was cut, so their run time is a lower bound
  (warned);
- ``num_gpus``: ``num_gpu``. CPU-only pods (``num_gpu`` 0) are dropped;
- ``gpu_fraction``: GPU-sharing pods (``num_gpu`` 1, ``0 < gpu_milli < 1000``, thousandths
  of a GPU; 2,573 of the 6,203 pods kept from the default list) are kept with ``gpu_fraction =
  gpu_milli / 1000``, the share of a device they asked for, and counted in a warning. With
  GPU sharing on (:mod:`clustersim.gpushare`, docs/gpu-sharing.md) several share a device;
  otherwise each holds one whole device. Their run time is kept as measured (a shared GPU
  slowed them down, if anything). Option ``sharing="drop"`` drops them instead (counted
  under their own reason), for a study of the whole-GPU workload only. A pod of an optional
  ``mig_profile`` column (``3g.20gb``, …) asks for that MIG slice: ``gpu_fraction`` is its
  compute slices over 7 (:data:`clustersim.gpushare.MIG_PROFILES`); a profile the pod's
  ``gpu_spec`` device does not offer, or a slice with ``num_gpu`` other than 1, is dropped
  with its reason. Every other pod has ``gpu_fraction`` 1;
- ``gpu_type``: from ``gpu_spec`` (e.g. ``"V100M32|V100M16"``: any of those types). Names
  resolve through the catalog aliases (``V100M16`` → ``V100-SXM2-16GB``); names the catalog
  deliberately leaves unmapped (``G2``, ``G3``) are kept as written and reported. The job
  table holds one type, so a constraint naming several distinct types is dropped (the pod
  may run anywhere; default, option ``multi_spec="any"``) or replaced by its first listed
  type (``multi_spec="first"``);
- ``work``: the run time in reference seconds; for a pod whose ``gpu_type`` is a catalog type
  (a one-type constraint, so it ran there; with ``multi_spec="first"`` the first listed type is
  assumed) × that type's speed relative to the reference type
  (:func:`clustersim.jobtypes.reference_speed`), so that it runs there as long as measured;
- ``priority``: from ``qos``: ``LS`` (latency-sensitive) and ``Guaranteed`` 2, ``Burstable``
  1, ``BE`` (best effort) 0; unknown classes 0 (warned);
- ``cpu``: ``cpu_milli`` / 1000 cores; ``mem_gb``: ``memory_mib`` / 1024 (GiB taken as GB);
- ``user``, ``vc``, ``job_type``: unknown.

Without time columns (``multigpu50``) every pod arrives at 0 (the ATC'23 simulator schedules
such a list as one batch) and gets the nominal run time ``nominal_duration_s``, by default
:data:`NOMINAL_DURATION_S`, the median run time of the scheduled GPU pods of
``openb_pod_list_default.csv`` (which this variant was sampled from); the report says so.
Such a list says nothing about scheduling, so no pod is dropped as never scheduled.

Options
-------
``phases``
    Pod phases to keep (default all: ``Succeeded``, ``Failed``, ``Running``, ``Pending``);
    pods in other phases are dropped with a reason.
``multi_spec``
    ``"any"`` (default) or ``"first"``, see ``gpu_type``.
``nominal_duration_s``
    Run time of pods of a list without time columns.
``sharing``
    ``"keep"`` (default): GPU-sharing pods are kept, marked with their ``gpu_fraction``;
    ``"drop"``: they are dropped.

Rows are dropped (each counted under the first reason that applies, in this order) when
``num_gpu`` is 0 (CPU-only), negative, not an integer or implausibly large, ``gpu_milli`` is
outside [0, 1000], ``gpu_milli`` is below 1000 with ``num_gpu`` above 1 (a share is of one
GPU), the MIG profile is not offered or is asked for more than one GPU, the pod shares a GPU
and ``sharing="drop"``, the phase is not selected,
the pod was never scheduled, ``creation_time`` is negative or not finite, or the pod's end is
not after its ``scheduled_time``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from clustersim.catalog import UNMAPPED, load_catalog, normalize_name
from clustersim.errors import TraceError
from clustersim.jobs import JobTable
from clustersim.jobtypes import reference_speed
from clustersim.traces.arrow import pa, pc
from clustersim.traces.base import (
    MAX_GPUS,
    ColumnParser,
    DelimitedText,
    FloatArray,
    ParseReport,
    TraceReader,
    blank,
    build_table,
    check_options,
    data_columns,
    drop_rows,
    header_names,
    is_numbers,
    name_list_option,
    numbers_of,
    positive_option,
    sniff_header,
    trim,
    trimmed,
)
from clustersim.traces.limits import ReadLimits

REQUIRED = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
TIMES = ("creation_time", "deletion_time", "scheduled_time")
#: Median run time (deletion − scheduled, s) of the 6,203 scheduled GPU pods of
#: ``openb_pod_list_default.csv``: the default run time of pods of lists without times.
NOMINAL_DURATION_S = 655.0
#: Priority of each QoS class.
QOS_PRIORITY: dict[str, int] = {"LS": 2, "Guaranteed": 2, "Burstable": 1, "BE": 0}
PHASES = ("Succeeded", "Failed", "Running", "Pending")
MULTI_SPEC = ("any", "first")
SHARING = ("keep", "drop")
#: Drop reason of pods without ``scheduled_time``.
NEVER_SCHEDULED = "never scheduled (no scheduled_time): no run to replay"
#: Drop reason of GPU-sharing pods with ``sharing="drop"``.
SHARING_DROPPED = "GPU-sharing pod (0 < gpu_milli < 1000; option sharing='drop')"


class AlibabaOpenbReader(TraceReader):
    """Reader of Alibaba GPU 2023 openb pod lists (all variants)."""

    name: ClassVar[str] = "alibaba-openb"
    description: ClassVar[str] = (
        "Alibaba GPU 2023 openb pod list CSV (name, cpu_milli, memory_mib, num_gpu, gpu_milli, "
        "gpu_spec, qos, pod_phase, creation/deletion/scheduled_time; five-column variant too)"
    )

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first line is a CSV header with the openb pod columns."""
        return sniff_header(head, REQUIRED)

    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse an openb pod list (options ``phases``, ``multi_spec``, ``nominal_duration_s``,
        ``sharing``)."""
        check_options(
            self, path, options, {"phases", "multi_spec", "nominal_duration_s", "sharing"}
        )
        phases = name_list_option(options.get("phases"), path, "phases", "pod phases")
        multi = options.get("multi_spec", "any")
        if multi not in MULTI_SPEC:
            raise TraceError(
                path, 0, "multi_spec", f"multi_spec must be 'any' or 'first', not {multi!r}"
            )
        sharing = options.get("sharing", "keep")
        if sharing not in SHARING:
            raise TraceError(
                path, 0, "sharing", f"sharing must be 'keep' or 'drop', not {sharing!r}"
            )
        nominal = positive_option(
            options.get("nominal_duration_s", NOMINAL_DURATION_S), path, "nominal_duration_s"
        )
        report = ParseReport(format=self.name, path=path)
        text = DelimitedText(data, ",")
        names = header_names(text, path, REQUIRED, limits)
        have = [c for c in TIMES if c in names]
        if have and len(have) < len(TIMES):
            missing = [c for c in TIMES if c not in names]
            raise TraceError(
                path,
                text.first_line,
                missing[0],
                f"missing column (a pod list has all of {', '.join(TIMES)} or none of them)",
            )
        timed = bool(have)
        numbers = dict.fromkeys(("cpu_milli", "memory_mib", "num_gpu", "gpu_milli"), False)
        if timed:
            numbers.update(creation_time=False, deletion_time=True, scheduled_time=True)
        cols, lines = data_columns(text, path, names, report, numbers)
        n = len(lines)

        parser = ColumnParser(path, lines)
        parser.required(cols["name"], "name")
        cpu_milli = parser.numbers(cols["cpu_milli"], "cpu_milli")
        mem_mib = parser.numbers(cols["memory_mib"], "memory_mib")
        gpus = parser.numbers(cols["num_gpu"], "num_gpu")
        milli = parser.numbers(cols["gpu_milli"], "gpu_milli")
        if timed:
            creation = parser.numbers(cols["creation_time"], "creation_time")
            deletion = _optional_numbers(parser, cols["deletion_time"], "deletion_time")
            scheduled = _optional_numbers(parser, cols["scheduled_time"], "scheduled_time")
        parser.check()

        phase_names, phase = _encode(cols.get("pod_phase"), n)
        with np.errstate(invalid="ignore"):
            cpu_only = gpus == 0
            negative = gpus < 0
            fractional = ~np.isfinite(gpus) | (np.floor(gpus) != gpus)
            huge = gpus > MAX_GPUS
            bad_milli = ~((milli >= 0) & (milli <= 1000))
            shares = (gpus == 1) & (milli > 0) & (milli < 1000)
        checks = [
            ("CPU-only pod (num_gpu = 0)", cpu_only),
            ("num_gpu < 0", negative),
            ("num_gpu not an integer", fractional & ~negative),
            (f"num_gpu > {MAX_GPUS}", huge & ~fractional),
            ("gpu_milli outside [0, 1000]", bad_milli),
        ]
        # a share spans one GPU: fewer than 1000 milli on each of several GPUs is malformed
        checks.append(
            (
                "gpu_milli < 1000 with num_gpu > 1 (a share is of one GPU)",
                (gpus > 1) & (milli > 0) & (milli < 1000),
            )
        )
        # MIG slices (optional column mig_profile): a profile the pod's device does not offer
        mig_names, mig = _encode(cols.get("mig_profile"), n)
        mig_milli_of = np.array([_mig_milli(m) for m in mig_names], dtype=np.float64)
        raw_spec_names, raw_spec = _encode(cols.get("gpu_spec"), n)
        mig_ok = np.array(
            [[_mig_offered(m, sp) for sp in raw_spec_names] for m in mig_names], dtype=bool
        )
        on_mig = (mig_milli_of[mig] > 0) | (np.array([bool(m) for m in mig_names])[mig])
        checks.append(("MIG profile not offered by the pod's GPU", on_mig & ~mig_ok[mig, raw_spec]))
        checks.append(("MIG slice with num_gpu other than 1", on_mig & (gpus != 1)))
        shares = shares | (on_mig & (gpus == 1))
        milli = np.where(on_mig & (gpus == 1), mig_milli_of[mig], milli)
        if sharing == "drop":
            checks.append((SHARING_DROPPED, shares))
        if phases is not None:
            chosen_codes = [i for i, p in enumerate(phase_names) if p in phases]
            checks.append(("pod_phase not selected (option phases)", ~np.isin(phase, chosen_codes)))

        if timed:
            trace_end = _finite_max([creation, deletion, scheduled])
            undeleted = np.isnan(deletion)
            end = np.where(undeleted, trace_end, deletion)
            with np.errstate(invalid="ignore", over="ignore"):
                duration = end - scheduled
            checks += [
                (NEVER_SCHEDULED, np.isnan(scheduled)),
                ("creation_time < 0", creation < 0),
                ("creation_time not finite", ~np.isfinite(creation)),
                ("times not finite", ~np.isfinite(duration)),
                ("deletion_time not after scheduled_time", duration <= 0),
            ]
            submit = creation
        else:
            duration = np.full(n, nominal)
            submit = np.zeros(n)
        spec_types, spec_speed, spec_kind, spec = _constraints(cols.get("gpu_spec"), n, multi)
        speed = spec_speed[spec]
        with np.errstate(invalid="ignore", over="ignore"):
            work_all = duration * speed
        checks.append(("work not finite", ~np.isfinite(work_all)))
        keep = drop_rows(report, lines, checks)
        idx = np.flatnonzero(keep)
        kl = lines[idx]

        # GPU sharing.
        kept_gpus, kept_milli, kept_phase = gpus[idx], milli[idx], phase[idx]
        share = shares[idx]
        fraction = np.where(share, kept_milli / 1000.0, 1.0)
        if share.any():
            report.warn(
                f"GPU-sharing pods (0 < gpu_milli < 1000, {kept_milli[share].sum() / 1000:.1f} "
                "GPUs of demand in total, MIG slices included): kept with "
                "gpu_fraction = gpu_milli / 1000; with GPU sharing on (a GPU-sharing placement "
                "such as fgd) several share a device, otherwise each holds a whole device; run "
                "times kept as measured (option sharing='drop' drops them)",
                kl[share],
            )
        kept_mig = on_mig[idx]
        if kept_mig.any():
            report.assume("MIG slice: gpu_fraction = compute slices / 7 (e.g. 3g.20gb: 3/7)")
        report.warn("GPU pod with gpu_milli = 0: whole GPUs assumed", kl[(kept_milli == 0)])

        # Phases and times.
        counts = np.bincount(kept_phase, minlength=len(phase_names))
        listed = ", ".join(
            f"{k or '(none)'} {c}"
            for k, c in sorted(zip(phase_names, counts.tolist(), strict=True))
            if c
        )
        chosen = "all kept" if phases is None else f"kept only {', '.join(phases)}"
        if "pod_phase" in cols:
            report.assume(f"pod phases of kept pods: {listed} ({chosen}; option phases)")
        if timed:
            running = kept_phase == (
                phase_names.index("Running") if "Running" in phase_names else -1
            )
            kept_deletion, kept_undeleted = deletion[idx], undeleted[idx]
            at_end = kept_deletion == trace_end
            report.warn(
                "pod_phase Running with deletion_time at the trace end: still running when the "
                "trace was cut (run time is a lower bound)",
                kl[running & at_end],
            )
            report.warn(
                "pod_phase Running but deletion_time before the trace end (known quirk, "
                "alibaba/clusterdata#218): deletion_time taken as the end",
                kl[running & ~at_end & ~kept_undeleted],
            )
            report.warn(
                f"no deletion_time: runs until the trace end {trace_end:g} s (run time is a "
                "lower bound)",
                kl[kept_undeleted],
            )
            report.warn("scheduled_time before creation_time", kl[scheduled[idx] < creation[idx]])
            report.assume(
                "submit_time = creation_time, not re-based "
                f"(first {submit[idx].min() if len(idx) else 0.0:g} s); run time = deletion_time "
                "− scheduled_time; pods never scheduled are dropped"
            )
        else:
            report.warn(
                "no creation/deletion/scheduled_time columns: every pod arrives at 0 with the "
                f"nominal run time {nominal:g} s (option nominal_duration_s)",
                kl,
            )
            report.assume(
                f"run time {nominal:g} s for every pod: median run time of the scheduled GPU "
                "pods of openb_pod_list_default.csv"
                if nominal == NOMINAL_DURATION_S
                else f"run time {nominal:g} s for every pod (option nominal_duration_s)"
            )

        kept_spec = spec[idx]
        _report_constraints(
            "gpu_spec" in cols, spec_types, spec_speed, spec_kind, kept_spec, kl, multi, report
        )

        priority = np.zeros(len(idx), dtype=np.int64)
        if "qos" in cols:
            qos_names, qos = _encode(cols["qos"], n)
            level = np.array([QOS_PRIORITY.get(q, -1) for q in qos_names], dtype=np.int64)
            kept = level[qos[idx]]
            priority = np.maximum(kept, 0)
            report.warn("unknown qos class: priority 0", kl[kept < 0])
            report.assume("priority from qos: LS and Guaranteed 2, Burstable 1, BE 0")
        report.assume(
            "cpu = cpu_milli / 1000 cores; mem_gb = memory_mib / 1024 (GiB taken as GB); "
            "user, virtual cluster and job type unknown"
        )
        kept_cpu, kept_mem = cpu_milli[idx], mem_mib[idx]
        with np.errstate(invalid="ignore"):
            cpu = np.where(np.isfinite(kept_cpu), kept_cpu / 1000.0, np.nan)
            mem = np.where(np.isfinite(kept_mem), kept_mem / 1024.0, np.nan)
        table = build_table(
            path,
            report,
            kl,
            {
                "submit_time": "creation_time",
                "num_gpus": "num_gpu",
                "work": "deletion_time - scheduled_time",
                "cpu": "cpu_milli",
                "mem_gb": "memory_mib",
            },
            job_id=trimmed(cols["name"], idx),
            submit_time=submit[idx],
            num_gpus=kept_gpus.astype(np.int64),
            work=work_all[idx],
            gpu_type=spec_types[kept_spec],
            priority=priority,
            cpu=cpu,
            mem_gb=mem,
            gpu_fraction=fraction,
        )
        return table, report


def _constraints(
    values: pa.Array | None, n: int, multi: str
) -> tuple[np.ndarray, FloatArray, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """GPU-type constraints by distinct ``gpu_spec``.

    Returns
    -------
    types : (k,) object
        Per distinct spec: the ``gpu_type`` constraint (entry 0: no spec).
    speed : (k,) float64
        Speed the run time is scaled by.
    kind : (k,) int64
        0 no constraint, 1 one type, 2 several types.
    code : (n,) int64
        Each pod's spec.
    """
    out_type: list[str] = [""]
    out_speed: list[float] = [1.0]
    out_kind: list[int] = [0]
    if values is None:
        return (
            np.array(out_type, dtype=object),
            np.array(out_speed),
            np.array(out_kind, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
        )
    specs, code = _encode(values, n)
    catalog = load_catalog()
    for spec in specs:
        parts = [p.strip() for p in spec.split("|") if p.strip()]
        if not parts or spec.lower() == "nan":
            out_type.append("")
            out_speed.append(1.0)
            out_kind.append(0)
            continue
        resolved: list[str] = []
        for p in parts:
            acc = catalog.resolve(p)
            name = acc.name if acc is not None else p
            if name not in resolved:
                resolved.append(name)
        if len(resolved) == 1 or multi == "first":
            out_type.append(resolved[0])
            out_speed.append(reference_speed(resolved[0]) or 1.0)
        else:
            out_type.append("")
            out_speed.append(1.0)
        out_kind.append(1 if len(resolved) == 1 else 2)
    return (
        np.array(out_type, dtype=object),
        np.array(out_speed, dtype=np.float64),
        np.array(out_kind, dtype=np.int64),
        code + 1,
    )


def _report_constraints(
    has_spec: bool,
    types: np.ndarray,
    speed: FloatArray,
    kind: npt.NDArray[np.int64],
    code: npt.NDArray[np.int64],
    lines: np.ndarray,
    multi: str,
    report: ParseReport,
) -> None:
    """Assumptions and warnings about the kept pods' GPU-type constraints (``code``: their
    index into the per-spec arrays ``types``, ``speed`` and ``kind``)."""
    if not has_spec:
        report.assume("no gpu_spec column: no GPU-type constraints; work = run time")
        return
    pods = np.bincount(code, minlength=len(types))
    single, several = int(pods[kind == 1].sum()), int(pods[kind == 2].sum())
    report.assume(
        f"gpu_spec: {single} pods constrained to one type, {several} to several "
        + (
            "(left unconstrained: the table holds one type; option multi_spec)"
            if multi == "any"
            else "(constrained to the first listed type; option multi_spec)"
        )
        + f", {len(code) - single - several} unconstrained"
    )
    catalog = load_catalog()
    unmapped: dict[str, int] = {}
    for t, c in zip(types.tolist(), pods.tolist(), strict=True):
        if t and c and catalog.resolve(t) is None:
            unmapped[t] = unmapped.get(t, 0) + c
    if unmapped:
        listed = ", ".join(f"{name} {count}" for name, count in sorted(unmapped.items()))
        why = {normalize_name(u): w for u, w in UNMAPPED.items()}
        notes = sorted({why[normalize_name(u)] for u in unmapped if normalize_name(u) in why})
        report.warn(
            f"gpu_spec names not in the catalog, kept as written (pods per name: {listed}"
            + (f"; {'; '.join(notes)}" if notes else "")
            + "): such pods run only on a cluster with a type of that name",
            lines[np.isin(code, [i for i, t in enumerate(types.tolist()) if t in unmapped])],
        )
    used = sorted(
        {str(t) for t, c, v in zip(types, pods, speed, strict=True) if t and c and v != 1}
    )
    if used:
        report.assume(
            "work = run time × speed of the constrained type relative to the reference type "
            f"for pods constrained to one catalog type ({', '.join(used)}); other pods: "
            "work = run time (reference seconds)"
        )
    else:
        report.assume("work = run time in reference seconds")


def _finite_max(columns: list[FloatArray]) -> float:
    """The largest finite value of the columns (0 when there is none), column by column
    (without joining them)."""
    out = -np.inf
    for values in columns:
        finite = np.isfinite(values)
        if finite.all():
            out = max(out, float(values.max())) if len(values) else out
        elif finite.any():
            out = max(out, float(values[finite].max()))
    if out == 0:  # which zero (0 or -0) numpy's maximum of them all is: ask it
        every = np.concatenate(columns)
        return float(every[np.isfinite(every)].max())
    return out if np.isfinite(out) else 0.0


def _optional_numbers(parser: ColumnParser, values: pa.Array, name: str) -> FloatArray:
    """A numeric column whose empty values mean "none" (``nan``); other bad values are errors."""
    if is_numbers(values):
        return numbers_of(values)
    empty = blank(values)
    out = parser.numbers(pc.if_else(pa.array(empty), "0", values), name)
    out[empty] = np.nan
    return out


def _encode(values: pa.Array | None, n: int) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Distinct trimmed values (in order of first appearance) and each row's index into them;
    a missing column is one value ``""``."""
    if values is None:
        return [""], np.zeros(n, dtype=np.int64)
    enc = pc.dictionary_encode(trim(values))
    names = [str(x) for x in enc.dictionary.to_pylist()]
    return names, np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)


def _mig_milli(profile: str) -> float:
    """Milli-GPU of a MIG profile name (0 for an empty or unparsable name)."""
    from clustersim.gpushare import mig_milli

    try:
        return float(mig_milli(profile)) if profile else 0.0
    except ValueError:
        return 0.0


#: ``gpu_spec`` model names that stand for the MIG-capable devices of
#: :data:`clustersim.gpushare.MIG_PROFILES` (case-insensitive).
_MIG_ALIASES = {
    "a100": ("A100-40GB", "A100-80GB"),
    "a100-40gb": ("A100-40GB",),
    "a100-80gb": ("A100-80GB",),
    "h100": ("H100",),
}


def _mig_offered(profile: str, spec: str) -> bool:
    """Whether every device the pod's ``gpu_spec`` allows offers MIG ``profile`` (no spec:
    some MIG-capable device does). An empty profile is always offered."""
    from clustersim.gpushare import MIG_PROFILES, mig_devices

    if not profile:
        return True
    models = [m.strip().lower() for m in spec.split("|") if m.strip()]
    if not models:
        return bool(mig_devices(profile))
    for m in models:
        devices = _MIG_ALIASES.get(m, ())
        if not devices or not any(profile in MIG_PROFILES[d] for d in devices):
            return False
    return True
