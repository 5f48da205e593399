"""Operations the API and the forms share: create things and send their work on commit.

The work of a new object is sent to the broker after the transaction commits; if the broker
cannot be reached, the object is stored all the same (the request succeeds) and the sweeper
sends its work once the broker is back (:mod:`planner.dispatch`): never an object stored with
no way to start, and no reason for a client to retry and store it twice.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from planner import runner
from planner.models import (
    Artefact,
    Cluster,
    Experiment,
    Run,
    RunState,
    Workload,
    WorkloadStatus,
)


class QueuedRunsLimit(ValidationError):
    """More queued runs than ``CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER`` (the API answers 429)."""


def _on_commit(func: Any) -> None:
    """Run ``func`` after commit; an error there is logged, never the request's 500 (in eager
    mode, as in tests, it propagates)."""
    from config.celery import app

    transaction.on_commit(func, robust=not app.conf.task_always_eager)


def _send_workload_on_commit(workload_id: int) -> None:
    from planner.dispatch import send_workload

    _on_commit(lambda: send_workload(workload_id))


def cluster_summary(spec: dict[str, Any], owner: Any) -> tuple[int, list[str]]:
    """Validate a spec (with the owner's accelerator types); total devices and type names.

    Raises :class:`ValidationError` with the simulator's message (it names the field).
    """
    from clustersim.errors import ClustersimError
    from clustersim.spec import cluster_from_spec
    from planner.models import AcceleratorType, effective_spec

    try:
        cluster = cluster_from_spec(
            effective_spec(spec, AcceleratorType.objects.filter(owner=owner))
        )
    except ClustersimError as exc:
        raise ValidationError(str(exc)) from None
    return int(cluster.total_devices), list(cluster.type_names)


#: Largest node list imported in the request (they are small: a 10k-node kubectl list is a
#: few tens of MB); larger ones are refused with a clear error.
MAX_INVENTORY_BYTES = 64 * 1024 * 1024


def import_cluster(
    owner: Any,
    raw: bytes,
    filename: str,
    fmt: str = "",
    aliases: dict[str, str] | None = None,
    name: str = "",
    nodes_per_rack: int | None = None,
    description: str = "",
) -> Cluster:
    """A cluster from a node list (kubectl JSON, Slurm ``scontrol show node``, Alibaba CSVs).

    The importer's report (models resolved, unmapped models and the nodes left out, warnings)
    is kept on the cluster. Raises :class:`ValidationError` naming the file, line and field
    when the file cannot be read; nothing is stored then.
    """
    import os

    from clustersim.errors import ClustersimError
    from clustersim.inventory import parse_inventory

    if len(raw) > MAX_INVENTORY_BYTES:
        raise ValidationError(
            f"{filename}: {len(raw):,} bytes; node lists of at most "
            f"{MAX_INVENTORY_BYTES // 2**20} MB are imported"
        )
    stem = os.path.splitext(os.path.basename(filename))[0] or "imported"
    try:
        spec, report = parse_inventory(
            raw,
            fmt or None,
            path=filename,
            aliases=aliases or None,
            name=name or stem,
            nodes_per_rack=nodes_per_rack,
        )
    except ClustersimError as exc:
        raise ValidationError(str(exc)) from None
    return create_cluster(
        owner,
        name or stem,
        spec,
        description=description or f"imported from {filename} ({report.format})",
        import_report=report.to_dict(),
    )


def create_cluster(owner: Any, name: str, spec: dict[str, Any], **fields: Any) -> Cluster:
    """Validate ``spec`` (:func:`cluster_summary`) and store the cluster with its totals."""
    total, types = cluster_summary(spec, owner)
    return Cluster.objects.create(
        owner=owner, name=name, spec=spec, total_devices=total, device_types=types, **fields
    )


def create_workload(
    owner: Any,
    name: str,
    filename: str,
    raw: bytes | IO[bytes],
    fmt: str = "",
    description: str = "",
    enqueue: bool = True,
) -> Workload:
    """Store an upload and send its parsing after commit.

    ``raw`` is the bytes, or a file (a Django ``UploadedFile``) streamed into storage in
    chunks without being read whole (:func:`planner.storage.store`).
    """
    from planner import storage

    with transaction.atomic():
        source = storage.store(owner, Artefact.Kind.UPLOAD, raw, filename=filename)
        workload = Workload.objects.create(
            owner=owner,
            name=name or filename,
            description=description,
            format=fmt,
            original_filename=filename,
            upload_size=source.size,
            source=source,
            status=WorkloadStatus.PENDING,
        )
        if enqueue:
            _send_workload_on_commit(workload.pk)
    return workload


def create_synthetic_workload(
    owner: Any, name: str, recipe: Any, description: str = "", enqueue: bool = True
) -> Workload:
    """Validate a synthetic recipe (``ValidationError`` naming the field) and enqueue its
    generation after commit (:mod:`planner.recipes`)."""
    from planner import recipes
    from planner.models import WorkloadOrigin

    clean = recipes.validate_synthetic(recipe, owner)
    name = name or "synthetic workload"
    return _recipe_workload(
        owner, name, description, WorkloadOrigin.SYNTHETIC, clean, None, enqueue
    )


def _recipe_workload(
    owner: Any,
    name: str,
    description: str,
    origin: str,
    recipe: dict[str, Any],
    parent: Workload | None,
    enqueue: bool,
) -> Workload:
    """Store a workload to be built from ``recipe`` and send the build after commit."""
    with transaction.atomic():
        workload = Workload.objects.create(
            owner=owner,
            name=name,
            description=description,
            origin=origin,
            recipe=recipe,
            parent=parent,
            original_filename="",
            status=WorkloadStatus.PENDING,
        )
        if enqueue:
            _send_workload_on_commit(workload.pk)
    return workload


def derive_workload(
    owner: Any,
    parent: Workload,
    name: str,
    steps: Any,
    description: str = "",
    enqueue: bool = True,
) -> Workload:
    """A new workload from ``parent``'s job table through transformation ``steps``
    (validated here, applied by the worker)."""
    from planner import recipes
    from planner.models import WorkloadOrigin

    if parent.owner_id != getattr(owner, "pk", None):
        raise ValidationError(f"workload {parent.pk} is not yours")
    if parent.status != WorkloadStatus.READY:
        raise ValidationError(f"workload {parent.pk} is {parent.status}: derive from a ready one")
    clean = recipes.validate_derive(steps, owner)
    recipe = {"parent": parent.pk, "steps": clean}
    name = name or f"{parent.name} (derived)"
    return _recipe_workload(
        owner, name, description, WorkloadOrigin.DERIVED, recipe, parent, enqueue
    )


def validate_policies(policies: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each ``{"name", "params"}`` must build a policy, its parameters typed and in range as
    its signature says (:mod:`scheduling.params`); returns them normalised. Raises
    :class:`ValidationError` naming ``policies[i].params.<name>``."""
    from scheduling.params import normalised, policies_errors
    from scheduling.registry import POLICIES

    errors = policies_errors(policies)
    if errors:
        raise ValidationError(errors)
    return [
        {"name": p["name"], "params": normalised(POLICIES[p["name"]], p.get("params") or {})}
        for p in policies
    ]


def create_experiment(
    owner: Any,
    *,
    name: str,
    clusters: Iterable[Cluster],
    workloads: Iterable[Workload],
    policies: Sequence[dict[str, Any]],
    load_factors: Sequence[float] = (1.0,),
    seeds: Sequence[int] = (0,),
    placement: str | None = None,
    compat: str = "",
    until_s: float | None = None,
    cost_horizon_hours: float | None = None,
    description: str = "",
    enqueue: bool = True,
) -> Experiment:
    """Create the experiment and one queued run per grid point; launch it after commit.

    ``placement`` ``None`` (or blank): ``consolidate``, or under a compatibility mode
    (``compat``, :mod:`clustersim.compat`) each policy's placement in that simulator; a mode
    that does not cover a policy or placement is refused, naming both. ``cost_horizon_hours``
    is the planning horizon of every run's owned-cluster cost (``None``: each workload's
    arrival span at its load factor, at least 1 h; ``docs/metrics.md``).

    A policy whose results cannot depend on the seed with its placement
    (:func:`seed_independent`) gets one run per cluster × workload × load factor, with the
    first seed, marked ``seed_independent``; the others one run per seed as well.
    """
    from clustersim.compat import resolve
    from clustersim.errors import ClustersimError

    clusters, workloads = list(clusters), list(workloads)
    policies = validate_policies(policies)
    where: list[str] = []
    for p in policies:
        try:
            where.append(resolve(p["name"], None, placement or None, compat or None)[1])
        except ClustersimError as exc:
            raise ValidationError(str(exc).replace("--compat ", "compat ")) from None
    if not (clusters and workloads and policies and load_factors and seeds):
        raise ValidationError(
            "the grid needs at least one cluster, workload, policy, load factor and seed"
        )
    if any(not (f > 0) for f in load_factors):
        raise ValidationError("load factors must be positive")
    if cost_horizon_hours is not None and not (0 < cost_horizon_hours < float("inf")):
        raise ValidationError("the cost horizon must be a positive number of hours")
    not_ready = [w.name for w in workloads if w.status != WorkloadStatus.READY]
    if not_ready:
        raise ValidationError(f"workloads not parsed (yet): {', '.join(not_ready)}")
    once = seed_independent(policies, where)
    grid = [
        (c, w, p, f, s, once[i])
        for c, w, (i, p), f in itertools.product(
            clusters, workloads, enumerate(policies), load_factors
        )
        for s in (seeds[:1] if once[i] else seeds)
    ]
    if len(grid) > settings.CLUSTERSIM_MAX_RUNS_PER_EXPERIMENT:
        limit = settings.CLUSTERSIM_MAX_RUNS_PER_EXPERIMENT
        raise ValidationError(f"{len(grid)} runs; at most {limit} per experiment")
    with transaction.atomic():
        check_queued_runs(owner.pk, len(grid))
        exp = Experiment.objects.create(
            owner=owner,
            name=name,
            description=description,
            policies=policies,
            placement=placement or ("" if compat else "consolidate"),
            compat=compat or "",
            load_factors=[float(f) for f in load_factors],
            seeds=[int(s) for s in seeds],
            until_s=until_s,
            cost_horizon_hours=cost_horizon_hours,
            runs_total=len(grid),
        )
        exp.clusters.set(clusters)
        exp.workloads.set(workloads)
        placement_of = {p["name"]: w for p, w in zip(policies, where, strict=True)}
        Run.objects.bulk_create(
            Run(
                owner=owner,
                experiment=exp,
                cluster=c,
                workload=w,
                policy=p["name"],
                params=p["params"],
                placement=placement_of[p["name"]],
                load_factor=float(f),
                seed=int(s),
                seed_independent=alone,
            )
            for c, w, p, f, s, alone in grid
        )
        if enqueue:
            launch(exp.pk)
    return exp


def seed_independent(policies: Sequence[dict[str, Any]], placements: Sequence[str]) -> list[bool]:
    """For each ``{"name", "params"}`` of ``policies`` with its resolved placement: whether its
    results cannot depend on the run's seed (:func:`clustersim.engine.seed_matters`, from the
    registry's ``uses_seed`` declarations), so that one run stands for every seed."""
    from clustersim.engine import seed_matters
    from scheduling.registry import PLACEMENTS, POLICIES

    return [
        not seed_matters(POLICIES[p["name"]], PLACEMENTS[where])
        for p, where in zip(policies, placements, strict=True)
    ]


def check_queued_runs(owner_id: int, adding: int) -> None:
    """Raise :class:`QueuedRunsLimit` if ``adding`` more queued runs would take the user past
    ``CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER`` (0: no limit).

    Call it inside the transaction that adds the runs: the owner's row is locked (on
    PostgreSQL; SQLite serialises writers), so two requests at once cannot both slip in.
    """
    limit = settings.CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER
    if limit <= 0 or adding <= 0:
        return
    from django.contrib.auth import get_user_model

    list(get_user_model().objects.select_for_update().filter(pk=owner_id).values_list("pk"))
    queued = Run.objects.filter(owner_id=owner_id, state=RunState.QUEUED).count()
    if queued + adding > limit:
        raise QueuedRunsLimit(
            f"{adding} more runs would make {queued + adding} queued; at most {limit} runs may "
            f"be queued per user (you have {queued}): wait for some to finish or cancel some",
            code="queued_runs_limit",
        )


def launch(experiment_id: int) -> None:
    """Dispatch the experiment owner's queued runs once the current transaction commits.

    If the broker cannot be reached then, the runs wait in the database and the sweeper
    dispatches them later (:mod:`planner.dispatch`).
    """
    from planner.dispatch import dispatch

    owner = Experiment.objects.values_list("owner_id", flat=True).get(pk=experiment_id)
    _on_commit(lambda: dispatch([owner]))


def rerun(experiment: Experiment) -> int:
    """Requeue the experiment's failed and cancelled runs and launch them (raises
    :class:`QueuedRunsLimit` past the user's limit of queued runs, and requeues none)."""
    from planner.models import FINAL_STATES

    with transaction.atomic():
        again = experiment.runs.filter(state__in=FINAL_STATES).exclude(state=RunState.SUCCEEDED)
        check_queued_runs(experiment.owner_id, again.count())
        ids = runner.requeue_runs(experiment.runs.all())
        if ids:
            launch(experiment.pk)
    return len(ids)
