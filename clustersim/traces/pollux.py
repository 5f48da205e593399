"""Pollux / Sia workload CSV (``workload-1.csv`` ...).

Format: comma-separated with a header line ``name,time,application,num_replicas,batch_size``;
one row a job (Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized
Deep Learning", OSDI'21, ``simulator/workloads/``; Sia uses the same layout). ``time`` is the
submit time in seconds, ``application`` one of Pollux's six profiled models (``bert``,
``cifar10``, ``deepspeech2``, ``imagenet``, ``ncf``, ``yolov3``), ``num_replicas`` and
``batch_size`` the job's GPU count and total batch size as its user would run it without
Pollux. Columns may come in any order; extra columns are ignored.

Mapping to the job table
------------------------
- ``job_id``: ``name``; ``submit_time``: ``time``, as written (not re-based, like Pollux's
  simulator); ``num_gpus``: ``num_replicas``;
- ``job_type``: ``application``, kept as Pollux's model name. These are not Gavel job types
  (Pollux's CIFAR-10 ResNet-18 trains with other batch sizes and data pipelines than Gavel's),
  so their work stays in reference seconds and the performance model treats them as generic;
- ``work``: the workload has no durations. A job runs until it has trained as far as Pollux's
  simulator trains it, and that time follows from Pollux's own profiles
  (``shared/data/throughput/pollux/<application>/``), as Pollux's
  ``Application.get_configurations`` computes it for a rigid job (``simulator/applications.py``
  in petuum/adaptdl, the code that picked these ``num_replicas``/``batch_size`` pairs):

  * iterations = ``iteration`` at the completion epoch (``max_epochs - 1``; bert 2, cifar10
    100, deepspeech2 80, imagenet 90, ncf 10, yolov3 50 epochs) of ``validation-<B>.csv``,
    interpolated linearly between the profiled batch sizes around ``B``;
  * placement: ``num_replicas`` consolidated on 4-GPU nodes (Pollux's testbed of g4dn.12xlarge
    nodes with four T4 each); local batch ``ceil(B / R)``, split into gradient-accumulation
    steps above the largest profiled local batch (8 for yolov3);
  * step time from ``placements.csv`` for that placement (linear in the local batch), or for
    more than 16 GPUs from ``scalability.csv`` rows with the same node and replica counts
    (Pollux interpolates those in 3-D; here linearly in the local batch, which agrees on the
    profiled points);
  * JCT = iterations × step time, in seconds on T4.

  :data:`POLLUX_JCT_S` holds that JCT for every replica count Pollux considers (1, 2, 4, 6, 8,
  12, 16, 24, 32, 48) and every profiled batch size, computed once by :func:`pollux_jct` from
  the profiles (a test recomputes it). A job on the grid gets its exact value; between grid
  points JCT is interpolated bilinearly in log2(replicas) and log2(batch size) (on log JCT)
  when the four corners exist, else the nearest existing grid point is used (counted in the
  report). ``work = JCT × reference_speed("T4")`` (T4 seconds to reference seconds, see
  :func:`clustersim.jobtypes.reference_speed`);
- ``user``, ``vc``, ``gpu_type``: unknown (``""``). Jobs are rigid: Pollux's adaptive
  re-scaling and batch-size tuning are policy behaviour, not workload data.

Options
-------
``work_s``
    ``{application: reference seconds}``: work of every job of that application (overrides
    the profiles; lets other applications through).

Rows are dropped when ``num_replicas`` is < 1, not an integer or implausibly large, ``time``
is negative or not finite, ``batch_size`` is not positive and finite, the application has no
profile (and no ``work_s``), or the batch size is outside its profiled range or below
``num_replicas`` × the smallest profiled local batch.
"""

from __future__ import annotations

import csv
import functools
import math
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from clustersim.jobs import JobTable
from clustersim.jobtypes import reference_speed
from clustersim.traces.arrow import pc
from clustersim.traces.base import (
    ColumnParser,
    FloatArray,
    ParseReport,
    TraceReader,
    build_table,
    check_options,
    drop_rows,
    gpu_checks,
    positive_map_option,
    read_header_table,
    sniff_header,
    trim,
    trimmed,
)
from clustersim.traces.limits import ReadLimits

