"""Stored results as the charts need them: owned querysets, grouping, cached artefact reads.

Dashboards never re-simulate: everything here reads what a worker stored (a run's summary
row, its per-job Parquet, time-series JSON and stints Parquet artefacts, a workload's job
table). Artefacts are immutable once written (a re-run writes new ones), so decoded columns
are cached per process by artefact id; callers check ownership before asking for an
artefact.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from django.http import Http404

from planner.models import Artefact, Experiment, Run, RunState

#: Fields of a run the charts read (everything but the big JSON/blob columns they don't).
RUN_FIELDS = (
    "id",
    "experiment_id",
    "cluster_id",
    "workload_id",
    "policy",
    "params",
    "load_factor",
    "seed",
    "seed_independent",
    "state",
    "summary",
    "per_job_id",
    "timeseries_id",
    "stints_id",
    "finished_at",
    "cluster__name",
    "workload__name",
)


def _raw(artefact_id: int) -> bytes:
    row = Artefact.objects.filter(pk=artefact_id).values_list("data", "encoding").first()
    if row is None:
        raise Http404(f"artefact {artefact_id} is missing")
    data, encoding = bytes(row[0]), row[1]
    return gzip.decompress(data) if encoding == "gzip" else data


def content_key(artefact_id: int) -> str:
    """The artefact's content hash: with its id, the key of everything decoded from it.

    (An id alone is not enough where ids can be reused, e.g. rolled-back test databases.)
    """
    sha = Artefact.objects.filter(pk=artefact_id).values_list("sha256", flat=True).first()
    if sha is None:
        raise Http404(f"artefact {artefact_id} is missing")
    return str(sha)


@lru_cache(maxsize=256)
def _columns(artefact_id: int, sha: str, columns: tuple[str, ...]) -> pd.DataFrame:
    table = pq.read_table(io.BytesIO(_raw(artefact_id)), columns=list(columns))
    return table.to_pandas()


def parquet_columns(artefact_id: int, columns: Sequence[str]) -> pd.DataFrame:
    """Some columns of a Parquet artefact (per-job results or a job table), cached.

    The returned frame is shared between callers: treat it as read-only.
    """
    pk = int(artefact_id)
    return _columns(pk, content_key(pk), tuple(columns))


#: Key of the time-series artefact that holds what the optional models did
#: (``clustersim.metrics.model_records``: rack uplinks, failures) rather than a list.
MODELS_KEY = "models"


@lru_cache(maxsize=128)
def _stored(artefact_id: int, sha: str) -> tuple[dict[str, list[float]], dict[str, Any]]:
    data = dict(json.loads(_raw(artefact_id)))
    models = data.pop(MODELS_KEY, None) or {}
    return data, models


def timeseries(artefact_id: int) -> dict[str, list[float]]:
    """A run's stored time series (``clustersim.metrics.timeseries`` keys), cached."""
    pk = int(artefact_id)
    return _stored(pk, content_key(pk))[0]


def model_records(artefact_id: int) -> dict[str, Any]:
    """What a run's optional models did (``clustersim.metrics.model_records``), stored with
    its time series; empty for runs without them or stored before they were kept."""
    pk = int(artefact_id)
    return _stored(pk, content_key(pk))[1]


