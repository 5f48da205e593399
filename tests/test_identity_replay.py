"""Identity replay: a trace replayed on a cluster of its source's shape runs its recorded durations.

Each job is replayed alone (one simulation per job, submitted at 0, so nothing contends and no
clock round-off enters) under FIFO with consolidated placement and no restore cost, and its JCT
must equal its recorded duration to float round-off. Recorded durations are read from the files
here, independently of the trace readers:

- Philly: the ``duration`` column of ``philly.csv`` (a sample of every gang size, every job
  larger than 32 GPUs) on the ``philly`` preset;
- Tiresias: the ``duration`` column of ``60_job.csv`` on its ``cluster_spec.csv``;
- Gavel and Shockwave: their formats record steps, not times (Shockwave's ``duration`` field
  was measured with dynamic batch sizes and another throughput table, and is not
  reproducible), so the recorded duration of a job on a type is ``total_steps`` over Gavel's
  measured consolidated isolated throughput of its (job type, scale factor) on that type
  (``simulation_throughputs.json``) — what Gavel's simulator gives a job alone, without its
  round quantisation. Each job is replayed on each of the testbed's three types.

See ``docs/identity-replay.md``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from clustersim.cluster import Cluster
from clustersim.engine import simulate
from clustersim.jobs import JobTable
from clustersim.perf import PerformanceModel
from clustersim.presets import preset
from clustersim.spec import load_cluster
from clustersim.traces import read_trace
from scheduling.fifo import FIFO
from scheduling.placement import Consolidate

REL = 1e-9
#: Philly jobs replayed per gang size (all of them for sizes with fewer).
PHILLY_PER_SIZE = 12
#: Gavel-format jobs replayed per trace (every 8-GPU job of it, then the first others).
GAVEL_JOBS = 24
#: Gavel worker key of each type of the ``gavel-testbed`` preset.
GAVEL_KEY = {"V100-SXM2-16GB": "v100", "P100": "p100", "K80": "k80"}


def replay_alone(jobs: JobTable, cluster: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """(JCT, type index it ran on) of every job replayed alone, (n,) each."""
    perf = PerformanceModel(restore_s=0.0)
    jct = np.full(len(jobs), np.nan)
    ran = np.full(len(jobs), -1)
    for i in range(len(jobs)):
        one = jobs.take(np.array([i])).replace(submit_time=np.zeros(1))
        res = simulate(one, cluster, FIFO(), Consolidate(), perf=perf)
        assert res.completed[0], f"job {i} did not complete"
        assert res.first_start[0] == 0.0 and res.preemptions[0] == 0
        jct[i] = res.finish[0] - one.submit_time[0]
        ran[i] = int(np.argmax(res.type_time[0]))
    return jct, ran


def assert_durations(jct: np.ndarray, want: np.ndarray, gangs: np.ndarray) -> None:
    rel = np.abs(jct - want) / want
    bad = np.flatnonzero(~(rel <= REL))
    detail = [(int(gangs[i]), float(want[i]), float(jct[i])) for i in bad[:5]]
    assert not len(bad), f"{len(bad)} jobs off by up to {np.nanmax(rel):.2e}: {detail}"


# -- Philly ---------------------------------------------------------------------------------------


def philly_sample(path: Path) -> list[int]:
    """Data-row indices: up to PHILLY_PER_SIZE per gang size (seeded), every gang > 32."""
    with path.open(newline="") as fh:
        gangs = np.array([int(r["num_gpus"]) for r in csv.DictReader(fh)])
    rng = np.random.default_rng(20171004)
    rows: list[int] = []
    for size in np.unique(gangs):
        idx = np.flatnonzero(gangs == size)
        k = len(idx) if size > 32 else min(PHILLY_PER_SIZE, len(idx))
        rows += rng.choice(idx, size=k, replace=False).tolist()
    return sorted(rows)


def test_philly_jobs_replay_to_their_durations_on_the_philly_preset(shared_data: Path) -> None:
    path = shared_data / "traces" / "philly" / "philly.csv"
    rows = philly_sample(path)
    chosen = set(rows)
    with path.open(newline="") as fh:
        recorded = {i: r for i, r in enumerate(csv.DictReader(fh)) if i in chosen}
    jobs, _ = read_trace(path)  # job_id = data-row index; the table is in submit order
    jobs = jobs.take(np.flatnonzero([int(j) in chosen for j in jobs.job_id]))
    assert sorted(int(j) for j in jobs.job_id) == rows
    recorded_rows = [recorded[int(j)] for j in jobs.job_id]
    gangs = np.array([int(r["num_gpus"]) for r in recorded_rows])
    assert gangs.tolist() == jobs.num_gpus.tolist()
    assert {1, 2, 4, 8, 16, 64, 128} <= set(gangs.tolist())  # one node, several, two racks' worth
    jct, _ = replay_alone(jobs, preset("philly"))
    assert_durations(jct, np.array([float(r["duration"]) for r in recorded_rows]), gangs)


# -- Tiresias -------------------------------------------------------------------------------------


def test_tiresias_jobs_replay_to_their_durations_on_their_cluster_spec(shared_data: Path) -> None:
    folder = shared_data / "traces" / "tiresias"
    with (folder / "60_job.csv").open(newline="") as fh:
        recorded = list(csv.DictReader(fh))
    jobs, _ = read_trace(folder / "60_job.csv")
    assert [str(x) for x in jobs.job_id] == [r["job_id"] for r in recorded]
    cluster = load_cluster(str(folder / "cluster_spec.csv"))
    assert set(cluster.node_devices.tolist()) == {4}  # 8-GPU jobs cross nodes
    gangs = jobs.num_gpus
    assert {1, 2, 4, 8} <= set(gangs.tolist())
    jct, _ = replay_alone(jobs, cluster)
    assert_durations(jct, np.array([float(r["duration"]) for r in recorded]), gangs)


# -- Gavel and Shockwave --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gavel_table(shared_data: Path) -> dict[str, dict[str, dict[str, float]]]:
    path = shared_data / "throughput" / "gavel" / "simulation_throughputs.json"
    data: dict[str, dict[str, dict[str, float]]] = json.loads(path.read_text())
    return data


def measured(table: dict[str, dict[str, dict[str, float]]], key: str, jt: str, sf: int) -> float:
    """Gavel's consolidated isolated steps/s, ``nan`` when not measured."""
    entry = table[key].get(f"('{jt}', {sf})")
    return float(entry["null"]) if entry is not None else float("nan")


