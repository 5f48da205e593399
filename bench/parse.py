"""Parse throughput of the trace readers (part of ``make bench``).

:func:`parse_bench` generates large traces in a temporary directory (a 1 GB Philly-style
``cluster_job_log``, the same log gzip-compressed, a 2-million-row Helios ``cluster_log.csv``
read by its reader and by the generic CSV reader) and parses each in a fresh process, so that
the peak memory reported is that parse's own. Targets (issue 3): ≥ 500k rows/s for the CSV
formats; the 1 GB JSON log with ≤ 1.5 GB peak memory.

Run alone with ``python -m bench.parse``. ``CLUSTERSIM_BENCH_PHILLY_GB`` (default 1) and
``CLUSTERSIM_BENCH_HELIOS_ROWS`` (default 2,000,000) scale the generated files.
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


def _measure(args: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    path, fmt, options = args
    from clustersim.traces import read_trace

    imported = _peak_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    _, report = read_trace(path, fmt, **options)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "rows": report.jobs_read,
        "kept": report.jobs_kept,
        "seconds": seconds,
        "rows_per_s": report.jobs_read / seconds,
        "cpu_s": cpu,
        "rows_per_cpu_s": report.jobs_read / cpu,
        "peak_mb": _peak_mb(),
        "import_mb": imported,
    }


def measure(label: str, path: Path, fmt: str | None = None, **options: Any) -> dict[str, Any]:
    """Parse ``path`` in a fresh process; one result row."""
    ctx = mp.get_context("spawn")
    with ctx.Pool(1) as pool:
        row = pool.apply(_measure, ((str(path), fmt, options),))
    return {"format": label, "file_mb": path.stat().st_size / 2**20, **row}


def parse_bench() -> list[dict[str, Any]]:
    """Parse throughput and peak memory of the trace readers on generated large files.

    Returns
    -------
    list of dict
        One row per measurement: ``format`` (label), ``file_mb``, ``rows`` (jobs read),
        ``kept``, ``seconds`` (wall), ``rows_per_s``, ``cpu_s`` and ``rows_per_cpu_s`` (CPU
        time of the parsing process, all threads: a figure that other load on the machine
        does not change), ``peak_mb`` (peak resident memory of the parsing process) and
        ``import_mb`` (its memory before parsing).
    """
    philly_gb = float(os.environ.get("CLUSTERSIM_BENCH_PHILLY_GB", "1"))
    helios_rows = int(os.environ.get("CLUSTERSIM_BENCH_HELIOS_ROWS", "2000000"))
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="clustersim-bench-"))
    try:
        if PHILLY_CSV.exists():
            rows.append(measure("philly (csv, real)", PHILLY_CSV))
        helios = tmp / "cluster_log.csv"
        write_helios_log(helios, helios_rows)
        rows.append(measure("helios (csv)", helios))
        mapping = {"num_gpus": "gpu_num", "work": "duration", "status": "state", "cpu": "cpu_num"}
        rows.append(measure("csv (generic, mapped)", helios, "csv", mapping=mapping))
        helios.unlink()
        log = tmp / "cluster_job_log"
        write_philly_log(log, int(philly_gb * 2**30))
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
    """The rows as a text table."""
    cols = [
        ("format", "format", "<22", ""),
        ("file_mb", "file MB", ">8", ",.0f"),
        ("rows", "rows", ">10", ","),
        ("seconds", "seconds", ">8", ".2f"),
        ("rows_per_s", "rows/s", ">10", ",.0f"),
        ("rows_per_cpu_s", "rows/cpu-s", ">10", ",.0f"),
        ("peak_mb", "peak MB", ">8", ",.0f"),
    ]
    head = " | ".join(f"{h:{a}}" for _, h, a, _ in cols)
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(" | ".join(f"{format(r[k], f):{a}}" for k, _, a, f in cols))
    return "\n".join(lines)


if __name__ == "__main__":
    results = parse_bench()
    print(table(results))
    print(json.dumps(results, indent=1))