@dataclass(eq=False)
class StintColumns:
    """A run's device stints (``planner.runner.stints_parquet``) as read-only numpy columns.

    Rows are sorted by ``start`` (then node).
    """

    job: np.ndarray
    node: np.ndarray
    rack: np.ndarray
    node_devices: np.ndarray
    devices: np.ndarray
    start: np.ndarray
    end: np.ndarray
    type_code: np.ndarray
    type_names: tuple[str, ...]
    _by_job: tuple[np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.job)

    def overlapping(self, lo: float, hi: float) -> np.ndarray:
        """Rows (in start order) of the stints that overlap ``[lo, hi)``."""
        head = int(np.searchsorted(self.start, hi, side="left"))
        return np.flatnonzero(self.end[:head] > lo)

    def by_job(self) -> tuple[np.ndarray, np.ndarray]:
        """``(order, offsets)``: rows by job (then start); job ``j``'s are
        ``order[offsets[j]:offsets[j + 1]]``. Computed on first use (the Gantt's)."""
        if self._by_job is None:
            order = np.argsort(self.job, kind="stable")
            n_jobs = int(self.job.max()) + 1 if len(self.job) else 0
            offsets = np.r_[0, np.cumsum(np.bincount(self.job, minlength=n_jobs))]
            order.setflags(write=False)
            offsets.setflags(write=False)
            self._by_job = (order, offsets.astype(np.int64))
        return self._by_job

    def of_jobs(self, jobs: np.ndarray) -> np.ndarray:
        """Rows of the stints of ``jobs`` (a few job rows), job by job, each in start order."""
        order, offsets = self.by_job()
        n = len(offsets) - 1
        parts = [
            order[offsets[j] : offsets[j + 1]]
            for j in np.asarray(jobs, dtype=np.int64).tolist()
            if 0 <= j < n
        ]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


_STINT_COLUMNS = ("job", "node", "rack", "node_devices", "accel_type", "devices", "start", "end")


