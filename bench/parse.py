"""Parse throughput of the trace readers (part of ``make bench``).

:func:`parse_bench` generates large traces in a temporary directory — a 2-million-row Helios
``cluster_log.csv`` (read by its reader and by the generic CSV reader), a PAI 2020 task and
job table, and 1-million-row files of every other CSV format (Alibaba openb, Tiresias,
Synergy, GAIA, Pollux), a 1 GB Philly-style ``cluster_job_log`` and the same log
gzip-compressed — and parses each in a fresh process, so that the peak memory reported is that
parse's own; the real ``philly.csv`` is parsed too. Targets (issue 3): ≥ 500k rows/s for the
CSV formats; the 1 GB JSON log with ≤ 1.5 GB peak memory.

Throughput is rows per CPU second of the parsing process (all its threads), because the
machine is shared and noisy: wall time depends on the other load, CPU time much less. Every CSV
case is parsed ``CLUSTERSIM_BENCH_ROUNDS`` times (default 3), the cases interleaved, and the
median is reported with the range. Before the clock starts, the parsing process imports the
readers and pandas: pyarrow imports pandas the first time it converts data (about 0.6 CPU
seconds, once per process, whatever the file), which is start-up cost, not parsing; the
``warmup_cpu_s`` field shows it.

Run alone with ``python -m bench.parse``. ``CLUSTERSIM_BENCH_PHILLY_GB`` (default 1),
``CLUSTERSIM_BENCH_HELIOS_ROWS`` (default 2,000,000) and ``CLUSTERSIM_BENCH_CSV_ROWS``
(default 1,000,000) scale the generated files; ``CLUSTERSIM_BENCH_ONLY=csv`` (or ``json``)
runs only those cases.
"""

from __future__ import annotations

import gzip
import json
import multiprocessing as mp
import os
import resource
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PHILLY_CSV = ROOT.parent / "shared" / "data" / "traces" / "philly" / "philly.csv"
_T0 = np.datetime64("2017-10-01T00:00:00", "s")


# --------------------------------------------------------------------------------------------
# Generators


def _times(seconds: np.ndarray) -> np.ndarray:
    """``YYYY-MM-DD HH:MM:SS`` strings of seconds after 2017-10-01."""
    stamps = np.datetime_as_string(_T0 + seconds.astype("timedelta64[s]"), unit="s")
    return np.char.replace(stamps, "T", " ")


def _gpu_block(count: int, indent: str) -> str:
    inner = indent + "    "
    return "[\n" + ",\n".join(f'{inner}"gpu{i}"' for i in range(count)) + f"\n{indent}]"