@pytest.mark.parametrize(
    "trace",
    [
        "gavel/0e4a51.trace",  # old 7-field layout
        "gavel/generated/gavel_synth_multigpu_lam900_n100.trace",  # current 10-field layout
        "shockwave/shockwave_220jobs_100.trace",  # Shockwave 12-field layout
    ],
)
def test_gavel_jobs_replay_to_steps_over_measured_throughput_on_the_testbed(
    shared_data: Path, gavel_table: dict[str, dict[str, dict[str, float]]], trace: str
) -> None:
    jobs, _ = read_trace(shared_data / "traces" / trace)
    cluster = preset("gavel-testbed")
    keys = [GAVEL_KEY[t.name] for t in cluster.types]
    jt = [str(x) for x in jobs.job_type]
    sf = jobs.num_gpus.tolist()
    ok = np.array(
        [
            measured(gavel_table, "v100", a, b) == measured(gavel_table, "v100", a, b)
            for a, b in zip(jt, sf, strict=True)
        ]
    )
    big = np.flatnonzero(ok & (jobs.num_gpus == 8))
    rest = np.flatnonzero(ok & (jobs.num_gpus != 8))
    pick = np.sort(np.concatenate([big, rest[: max(0, GAVEL_JOBS - len(big))]]))
    jobs = jobs.take(pick)
    steps = np.asarray(jobs.work, dtype=np.float64)
    for t, key in enumerate(keys):
        rate = np.array([measured(gavel_table, key, jt[i], sf[i]) for i in pick])
        runs = np.flatnonzero(rate > 0)  # a measured 0 (ResNet-50 bs 128 on K80) never runs
        pinned = jobs.take(runs).replace(
            gpu_type=np.full(len(runs), cluster.types[t].name, dtype=object)
        )
        jct, ran = replay_alone(pinned, cluster)
        assert (ran == t).all()
        assert_durations(jct, steps[runs] / rate[runs], pinned.num_gpus)