@lru_cache(maxsize=8)
def _stints(artefact_id: int, sha: str) -> StintColumns:
    table = pq.read_table(
        io.BytesIO(_raw(artefact_id)), columns=list(_STINT_COLUMNS), read_dictionary=["accel_type"]
    )

    def ints(name: str) -> np.ndarray:
        return np.ascontiguousarray(table.column(name).to_numpy(), dtype=np.int64)

    def floats(name: str) -> np.ndarray:
        return np.ascontiguousarray(table.column(name).to_numpy(), dtype=np.float64)

    types = table.column("accel_type").combine_chunks()
    if len(types):
        codes = np.asarray(types.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        names = tuple(str(x) for x in types.dictionary.to_pylist())
    else:
        codes, names = np.zeros(0, dtype=np.int64), ()
    cols = StintColumns(
        job=ints("job"),
        node=ints("node"),
        rack=ints("rack"),
        node_devices=ints("node_devices"),
        devices=ints("devices"),
        start=floats("start"),
        end=floats("end"),
        type_code=codes,
        type_names=names,
    )
    for value in vars(cols).values():
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    return cols


def stint_columns(artefact_id: int) -> StintColumns:
    """A run's stored device stints, decoded once per process (numeric columns only)."""
    pk = int(artefact_id)
    return _stints(pk, content_key(pk))


def stints_rows(artefact_id: int, rows: np.ndarray) -> pd.DataFrame:
    """Some rows (start-order indices) of a stints artefact with every column, for exports."""
    table = pq.read_table(io.BytesIO(_raw(int(artefact_id))))
    return table.take(np.asarray(rows, dtype=np.int64)).to_pandas()


# -- runs and how an experiment groups them ---------------------------------------------------


def policy_label(name: str, params: dict[str, Any] | None) -> str:
    """``tiresias`` or, with hyper-parameters, ``tiresias(quantum_s=600)``."""
    if not params:
        return name
    inner = ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
    return f"{name}({inner})"


@dataclass(frozen=True, order=True)
class Config:
    """One cell of the grid other than policy and seed: cluster × workload × load factor."""

    cluster_id: int
    workload_id: int
    load: float
    cluster: str = field(compare=False, default="")
    workload: str = field(compare=False, default="")

    @property
    def key(self) -> str:
        """Stable query-string value (``?config=``)."""
        return f"{self.cluster_id}:{self.workload_id}:{self.load:g}"

    def label(self, *, cluster: bool = True, workload: bool = True) -> str:
        parts = [self.cluster] if cluster else []
        parts += [self.workload] if workload else []
        parts.append(f"load ×{self.load:g}")
        return " · ".join(parts)


def config_of(run: Run) -> Config:
    return Config(
        run.cluster_id, run.workload_id, float(run.load_factor), run.cluster.name, run.workload.name
    )


@dataclass
class Grid:
    """Succeeded runs of an experiment (or any set of runs) grouped for charts.

    ``policies`` are labels in the experiment's order (the colour order); ``configs`` are
    sorted; ``cells[(policy, config)]`` lists the runs of each seed, seed-ordered, or the one
    run that stands for every seed (``seed_independent``); ``seeds`` is how many seeds the
    experiment lists.
    """

    runs: list[Run]
    policies: list[str]
    configs: list[Config]
    cells: dict[tuple[str, Config], list[Run]]
    total: int = 0
    seeds: int = 1

    def run_once(self, runs: Sequence[Run]) -> bool:
        """Whether a cell is one run made for all of several seeds (it does not depend on
        the seed); with one seed listed there was nothing to collapse."""
        return self.seeds > 1 and len(runs) == 1 and bool(runs[0].seed_independent)

    @property
    def many_clusters(self) -> bool:
        return len({c.cluster_id for c in self.configs}) > 1

    @property
    def many_workloads(self) -> bool:
        return len({c.workload_id for c in self.configs}) > 1

    def config_label(self, c: Config) -> str:
        return c.label(cluster=self.many_clusters, workload=self.many_workloads)

    def find_config(self, key: str | None) -> Config | None:
        """The config named by ``key`` (``Config.key``); the first when ``key`` is empty."""
        if not self.configs:
            return None
        if not key:
            return self.configs[0]
        for c in self.configs:
            if c.key == key:
                return c
        return None


def label_of(run: Run) -> str:
    return policy_label(run.policy, run.params)


def grid_of(runs: Iterable[Run], policy_order: Sequence[str] = (), seeds: int = 1) -> Grid:
    runs = list(runs)
    ok = [r for r in runs if r.state == RunState.SUCCEEDED and r.summary is not None]
    labels = list(dict.fromkeys([*policy_order, *(label_of(r) for r in ok)]))
    present = {label_of(r) for r in ok}
    policies = [p for p in labels if p in present]
    cells: dict[tuple[str, Config], list[Run]] = {}
    for r in sorted(ok, key=lambda r: (r.seed, r.pk)):
        cells.setdefault((label_of(r), config_of(r)), []).append(r)
    configs = sorted({c for _, c in cells})
    return Grid(
        runs=ok, policies=policies, configs=configs, cells=cells, total=len(runs), seeds=seeds
    )


def experiment_runs(exp: Experiment) -> list[Run]:
    return list(
        Run.objects.filter(experiment=exp)
        .select_related("cluster", "workload")
        .only(*RUN_FIELDS)
        .order_by("id")
    )


def experiment_grid(exp: Experiment) -> Grid:
    order = [policy_label(p.get("name", ""), p.get("params")) for p in exp.policies or []]
    return grid_of(experiment_runs(exp), order, seeds=len(exp.seeds or []))


def parse_run_ids(values: Iterable[str]) -> list[int]:
    """Run ids from ``?runs=1,2,3`` (or repeated ``runs``), in order, without repeats."""
    ids: list[int] = []
    for value in values:
        for part in value.replace(" ", ",").split(","):
            if part.strip():
                try:
                    ids.append(int(part))
                except ValueError:
                    raise Http404(f"run ids are integers, got {part!r}") from None
    return list(dict.fromkeys(ids))


def owned_runs(user: Any, ids: Sequence[int]) -> list[Run]:
    """The user's runs with these ids, in order; 404 when any is missing or not theirs."""
    found = {
        r.pk: r
        for r in Run.objects.owned_by(user)
        .filter(pk__in=ids)
        .select_related("cluster", "workload")
        .only(*RUN_FIELDS)
    }
    if len(found) != len(ids):
        raise Http404("no such run")
    return [found[i] for i in ids]


def version_of(runs: Iterable[Run]) -> str:
    """Cache version of charts over ``runs``: changes when any run's results change."""
    return ";".join(
        f"{r.pk}.{r.state}.{r.per_job_id}.{r.timeseries_id}.{r.stints_id}.{r.finished_at}"
        for r in runs
    )