def write_philly_log(path: Path, target_bytes: int, seed: int = 0) -> int:
    """Write a Philly-style ``cluster_job_log`` (a JSON list, indented like the README).

    Gang sizes, attempt counts, statuses and durations are drawn from a seeded generator;
    about 1 % of the jobs lack an attempt or an end time. Returns the number of jobs.
    """
    rng = np.random.default_rng(seed)
    gpu_blocks = {g: _gpu_block(g, " " * 20) for g in (1, 2, 4, 8)}
    written = 0
    jobs = 0
    with path.open("w") as f:
        f.write("[\n")
        while written < target_bytes:
            n = 20_000
            submit = np.sort(rng.integers(0, 120 * 86400, n))
            gpus = rng.choice([1, 2, 4, 8, 16, 32], n, p=[0.6, 0.12, 0.12, 0.1, 0.04, 0.02])
            tries = rng.choice([0, 1, 2, 3], n, p=[0.01, 0.85, 0.1, 0.04])
            status = rng.choice(["Pass", "Killed", "Failed"], n, p=[0.7, 0.2, 0.1])
            queue = rng.integers(0, 3600, (n, 3))
            run = np.exp(rng.uniform(2, 11, (n, 3))).astype(np.int64)
            starts = submit[:, None] + np.cumsum(
                queue + np.concatenate([np.zeros((n, 1), np.int64), run[:, :2]], axis=1), axis=1
            )
            start_text = _times(starts.ravel()).reshape(n, 3)
            end_text = _times((starts + run).ravel()).reshape(n, 3)
            submit_text = _times(submit)
            parts = []
            for i in range(n):
                attempts = []
                for k in range(int(tries[i])):
                    g = int(gpus[i])
                    per = min(g, 8)
                    machines = ",\n".join(
                        f'                {{\n                    "ip": "m{(i + m) % 900}",\n'
                        f'                    "gpus": {gpu_blocks[per]}\n                }}'
                        for m in range(max(1, g // 8))
                    )
                    end = "None" if (i % 197 == 0 and k == tries[i] - 1) else end_text[i, k]
                    attempts.append(
                        f'        {{\n            "start_time": "{start_text[i, k]}",\n'
                        f'            "end_time": "{end}",\n'
                        f'            "detail": [\n{machines}\n            ]\n        }}'
                    )
                body = ",\n".join(attempts)
                parts.append(
                    f'{{\n    "status": "{status[i]}",\n    "vc": "vc{i % 14:02d}",\n'
                    f'    "jobid": "application_1506638472019_{jobs + i}",\n'
                    f'    "attempts": [\n{body}\n    ],\n'
                    f'    "submitted_time": "{submit_text[i]}",\n    "user": "u{i % 300:03d}"\n}}'
                )
            chunk = ",\n".join(parts)
            f.write(chunk if jobs == 0 else ",\n" + chunk)
            written += len(chunk) + 2
            jobs += n
        f.write("\n]\n")
    return jobs


def write_helios_log(path: Path, rows: int, seed: int = 0) -> int:
    """Write a Helios-style ``cluster_log.csv`` of ``rows`` jobs (half of them CPU-only)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, 180 * 86400, rows))
    queue = rng.integers(0, 3600, rows)
    duration = np.exp(rng.uniform(0, 12, rows)).astype(np.int64) + 1
    start = submit + queue
    frame = pd.DataFrame(
        {
            "job_id": np.arange(rows) + 1_000_000,
            "user": np.char.add("u", rng.integers(0, 500, rows).astype(str)),
            "vc": np.char.add("vc", rng.integers(0, 30, rows).astype(str)),
            "gpu_num": rng.choice([0, 1, 2, 4, 8, 16], rows, p=[0.5, 0.3, 0.06, 0.06, 0.06, 0.02]),
            "cpu_num": rng.integers(1, 64, rows),
            "node_num": 1,
            "state": rng.choice(["COMPLETED", "CANCELLED", "FAILED"], rows, p=[0.7, 0.2, 0.1]),
            "submit_time": _times(submit),
            "start_time": _times(start),
            "end_time": _times(start + duration),
            "duration": duration,
            "queue": queue,
        }
    )
    frame.to_csv(path, index=False)
    return rows


def _frame_csv(path: Path, columns: dict[str, Any], header: bool = True) -> None:
    import pandas as pd

    pd.DataFrame(columns).to_csv(path, index=False, header=header)


def write_tiresias_log(path: Path, rows: int, seed: int = 0) -> int:
    """Write a Tiresias ``60_job.csv``-style job list of ``rows`` jobs."""
    rng = np.random.default_rng(seed)
    models = ["vgg19", "vgg16", "vgg11", "resnet50", "resnet101", "resnet152", "alexnet"]
    _frame_csv(
        path,
        {
            "job_id": np.arange(rows),
            "num_gpu": rng.choice([1, 2, 4, 8, 16, 32], rows, p=[0.5, 0.15, 0.15, 0.1, 0.06, 0.04]),
            "submit_time": np.sort(rng.integers(0, 30 * 86400, rows)),
            "iterations": rng.integers(100, 100_000, rows),
            "model_name": rng.choice(models, rows),
            "duration": np.exp(rng.uniform(2, 11, rows)).astype(np.int64) + 1,
            "interval": rng.integers(1, 60, rows),
        },
    )
    return rows


def write_synergy_log(path: Path, rows: int, seed: int = 0) -> int:
    """Write a Synergy job trace (no header) of ``rows`` jobs."""
    from clustersim.traces.synergy import ITERATION_TIME_S

    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(30.0, rows)).round(3)
    _frame_csv(
        path,
        {
            "job_id": np.arange(rows),
            "model": rng.choice(sorted(ITERATION_TIME_S), rows),
            "arrival": arrival,
            "num_iters": rng.integers(1000, 200_000, rows),
            "gpu_demand": rng.choice([1, 2, 4, 8], rows, p=[0.5, 0.2, 0.2, 0.1]),
        },
        header=False,
    )
    return rows


def write_gaia_log(path: Path, rows: int, seed: int = 0) -> int:
    """Write a GAIA job CSV (hours, full-precision floats like ``pai-100k.csv``)."""
    rng = np.random.default_rng(seed)
    _frame_csv(
        path,
        {
            "arrival_time": np.sort(rng.uniform(0, 8760, rows)),
            "length": np.exp(rng.uniform(-4, 4, rows)),
            "cpus": rng.choice([1, 2, 4, 8, 16], rows),
        },
    )
    return rows


def write_pollux_log(path: Path, rows: int, seed: int = 0) -> int:
    """Write a Pollux workload CSV of ``rows`` jobs (profiled and some off-grid configs)."""
    from clustersim.traces.pollux import POLLUX_JCT_S

    rng = np.random.default_rng(seed)
    apps = np.array(sorted(POLLUX_JCT_S))
    app = rng.choice(apps, rows)
    replicas = rng.choice([1, 2, 3, 4, 6, 8, 12, 16], rows)
    batch = np.zeros(rows, dtype=np.int64)
    for a in apps:
        sizes = np.array(POLLUX_JCT_S[str(a)][0])
        mine = app == a
        batch[mine] = rng.choice(sizes[-4:], int(mine.sum()))
    _frame_csv(
        path,
        {
            "name": np.char.add(np.char.add(app.astype(str), "-"), np.arange(rows).astype(str)),
            "time": np.sort(rng.integers(0, 8 * 3600 * 24, rows)),
            "application": app,
            "num_replicas": replicas,
            "batch_size": batch,
        },
    )
    return rows


def write_openb_log(path: Path, rows: int, seed: int = 0) -> int:
    """Write an Alibaba openb pod list (the 11-column layout) of ``rows`` pods."""
    rng = np.random.default_rng(seed)
    gpus = rng.choice([0, 1, 2, 4, 8], rows, p=[0.1, 0.7, 0.08, 0.07, 0.05])
    milli = np.where(gpus == 1, rng.choice([1000, 500, 460, 250, 1000], rows), 1000)
    milli = np.where(gpus == 0, 0, milli)
    specs = ["", "", "", "", "T4", "G2", "P100", "V100M16|V100M32", "A10|T4"]
    creation = np.sort(rng.integers(0, 13_000_000, rows))
    wait = rng.integers(0, 600, rows)
    run = np.exp(rng.uniform(3, 14, rows)).astype(np.int64) + 1
    phase = rng.choice(
        ["Running", "Failed", "Pending", "Succeeded"], rows, p=[0.64, 0.23, 0.11, 0.02]
    )
    pending = phase == "Pending"
    scheduled = np.where(pending, "", (creation + wait).astype(str))
    deletion = np.minimum(creation + wait + run, 12_902_960).astype(str)
    _frame_csv(
        path,
        {
            "name": np.char.add("openb-pod-", np.arange(rows).astype(str)),
            "cpu_milli": rng.choice([4000, 6000, 8000, 12000, 16000, 88000], rows),
            "memory_mib": rng.choice([8192, 12288, 16384, 24576, 32768, 327680], rows),
            "num_gpu": gpus,
            "gpu_milli": milli,
            "gpu_spec": rng.choice(specs, rows),
            "qos": rng.choice(["LS", "BE", "Burstable", "Guaranteed"], rows),
            "pod_phase": phase,
            "creation_time": creation,
            "deletion_time": deletion,
            "scheduled_time": scheduled,
        },
    )
    return rows


def write_pai_tables(task_path: Path, job_path: Path, jobs: int, seed: int = 0) -> tuple[int, int]:
    """Write a PAI 2020 ``pai_task_table`` and ``pai_job_table`` (no header) of ``jobs`` jobs.

    Most jobs have one task, some two or three (``ps``/``worker``/``evaluator``); CPU tasks
    leave the GPU columns empty and running or waiting ones the end time. Returns the numbers
    of task and job rows.
    """
    rng = np.random.default_rng(seed)
    names = np.char.add("j", np.char.zfill(rng.permutation(jobs).astype(str), 23))
    status = rng.choice(
        ["Terminated", "Failed", "Running", "Waiting"], jobs, p=[0.8, 0.14, 0.04, 0.02]
    )
    submit = np.sort(rng.integers(1_000_000, 7_000_000, jobs)).astype(np.float64)
    ntask = rng.choice([1, 2, 3], jobs, p=[0.85, 0.1, 0.05])
    job_of = np.repeat(np.arange(jobs), ntask)
    first = np.r_[True, job_of[1:] != job_of[:-1]]
    tasks = len(job_of)
    start = submit[job_of] + rng.integers(0, 600, tasks)
    end = start + np.exp(rng.uniform(2, 11, tasks)).round()
    tstatus = status[job_of]
    ended = (tstatus == "Terminated") | (tstatus == "Failed")
    started = tstatus != "Waiting"
    gpu = rng.choice(["100.0", "50.0", "25.0", "400.0", ""], tasks, p=[0.5, 0.2, 0.1, 0.1, 0.1])
    gtype = rng.choice(["MISC", "P100", "T4", "V100", "V100M32"], tasks)
    _frame_csv(
        task_path,
        {
            "job_name": names[job_of],
            "task_name": np.where(
                first,
                rng.choice(["worker", "tensorflow", "PyTorchWorker"], tasks),
                rng.choice(["ps", "evaluator"], tasks),
            ),
            "inst_num": rng.choice([1.0, 2.0, 4.0, 8.0], tasks, p=[0.7, 0.1, 0.1, 0.1]),
            "status": tstatus,
            "start_time": np.where(started, start.astype(str), ""),
            "end_time": np.where(ended, end.astype(str), ""),
            "plan_cpu": rng.choice([600.0, 400.0, 800.0, 1200.0], tasks),
            "plan_mem": rng.choice([29.296875, 10.0, 20.0, 58.59375], tasks),
            "plan_gpu": gpu,
            "gpu_type": np.where(gpu == "", "", gtype),
        },
        header=False,
    )
    job_end = np.where(np.isin(status, ["Terminated", "Failed"]), (submit + 3600).astype(str), "")
    _frame_csv(
        job_path,
        {
            "job_name": names,
            "inst_id": np.char.add("i", np.arange(jobs).astype(str)),
            "user": np.char.add("u", rng.integers(0, 1300, jobs).astype(str)),
            "status": status,
            "start_time": submit,
            "end_time": job_end,
        },
        header=False,
    )
    return tasks, jobs


# --------------------------------------------------------------------------------------------
# Measuring


def _peak_mb() -> float:
    """Peak resident memory of this process image, MB.

    ``VmHWM`` where Linux has it: ``ru_maxrss`` also counts the parent's pages that a
    spawned child shared before it exec'd, so it would report the parent's size.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Case:
    """One file to parse: ``rows`` is the number of data rows it holds (``None``: the
    report's ``jobs_read``, which is the same for every format but the PAI task table,
    whose report counts jobs, not task rows)."""

    label: str
    path: Path
    fmt: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    rows: int | None = None


def _measure(args: tuple[str, str | None, dict[str, Any]]) -> dict[str, Any]:
    path, fmt, options = args
    from clustersim.traces import read_trace

    w0 = time.process_time()
    # pyarrow's first conversion imports pandas (a dependency): start-up cost, not parsing
    import pandas  # noqa: F401

    warmup = time.process_time() - w0
    imported = _peak_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    _, report = read_trace(path, fmt, **options)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "jobs_read": report.jobs_read,
        "kept": report.jobs_kept,
        "seconds": seconds,
        "cpu_s": cpu,
        "peak_mb": _peak_mb(),
        "import_mb": imported,
        "warmup_cpu_s": warmup,
    }


def _run(case: Case) -> dict[str, Any]:
    """Parse ``case`` once in a fresh process."""
    ctx = mp.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(_measure, ((str(case.path), case.fmt, case.options),))  # type: ignore[no-any-return]


def _summary(case: Case, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One result row from the runs of one case: medians, and the spread of rows/cpu-s."""
    rows = case.rows if case.rows is not None else runs[0]["jobs_read"]
    per_cpu = sorted(rows / r["cpu_s"] for r in runs)
    seconds = float(np.median([r["seconds"] for r in runs]))
    cpu = float(np.median([r["cpu_s"] for r in runs]))
    return {
        "format": case.label,
        "file_mb": case.path.stat().st_size / 2**20,
        "rows": rows,
        "jobs_read": runs[0]["jobs_read"],
        "kept": runs[0]["kept"],
        "runs": len(runs),
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "cpu_s": cpu,
        "rows_per_cpu_s": float(np.median(per_cpu)),
        "rows_per_cpu_s_min": per_cpu[0],
        "rows_per_cpu_s_max": per_cpu[-1],
        "peak_mb": max(r["peak_mb"] for r in runs),
        "import_mb": runs[0]["import_mb"],
        "warmup_cpu_s": float(np.median([r["warmup_cpu_s"] for r in runs])),
    }


def measure(label: str, path: Path, fmt: str | None = None, **options: Any) -> dict[str, Any]:
    """Parse ``path`` once in a fresh process; one result row."""
    case = Case(label, path, fmt, options)
    return _summary(case, [_run(case)])


def measure_rounds(cases: list[Case], rounds: int) -> list[dict[str, Any]]:
    """Parse every case ``rounds`` times, each time in a fresh process, interleaving the cases
    (round 1 of every case, then round 2, ...) so that a burst of load on the shared machine
    hits one run of several cases rather than every run of one; one row per case."""
    runs: list[list[dict[str, Any]]] = [[] for _ in cases]
    for _ in range(rounds):
        for i, case in enumerate(cases):
            runs[i].append(_run(case))
    return [_summary(case, r) for case, r in zip(cases, runs, strict=True)]


def csv_cases(tmp: Path, rows: int, helios_rows: int) -> list[Case]:
    """Generate a large file of every CSV format in ``tmp``; the cases that parse them."""
    cases = []
    if PHILLY_CSV.exists():
        cases.append(Case("philly (csv, real)", PHILLY_CSV))
    helios = tmp / "cluster_log.csv"
    write_helios_log(helios, helios_rows)
    cases.append(Case("helios (csv)", helios))
    mapping = {"num_gpus": "gpu_num", "work": "duration", "status": "state", "cpu": "cpu_num"}
    cases.append(Case("csv (generic, mapped)", helios, "csv", {"mapping": mapping}))
    tasks, jobs = tmp / "pai_task_table.csv", tmp / "pai_job_table.csv"
    n_tasks, n_jobs = write_pai_tables(tasks, jobs, rows)
    cases.append(Case("alibaba-pai (tasks)", tasks, rows=n_tasks))
    cases.append(
        Case(
            "alibaba-pai (jobs+tasks)",
            jobs,
            options={"task_table": str(tasks)},
            rows=n_jobs + n_tasks,
        )
    )
    for label, name, write in (
        ("alibaba-openb", "openb_pod_list.csv", write_openb_log),
        ("tiresias", "tiresias_jobs.csv", write_tiresias_log),
        ("synergy", "synergy_trace.csv", write_synergy_log),
        ("gaia", "gaia_jobs.csv", write_gaia_log),
        ("pollux", "pollux_workload.csv", write_pollux_log),
    ):
        path = tmp / name
        write(path, rows)
        cases.append(Case(label, path, label))
    return cases


def parse_bench() -> list[dict[str, Any]]:
    """Parse throughput and peak memory of the trace readers on generated large files.

    Every CSV case is parsed ``CLUSTERSIM_BENCH_ROUNDS`` times (default 3), interleaved, each
    in a fresh process; the JSON cases once each.

    Returns
    -------
    list of dict
        One row per case: ``format`` (label), ``file_mb``, ``rows`` (data rows in the file:
        jobs, or for PAI task plus job rows), ``jobs_read``, ``kept``, ``runs``, ``seconds``
        (wall, median), ``rows_per_s``, ``cpu_s`` (median) and ``rows_per_cpu_s`` (median of
        the runs; CPU time of the parsing process, all threads: a figure that other load on
        the machine changes much less than wall time) with its ``rows_per_cpu_s_min`` and
        ``_max`` over the runs, ``peak_mb`` (peak resident memory of the parsing process, the
        largest of the runs), ``import_mb`` (its memory before parsing) and ``warmup_cpu_s``
        (CPU time of importing pandas before the clock starts, see the module docstring).
    """
    philly_gb = float(os.environ.get("CLUSTERSIM_BENCH_PHILLY_GB", "1"))
    helios_rows = int(os.environ.get("CLUSTERSIM_BENCH_HELIOS_ROWS", "2000000"))
    csv_rows = int(os.environ.get("CLUSTERSIM_BENCH_CSV_ROWS", "1000000"))
    rounds = max(1, int(os.environ.get("CLUSTERSIM_BENCH_ROUNDS", "3")))
    only = os.environ.get("CLUSTERSIM_BENCH_ONLY", "")
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="clustersim-bench-"))
    try:
        if only != "json":
            rows += measure_rounds(csv_cases(tmp, csv_rows, helios_rows), rounds)
            for f in tmp.iterdir():
                f.unlink()
        if only != "csv":
            log = tmp / "cluster_job_log"
            write_philly_log(log, int(philly_gb * 2**30))
            # streamed: within the default max_streamed_bytes (16 GiB), however large
            rows.append(measure("philly_raw (json)", log))
            packed = tmp / "cluster_job_log.gz"
            with log.open("rb") as src, gzip.open(packed, "wb", compresslevel=1) as dst:
                shutil.copyfileobj(src, dst, 1 << 22)
            log.unlink()
            rows.append(measure("philly_raw (json.gz)", packed))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a text table (rows/cpu-s: the median, then the range over the runs)."""
    cols = [
        ("format", "format", "<24", ""),
        ("file_mb", "file MB", ">7", ",.0f"),
        ("rows", "rows", ">9", ","),
        ("runs", "runs", ">4", ""),
        ("seconds", "seconds", ">7", ".2f"),
        ("rows_per_s", "rows/s", ">9", ",.0f"),
        ("rows_per_cpu_s", "rows/cpu-s", ">10", ",.0f"),
        ("range", "cpu-s range", ">11", ""),
        ("peak_mb", "peak MB", ">7", ",.0f"),
    ]
    head = " | ".join(f"{h:{a}}" for _, h, a, _ in cols)
    lines = [head, "-" * len(head)]
    for r in rows:
        r = {
            **r,
            "range": f"{r['rows_per_cpu_s_min'] / 1e3:.0f}–{r['rows_per_cpu_s_max'] / 1e3:.0f}k",
        }
        lines.append(" | ".join(f"{format(r[k], f):{a}}" for k, _, a, f in cols))
    return "\n".join(lines)


if __name__ == "__main__":
    results = parse_bench()
    print(table(results))
    print(json.dumps(results, indent=1))