REQUIRED = ("name", "time", "application", "num_replicas", "batch_size")
#: Accelerator type of Pollux's profiles.
PROFILE_TYPE = "T4"
#: Replica counts of the JCT grid (Pollux's ``get_configurations``).
GRID_REPLICAS: tuple[int, ...] = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48)
#: Per application: (epochs trained, largest local batch or None for the profiled maximum),
#: from ``APPLICATIONS`` in Pollux's ``simulator/applications.py``.
POLLUX_APPS: dict[str, tuple[int, int | None]] = {
    "bert": (2, None),
    "cifar10": (100, None),
    "deepspeech2": (80, None),
    "imagenet": (90, None),
    "ncf": (10, None),
    "yolov3": (50, 8),
}
#: GPUs per node of Pollux's testbed.
NODE_GPUS = 4

# fmt: off
#: Per application: (profiled batch sizes, JCT on T4 in s for each replica count of
#: :data:`GRID_REPLICAS` (rows) and batch size (columns); ``nan``: configuration Pollux does
#: not run (local batch below the smallest profiled one)). Computed by :func:`pollux_jct`.
POLLUX_JCT_S: dict[str, tuple[tuple[int, ...], tuple[tuple[float, ...], ...]]] = {
    "bert": ((12, 24, 48, 96, 192, 384), (
        (13614.5, 13586.5, 13603.0, 13715.7, 13666.5, 13950.7),
        (8664.4, 6825.7, 6655.7, 6620.4, 6551.4, 6664.6),
        (math.nan, 4601.3, 3572.0, 3433.3, 3336.9, 3363.3),
        (math.nan, 15951.7, 8849.6, 5674.8, 3742.6, 3055.7),
        (math.nan, math.nan, 9288.9, 4785.9, 3210.2, 2480.3),
        (math.nan, math.nan, 5926.6, 2855.3, 2032.4, 1589.2),
        (math.nan, math.nan, math.nan, 3389.3, 1774.9, 1334.9),
        (math.nan, math.nan, math.nan, 3472.3, 1696.9, 1174.5),
        (math.nan, math.nan, math.nan, math.nan, 1762.5, 981.5),
        (math.nan, math.nan, math.nan, math.nan, 1948.3, 904.5),
    )),
    "cifar10": ((128, 256, 512, 1024, 2048, 4096), (
        (4027.9, 3798.6, 3765.4, 4017.4, 4460.8, 5644.3),
        (2557.5, 2330.7, 2220.5, 2355.8, 2663.1, 3368.0),
        (2274.0, 1394.1, 1165.1, 1161.9, 1253.6, 1588.5),
        (math.nan, 3727.4, 2735.2, 1259.3, 854.2, 1032.3),
        (math.nan, 3760.2, 1810.4, 1318.3, 826.1, 903.7),
        (math.nan, math.nan, 1621.8, 903.0, 602.3, 573.2),
        (math.nan, math.nan, 1614.3, 1103.2, 490.7, 449.4),
        (math.nan, math.nan, math.nan, 1111.1, 646.9, 449.6),
        (math.nan, math.nan, math.nan, 968.7, 704.2, 452.9),
        (math.nan, math.nan, math.nan, math.nan, 672.3, 575.6),
    )),
    "deepspeech2": ((20, 40, 80, 160, 320, 640), (
        (19438.8, 16501.0, 19519.6, 20527.1, 22997.4, 28907.1),
        (14916.8, 10638.9, 9823.2, 10637.9, 11763.4, 14689.0),
        (math.nan, 9795.1, 6376.2, 4982.2, 5938.3, 7382.1),
        (math.nan, math.nan, 9189.5, 5323.2, 4153.2, 4779.8),
        (math.nan, math.nan, 9510.7, 6140.3, 3500.8, 3882.8),
        (math.nan, math.nan, math.nan, 4460.4, 3153.9, 2572.7),
        (math.nan, math.nan, math.nan, 4130.8, 2876.8, 2102.6),
        (math.nan, math.nan, math.nan, math.nan, 2863.3, 1878.1),
        (math.nan, math.nan, math.nan, math.nan, 2579.2, 1977.8),
        (math.nan, math.nan, math.nan, math.nan, math.nan, 1720.3),
    )),
    "imagenet": ((200, 400, 800, 1600, 3200, 6400, 12800), (
        (532438.6, 540827.1, 554429.3, 578969.0, 621669.5, 707549.5, 853634.7),
        (290013.5, 277006.6, 281671.7, 292936.4, 313895.6, 356890.9, 430355.1),
        (176045.3, 156370.1, 150986.1, 157104.5, 168388.2, 191477.5, 230907.1),
        (277350.5, 164563.1, 114016.1, 110306.0, 108688.3, 122391.8, 146955.0),
        (315298.7, 168386.2, 100576.3, 79621.0, 85232.0, 96857.5, 116765.6),
        (math.nan, 127688.8, 73667.6, 55058.4, 57478.8, 63343.0, 75582.5),
        (math.nan, 124916.2, 73099.7, 45315.5, 44072.0, 49967.6, 60168.1),
        (math.nan, math.nan, 73513.0, 47348.7, 31395.6, 34297.6, 39308.0),
        (math.nan, math.nan, 88042.0, 49646.6, 29254.6, 26207.4, 30244.5),
        (math.nan, math.nan, math.nan, 44461.9, 26710.9, 18879.6, 21204.1),
    )),
    "ncf": ((256, 512, 1024, 2048, 4096, 8192, 16384, 32768), (
        (1444.1, 722.1, 420.8, 219.9, 121.0, 69.5, 45.9, 33.0),
        (1869.6, 938.0, 480.2, 263.0, 141.0, 74.4, 41.9, 41.2),
        (2379.4, 1118.5, 586.7, 323.1, 162.7, 87.8, 47.7, 27.5),
        (5097.0, 3697.2, 1488.8, 806.0, 386.8, 250.7, 104.4, 52.0),
        (5726.4, 3138.1, 1495.8, 926.6, 450.6, 195.3, 123.1, 66.6),
        (math.nan, 2031.5, 1218.5, 562.3, 335.5, 154.9, 88.8, 44.5),
        (math.nan, 3192.8, 1298.1, 657.0, 347.0, 190.3, 92.3, 47.7),
        (math.nan, math.nan, 1467.2, 757.9, 367.5, 175.9, 96.2, 53.3),
        (math.nan, math.nan, 1503.6, 739.5, 376.5, 213.7, 99.7, 59.4),
        (math.nan, math.nan, math.nan, 977.0, 555.9, 284.2, 161.4, 78.4),
    )),
    "yolov3": ((8, 16, 32, 64, 128, 256, 512), (
        (33738.1, 34378.0, 35580.1, 37780.0, 41836.8, 49819.1, 65112.3),
        (31467.8, 18868.8, 18681.2, 19385.0, 21216.4, 25115.4, 32727.7),
        (math.nan, 24183.9, 13740.4, 12869.9, 13298.0, 15267.0, 19582.1),
        (math.nan, math.nan, 43417.3, 29468.2, 17744.0, 15182.0, 14949.2),
        (math.nan, math.nan, 46001.1, 23859.5, 16207.0, 13213.2, 13290.7),
        (math.nan, math.nan, math.nan, 18147.8, 14323.8, 9315.5, 9607.7),
        (math.nan, math.nan, math.nan, 17119.6, 9592.1, 7462.4, 7164.5),
        (math.nan, math.nan, math.nan, math.nan, 10887.7, 9072.1, 6384.0),
        (math.nan, math.nan, math.nan, math.nan, 12052.4, 7437.8, 6015.5),
        (math.nan, math.nan, math.nan, math.nan, math.nan, 7439.0, 6499.8),
    )),
}
# fmt: on


