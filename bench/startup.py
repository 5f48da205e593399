"""Start-up time of ``python -m clustersim run`` on a small trace (part of ``make bench``).

On a small trace the fixed cost of a run (the interpreter, imports, loading the trace) is
what the user waits for. Target (issue "Core, second pass"): ≤ 0.4 s wall for
``python -m clustersim run --cluster p100:64:4 --trace tiresias/60_job.csv`` under FIFO and
Tiresias, with and without ``--json``, on a quiet machine.

Each case runs ``CLUSTERSIM_BENCH_STARTUP_RUNS`` times (default 7, at least 5) in fresh
processes, the cases interleaved, after one untimed run of each (the file cache, ``.pyc``
files). Reported: the minimum and median wall time, the median CPU time (user + system, less
sensitive to other load on a shared machine) and the load average when the runs ended. The
interpreter alone and ``import numpy`` are timed the same way, as the floor. Run alone with
``python -m bench.startup``.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "data" / "traces" / "tiresias" / "60_job.csv"
#: The target wall time of each ``run`` case, s.
TARGET_S = 0.4


def cases() -> list[tuple[str, list[str]]]:
    """(label, argv after the interpreter) of every timed case."""
    run = ["-m", "clustersim", "run", "--cluster", "p100:64:4", "--trace", str(TRACE)]
    return [
        ("python -c pass", ["-c", "pass"]),
        ("python -c 'import numpy'", ["-c", "import numpy"]),
        ("run --policy fifo", [*run, "--policy", "fifo"]),
        ("run --policy tiresias", [*run, "--policy", "tiresias"]),
        ("run --policy fifo --json", [*run, "--policy", "fifo", "--json"]),
        ("run --policy tiresias --json", [*run, "--policy", "tiresias", "--json"]),
    ]


def _once(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *argv], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def startup_bench(runs: int | None = None) -> str:
    """Time every case; the table as text."""
    n = max(5, runs or int(os.environ.get("CLUSTERSIM_BENCH_STARTUP_RUNS", "7")))
    todo = cases()
    walls: dict[str, list[float]] = {label: [] for label, _ in todo}
    cpus: dict[str, list[float]] = {label: [] for label, _ in todo}
    for _, argv in todo:
        _once(argv)
    for _ in range(n):
        for label, argv in todo:
            wall, cpu = _once(argv)
            walls[label].append(wall)
            cpus[label].append(cpu)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    head = f"{'case':<30} | wall min s | wall median s | cpu median s | target"
    lines = [head, "-" * len(head)]
    for label, _ in todo:
        med = statistics.median(walls[label])
        verdict = ""
        if label.startswith("run"):
            verdict = f"≤ {TARGET_S} s " + ("ok" if med <= TARGET_S else "MISSED")
        lines.append(
            f"{label:<30} | {min(walls[label]):>10.3f} | {med:>13.3f} | "
            f"{statistics.median(cpus[label]):>12.3f} | {verdict}"
        )
    lines.append(f"\n({n} fresh processes per case; load average {load} when they ended)")
    return "\n".join(lines)


if __name__ == "__main__":
    print(startup_bench())
