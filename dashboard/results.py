"""Stored results as the charts need them: owned querysets, grouping, cached artefact reads.

Dashboards never re-simulate: everything here reads what a worker stored (a run's summary
row, its per-job Parquet and time-series JSON artefacts, a workload's job table). Artefacts
are immutable once written (a re-run writes new ones), so decoded columns are cached per
process by artefact id; callers check ownership before asking for an artefact.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

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
    "state",
    "summary",
    "per_job_id",
    "timeseries_id",
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


@lru_cache(maxsize=128)
def _series(artefact_id: int, sha: str) -> dict[str, list[float]]:
    return dict(json.loads(_raw(artefact_id)))


def timeseries(artefact_id: int) -> dict[str, list[float]]:
    """A run's stored time series (``clustersim.metrics.timeseries`` keys), cached."""
    pk = int(artefact_id)
    return _series(pk, content_key(pk))


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
    sorted; ``cells[(policy, config)]`` lists the runs of each seed, seed-ordered.
    """

    runs: list[Run]
    policies: list[str]
    configs: list[Config]
    cells: dict[tuple[str, Config], list[Run]]
    total: int = 0

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


def grid_of(runs: Iterable[Run], policy_order: Sequence[str] = ()) -> Grid:
    runs = list(runs)
    ok = [r for r in runs if r.state == RunState.SUCCEEDED and r.summary is not None]
    labels = list(dict.fromkeys([*policy_order, *(label_of(r) for r in ok)]))
    present = {label_of(r) for r in ok}
    policies = [p for p in labels if p in present]
    cells: dict[tuple[str, Config], list[Run]] = {}
    for r in sorted(ok, key=lambda r: (r.seed, r.pk)):
        cells.setdefault((label_of(r), config_of(r)), []).append(r)
    configs = sorted({c for _, c in cells})
    return Grid(runs=ok, policies=policies, configs=configs, cells=cells, total=len(runs))


def experiment_runs(exp: Experiment) -> list[Run]:
    return list(
        Run.objects.filter(experiment=exp)
        .select_related("cluster", "workload")
        .only(*RUN_FIELDS)
        .order_by("id")
    )


def experiment_grid(exp: Experiment) -> Grid:
    order = [policy_label(p.get("name", ""), p.get("params")) for p in exp.policies or []]
    return grid_of(experiment_runs(exp), order)


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
        f"{r.pk}.{r.state}.{r.per_job_id}.{r.timeseries_id}.{r.finished_at}" for r in runs
    )