class PolluxReader(TraceReader):
    """Reader of Pollux / Sia workload CSVs (``name,time,application,num_replicas,batch_size``)."""

    name: ClassVar[str] = "pollux"
    description: ClassVar[str] = (
        "Pollux / Sia workload CSV (name, time, application, num_replicas, batch_size); "
        "work from Pollux's application profiles"
    )

    def sniff(self, head: bytes, filename: str) -> bool:
        """True when the first line is a CSV header with the Pollux workload columns."""
        return sniff_header(head, REQUIRED)

    def parse(
        self, data: bytes, path: str, *, limits: ReadLimits | None = None, **options: Any
    ) -> tuple[JobTable, ParseReport]:
        """Parse a Pollux workload CSV (option ``work_s``, see the module docstring)."""
        check_options(self, path, options, {"work_s"})
        work_s = positive_map_option(options.get("work_s"), path, "work_s", "application names")
        report = ParseReport(format=self.name, path=path)
        numbers = dict.fromkeys(("time", "num_replicas", "batch_size"), False)
        cols, lines = read_header_table(
            data, path, REQUIRED, report, numbers=numbers, limits=limits
        )

        parser = ColumnParser(path, lines)
        for col in ("name", "application"):
            parser.required(cols[col], col)
        time = parser.numbers(cols["time"], "time")
        replicas = parser.numbers(cols["num_replicas"], "num_replicas")
        batch = parser.numbers(cols["batch_size"], "batch_size")
        parser.check()
        encoded = pc.dictionary_encode(trim(cols["application"]))
        app_names = [str(x) for x in encoded.dictionary.to_pylist()]
        app_code = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        app = np.array(app_names, dtype=object)[app_code]

        jct, how = _profile_jct(app_names, app_code, replicas, batch)
        override = None
        if work_s:
            override = np.array([work_s.get(a, math.nan) for a in app_names])[app_code]
        known = np.isin(app_code, [i for i, a in enumerate(app_names) if a in POLLUX_JCT_S])
        if override is not None:
            known |= np.isfinite(override)
        with np.errstate(invalid="ignore"):
            bad_batch = ~(np.isfinite(batch) & (batch > 0))
        keep = drop_rows(
            report,
            lines,
            [
                *gpu_checks(replicas, "num_replicas"),
                ("time < 0", time < 0),
                ("time not finite", ~np.isfinite(time)),
                ("batch_size not positive and finite", bad_batch),
                ("application has no Pollux profile (give work_s)", ~known),
                (
                    "batch_size outside the application's profiled range",
                    ~np.isfinite(jct) & (override is None or ~np.isfinite(override)),
                ),
            ],
        )
        idx = np.flatnonzero(keep)
        speed = reference_speed(PROFILE_TYPE) or 1.0
        work = jct[idx] * speed
        if override is not None:
            use = np.isfinite(override[idx])
            work = np.where(use, override[idx], work)
            used = sorted({str(a) for a in app[idx][use]})
            if used:
                report.assume(f"work from work_s (reference seconds) for: {', '.join(used)}")
        else:
            use = np.zeros(len(idx), dtype=bool)

        report.assume(
            "time taken as submit seconds, not re-based "
            f"(first submit {time[idx].min() if len(idx) else 0.0:g} s)"
        )
        report.assume(
            "work = run time of the rigid job (num_replicas GPUs consolidated on 4-GPU T4 "
            "nodes, batch_size) to Pollux's completion epoch, from Pollux's application "
            f"profiles, × T4 speed {speed:.3f} relative to the reference type"
        )
        interp = how[idx] == 1
        near = how[idx] == 2
        report.warn(
            "num_replicas/batch_size not on the profile grid: JCT interpolated",
            lines[idx][interp & ~use],
        )
        report.warn(
            "num_replicas/batch_size not on the profile grid: JCT of the nearest profiled "
            "configuration",
            lines[idx][near & ~use],
        )
        report.assume(
            "job_type = Pollux application name (work in reference seconds); jobs rigid "
            "(Pollux's elasticity is not in the workload); user and virtual cluster unknown"
        )
        table = build_table(
            path,
            report,
            lines[idx],
            {"submit_time": "time", "num_gpus": "num_replicas", "work": "work_s or profile"},
            job_id=trimmed(cols["name"], idx),
            submit_time=time[idx],
            num_gpus=replicas[idx].astype(np.int64),
            work=work,
            job_type=app[idx],
        )
        return table, report


def _profile_jct(
    names: list[str], code: np.ndarray, replicas: FloatArray, batch: FloatArray
) -> tuple[FloatArray, np.ndarray]:
    """JCT on T4 (s) per row from :data:`POLLUX_JCT_S`, and how it was found (0 exact,
    1 interpolated, 2 nearest grid point); ``nan`` where there is no profile or the batch size
    is out of range. Looks up each distinct (application, replicas, batch size) once."""
    n = len(code)
    out = np.full(n, np.nan)
    how = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out, how
    rv, rinv = np.unique(replicas, return_inverse=True)
    bv, binv = np.unique(batch, return_inverse=True)
    key = (code * len(rv) + rinv.ravel()) * len(bv) + binv.ravel()
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    vals = np.full(len(uniq), np.nan)
    kinds = np.zeros(len(uniq), dtype=np.int64)
    for u, i in enumerate(first.tolist()):
        vals[u], kinds[u] = grid_jct(names[int(code[i])], float(replicas[i]), float(batch[i]))
    inv = inv.ravel()
    return vals[inv], kinds[inv]


def grid_jct(application: str, num_replicas: float, batch_size: float) -> tuple[float, int]:
    """JCT (s on T4) of a rigid Pollux job from :data:`POLLUX_JCT_S`.

    Returns
    -------
    jct : float
        ``nan`` when the application is unknown, the values are not finite, the batch size is
        outside the profiled range or no grid configuration exists.
    how : int
        0 exact grid point, 1 bilinear interpolation in (log2 R, log2 B), 2 nearest grid point.
    """
    if application not in POLLUX_JCT_S or not (
        math.isfinite(num_replicas) and math.isfinite(batch_size)
    ):
        return math.nan, 0
    if num_replicas < 1 or batch_size <= 0:
        return math.nan, 0
    sizes, rows = POLLUX_JCT_S[application]
    bs = np.array(sizes, dtype=np.float64)
    rs = np.array(GRID_REPLICAS, dtype=np.float64)
    grid = np.array(rows, dtype=np.float64)  # (R, B)
    if batch_size < bs[0] or batch_size > bs[-1] or batch_size < num_replicas:
        return math.nan, 0
    i = np.flatnonzero(rs == num_replicas)
    j = np.flatnonzero(bs == batch_size)
    if len(i) and len(j):
        return float(grid[i[0], j[0]]), 0
    x, y = math.log2(num_replicas), math.log2(batch_size)
    lr, lb = np.log2(rs), np.log2(bs)
    i1 = int(np.clip(np.searchsorted(lr, x), 1, len(lr) - 1))
    j1 = int(np.clip(np.searchsorted(lb, y), 1, len(lb) - 1))
    corners = grid[i1 - 1 : i1 + 1, j1 - 1 : j1 + 1]
    inside = lr[0] <= x <= lr[-1]
    if inside and np.isfinite(corners).all():
        tx = (x - lr[i1 - 1]) / (lr[i1] - lr[i1 - 1])
        ty = (y - lb[j1 - 1]) / (lb[j1] - lb[j1 - 1])
        logc = np.log(corners)
        v = (
            (1 - tx) * (1 - ty) * logc[0, 0]
            + (1 - tx) * ty * logc[0, 1]
            + tx * (1 - ty) * logc[1, 0]
            + tx * ty * logc[1, 1]
        )
        return float(np.exp(v)), 1
    ok = np.isfinite(grid)
    if not ok.any():
        return math.nan, 0
    dist = (lr[:, None] - x) ** 2 + (lb[None, :] - y) ** 2
    dist[~ok] = np.inf
    a, b = np.unravel_index(int(np.argmin(dist)), dist.shape)
    return float(grid[a, b]), 2


def trace_batch(application: str, num_replicas: int, work: float) -> float:
    """The ``batch_size`` a row of a Pollux workload had, recovered from the work this reader
    gave it: the profiled batch size whose rigid JCT at ``num_replicas`` (on the grid of
    :data:`POLLUX_JCT_S`, × the T4 speed) equals ``work`` to 1e-9 relative; ``nan`` when
    none does (a job not read from a Pollux workload, or off the grid). Used by
    ``--compat pollux``, whose baselines run every job at its trace's batch size."""
    if application not in POLLUX_JCT_S or num_replicas not in GRID_REPLICAS:
        return math.nan
    sizes, rows = POLLUX_JCT_S[application]
    speed = reference_speed(PROFILE_TYPE) or 1.0
    jcts = np.array(rows[GRID_REPLICAS.index(num_replicas)]) * speed
    with np.errstate(invalid="ignore"):
        hit = np.flatnonzero(np.abs(jcts - work) <= 1e-9 * max(abs(work), 1.0))
    return float(sizes[int(hit[0])]) if len(hit) == 1 else math.nan


# --------------------------------------------------------------------------------------------
# Deriving the table from Pollux's profiles


def pollux_jct(
    directory: str | os.PathLike[str], application: str, num_replicas: int, batch_size: int
) -> float:
    """Run time (s) of a rigid job as Pollux's ``get_configurations`` computes it.

    Parameters
    ----------
    directory
        Folder with Pollux's per-application profiles (``<application>/placements.csv``,
        ``scalability.csv``, ``validation-<batch>.csv``).
    application
        One of :data:`POLLUX_APPS`.
    num_replicas, batch_size
        The job's GPUs and total batch size.

    Returns
    -------
    float
        ``nan`` for configurations Pollux does not run (local batch below the smallest
        profiled one, batch size outside the profiled range, no profile for the placement).
    """
    prof = _load_profile(str(directory), application)
    epochs, max_local = POLLUX_APPS[application]
    validation, placements, scalability = prof
    min_local = min(p[0] for pts in placements.values() for p in pts)
    if max_local is None:
        max_local = int(max(p[0] for pts in placements.values() for p in pts))
    placement: tuple[int, ...] = ()
    while sum(placement) < num_replicas:
        placement = (*placement, min(num_replicas - sum(placement), NODE_GPUS))
    local = math.ceil(batch_size / num_replicas - 1e-8)
    if local < min_local:
        return math.nan
    accum = math.ceil(local / max_local - 1e-8) - 1
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    sizes = sorted(validation)
    if not sizes[0] <= batch_size <= sizes[-1]:
        return math.nan
    lo = max(b for b in sizes if b <= batch_size)
    hi = min(b for b in sizes if b >= batch_size)
    ep = epochs - 1
    if lo == hi:
        iters = float(validation[lo][ep])
    else:
        iters = (
            (batch_size - lo) * validation[hi][ep] + (hi - batch_size) * validation[lo][ep]
        ) / (hi - lo)
    key = "".join(map(str, min(placement[i:] + placement[:i] for i in range(len(placement)))))
    pts = placements.get(key) or scalability.get((len(placement), num_replicas))
    if not pts:
        return math.nan
    xs = np.array([p[0] for p in pts])
    if not xs[0] - 1e-9 <= atomic <= xs[-1] + 1e-9:
        return math.nan
    step = float(np.interp(atomic, xs, [p[1] for p in pts]))
    sync = float(np.interp(atomic, xs, [p[2] for p in pts]))
    return iters * (step + accum * (step - sync))


@functools.lru_cache(maxsize=16)
def _load_profile(
    directory: str, application: str
) -> tuple[
    dict[int, list[int]],
    dict[str, list[tuple[float, float, float]]],
    dict[tuple[int, int], list[tuple[float, float, float]]],
]:
    base = Path(directory) / application

    def rows(name: str) -> list[dict[str, str]]:
        with (base / name).open(newline="") as f:
            return list(csv.DictReader(f))

    validation = {
        int(p.stem.rsplit("-", 1)[1]): [int(float(r["iteration"])) for r in rows(p.name)]
        for p in base.glob("validation-*.csv")
    }
    placements: dict[str, list[tuple[float, float, float]]] = {}
    for r in rows("placements.csv"):
        placements.setdefault(r["placement"], []).append(
            (float(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"]))
        )
    scalability: dict[tuple[int, int], list[tuple[float, float, float]]] = {}
    for r in rows("scalability.csv"):
        scalability.setdefault((int(r["num_nodes"]), int(r["num_replicas"])), []).append(
            (float(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"]))
        )
    for d in (placements, scalability):
        for pts in d.values():
            pts.sort()
    return validation, placements, scalability
