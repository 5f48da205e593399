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


def _check_policies_on_clusters(policies: Sequence[dict[str, Any]], clusters: list[Any]) -> None:
    """Parameters that depend on the cluster (a power budget below one node's idle draw,
    :meth:`scheduling.base.Policy.cluster_problems`): :class:`ValidationError` naming
    ``policies[i].params.<name>``."""
    from clustersim.errors import ClustersimError
    from clustersim.spec import cluster_from_spec
    from scheduling.params import checks_cluster, cluster_errors

    picky = [(i, p) for i, p in enumerate(policies) if checks_cluster(p["name"])]
    if not picky:
        return
    errors: list[str] = []
    for c in clusters:
        try:
            built = cluster_from_spec(c.effective_spec())
        except ClustersimError:
            continue  # a broken spec fails its run with its own message
        for i, p in picky:
            errors += cluster_errors(p["name"], p["params"], built, f"policies[{i}].params")
    if errors:
        raise ValidationError(list(dict.fromkeys(errors)))


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
    failures: dict[str, Any] | None = None,
    network: dict[str, Any] | None = None,
    stragglers: dict[str, Any] | None = None,
    spot: dict[str, Any] | None = None,
    elastic: str = "",
    aux_demand: str = "",
    description: str = "",
    enqueue: bool = True,
) -> Experiment:
    """Create the experiment and one queued run per grid point; launch it after commit.

    ``placement`` ``None`` (or blank): ``consolidate``, or under a compatibility mode
    (``compat``, :mod:`clustersim.compat`) each policy's placement in that simulator; a mode
    that does not cover a policy or placement is refused, naming both. ``cost_horizon_hours``
    is the planning horizon of every run's owned-cluster cost (``None``: each workload's
    arrival span at its load factor, at least 1 h; ``docs/metrics.md``). ``failures`` turns
    node failures on for every run (:func:`clustersim.failures.check_settings`: checkpoint
    knobs, optional MTBF and repair overrides; stored with its defaults filled in; ``None``:
    off); a bad value is refused naming ``failures.<key>``. ``network`` turns network
    contention on (:func:`clustersim.network.check_settings`: ``share_nics``) and
    ``stragglers`` slow nodes (:func:`clustersim.stragglers.check_settings`: ``share``,
    ``speed``, ``avoid``), likewise; a policy or mode the engine does not combine them with
    (co-location, the power model, ``compat`` gavel's whole-step rounds) is refused here,
    naming ``network`` or ``stragglers``, rather than failing every run. ``spot`` turns the
    reclaims of the clusters' spot pools on (:func:`clustersim.spot.check_settings`: a
    reclaim ``trace`` or ``None`` for draws at the pools' rates, the checkpoint knobs, which
    must equal the failures' when both are on); a trace naming a node that is not spot in
    one of the clusters is refused naming ``spot.trace`` and the cluster. ``elastic`` is the
    rule that sets the device-count bounds of every run's rigid jobs
    (:func:`clustersim.elastic.parse_rule`, e.g. ``x0.5-x2``; blank or ``none``: as the
    workloads say); stored normalised, a bad rule refused naming ``elastic``. ``aux_demand``
    is the rule that gives the jobs without a CPU or memory demand one
    (:func:`clustersim.resources.parse_rule`: ``none``, ``ignore``, ``synergy``,
    ``proportional``, ``per-gpu:C,M``; blank or ``none``: the workloads' own demands); stored
    normalised, a bad rule, or one that gives demands with a co-locating policy (the engine
    refuses CPU/memory demands with co-location), refused naming ``aux_demand``.

    A policy whose results cannot depend on the seed with its placement
    (:func:`seed_independent`) gets one run per cluster × workload × load factor, with the
    first seed, marked ``seed_independent``; the others one run per seed as well.
    """
    from clustersim.compat import resolve
    from clustersim.errors import ClustersimError

    clusters, workloads = list(clusters), list(workloads)
    policies = validate_policies(policies)
    _check_policies_on_clusters(policies, clusters)
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
    if failures is not None:
        from clustersim.failures import check_settings

        try:
            failures = check_settings(failures)
        except ClustersimError as exc:
            raise ValidationError(str(exc)) from None
    if network is not None:
        from clustersim.network import check_settings as check_network

        try:
            network = check_network(network)
        except ClustersimError as exc:
            raise ValidationError(str(exc)) from None
    if stragglers is not None:
        from clustersim.stragglers import check_settings as check_stragglers

        try:
            stragglers = check_stragglers(stragglers)
        except ClustersimError as exc:
            raise ValidationError(str(exc)) from None
    if spot is not None:
        spot = _checked_spot(spot, failures, clusters)
    elastic = checked_elastic(elastic)
    aux_demand = checked_aux_demand(aux_demand, policies, where, compat)
    _check_models(
        policies,
        where,
        compat,
        network=network,
        stragglers=stragglers,
        failures=failures,
        spot=spot,
    )
    not_ready = [w.name for w in workloads if w.status != WorkloadStatus.READY]
    if not_ready:
        raise ValidationError(f"workloads not parsed (yet): {', '.join(not_ready)}")
    once = seed_independent(policies, where, failures=failures, stragglers=stragglers, spot=spot)
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
            failures=failures,
            network=network,
            stragglers=stragglers,
            spot=spot,
            elastic=elastic,
            aux_demand=aux_demand,
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


def checked_elastic(text: str | None) -> str:
    """An experiment's elastic rule normalised (``""`` for none), or :class:`ValidationError`
    ``elastic: ...`` saying what is accepted (:func:`clustersim.elastic.parse_rule`)."""
    from clustersim.elastic import parse_rule
    from clustersim.errors import ClustersimError

    try:
        rule = parse_rule(text)
    except ClustersimError as exc:
        raise ValidationError(f"elastic: {exc}") from None
    return "" if rule is None else rule.text


def checked_aux_demand(
    text: str | None,
    policies: Sequence[dict[str, Any]] = (),
    placements: Sequence[str] = (),
    compat: str = "",
) -> str:
    """An experiment's CPU/memory demand rule normalised (``""`` for ``none``), or
    :class:`ValidationError` ``aux_demand: ...`` saying what is accepted
    (:func:`clustersim.resources.parse_rule`). A rule that gives demands (``synergy``,
    ``proportional``, ``per-gpu:C,M``) is refused with a co-locating policy of ``policies``
    (resolved on ``placements``): the engine refuses CPU/memory demands with co-location
    (``docs/resources.md``), so every such run would fail."""
    from clustersim.compat import resolve
    from clustersim.errors import ClustersimError
    from clustersim.resources import parse_rule
    from scheduling.registry import make_policy

    try:
        rule = parse_rule(text)
    except ClustersimError as exc:
        raise ValidationError(f"aux_demand: {exc}") from None
    if rule.kind in ("per-gpu", "proportional"):
        for p, where in zip(policies, placements, strict=True):
            kwargs, _ = resolve(p["name"], p["params"], where, compat or None)
            if make_policy(p["name"], **kwargs).colocates:
                raise ValidationError(
                    f"aux_demand: rule {rule.text!r} gives jobs CPU and memory demands, which"
                    f" policy {p['name']!r} cannot run with (it co-locates jobs; a guest holds"
                    " no device, so its cores would go uncharged): leave the rule blank or"
                    " drop the policy"
                )
    return "" if rule.kind == "none" else rule.text


def _checked_spot(
    spot: Any, failures: dict[str, Any] | None, clusters: list[Any]
) -> dict[str, Any]:
    """The experiment's spot settings validated (:func:`clustersim.spot.check_settings`),
    their checkpoints against the failures', and a trace's nodes against every cluster
    (:func:`clustersim.spot.check_trace_nodes`): :class:`ValidationError` naming
    ``spot.<key>`` (``spot.trace[i].<field>`` for a row)."""
    from clustersim.errors import ClustersimError
    from clustersim.spec import cluster_from_spec
    from clustersim.spot import check_against_failures, check_settings, check_trace_nodes

    try:
        spot = check_settings(spot)
        check_against_failures(spot, failures)
    except ClustersimError as exc:
        raise ValidationError(str(exc)) from None
    if spot["trace"] is None:
        return spot
    rows = [(r["node"], r["reclaimed_at_s"], r["returned_at_s"]) for r in spot["trace"]]
    errors: list[str] = []
    for c in clusters:
        try:
            built = cluster_from_spec(c.effective_spec())
        except ClustersimError:
            continue  # a broken spec fails its run with its own message
        try:
            check_trace_nodes(rows, built)
        except ClustersimError as exc:
            errors.append(str(exc))
    if errors:
        raise ValidationError(errors)
    return spot


def _check_models(
    policies: Sequence[dict[str, Any]],
    placements: Sequence[str],
    compat: str,
    network: dict[str, Any] | None,
    stragglers: dict[str, Any] | None,
    failures: dict[str, Any] | None = None,
    spot: dict[str, Any] | None = None,
) -> None:
    """Refuse network contention, stragglers, node failures or spot reclaims with what the
    engine does not combine them with (:func:`clustersim.network.check_engine`,
    :func:`clustersim.stragglers.check_engine`, :func:`clustersim.failures.check_engine`,
    :func:`clustersim.spot.check_engine`: a co-locating policy, one with the power model,
    ``compat`` gavel's whole-step rounds), as the engine would at every run:
    :class:`ValidationError` naming ``network``, ``stragglers``, ``failures`` or ``spot`` and
    the policy."""
    if network is None and stragglers is None and failures is None and spot is None:
        return
    from clustersim.compat import mode, resolve
    from clustersim.errors import ClustersimError
    from clustersim.failures import check_engine as failure_engine
    from clustersim.network import check_engine as network_engine
    from clustersim.spot import check_engine as spot_engine
    from clustersim.stragglers import check_engine as straggler_engine
    from scheduling.registry import make_policy

    whole_steps = bool(compat) and mode(compat).whole_steps_per_round
    checks = [
        (n, c)
        for n, c, on in (
            ("network", network_engine, network),
            ("stragglers", straggler_engine, stragglers),
            ("failures", failure_engine, failures),
            ("spot", spot_engine, spot),
        )
        if on is not None
    ]
    errors: list[str] = []
    for p, where in zip(policies, placements, strict=True):
        kwargs, _ = resolve(p["name"], p["params"], where, compat or None)
        pol = make_policy(p["name"], **kwargs)
        for name, check in checks:
            try:
                check(bool(pol.colocates), pol.power is not None, whole_steps)
            except ClustersimError as exc:
                errors.append(f"{name}: {exc} (policy {p['name']!r})")
    if errors:
        raise ValidationError(list(dict.fromkeys(errors)))


def seed_independent(
    policies: Sequence[dict[str, Any]],
    placements: Sequence[str],
    failures: dict[str, Any] | None = None,
    stragglers: dict[str, Any] | None = None,
    spot: dict[str, Any] | None = None,
) -> list[bool]:
    """For each ``{"name", "params"}`` of ``policies`` with its resolved placement: whether its
    results cannot depend on the run's seed (:func:`clustersim.engine.seed_matters`, from the
    registry's ``uses_seed`` declarations, the experiment's ``failures``: drawn failures
    depend on the seed, its ``stragglers``: slow nodes drawn from a share between 0 and 1
    do, and its ``spot``: reclaims drawn without a trace do), so that one run stands for every
    seed."""
    from clustersim.engine import seed_matters
    from clustersim.failures import FailureOptions
    from clustersim.spot import SpotOptions
    from clustersim.stragglers import StragglerOptions
    from scheduling.registry import PLACEMENTS, POLICIES

    drawn = None if failures is None else FailureOptions()  # the API scripts no schedule
    slow = None if stragglers is None else StragglerOptions(share=float(stragglers["share"]))
    reclaims = None
    if spot is not None:
        trace = spot.get("trace")
        reclaims = SpotOptions(trace=None if trace is None else [(0, 0.0, 1.0)])
    return [
        not seed_matters(POLICIES[p["name"]], PLACEMENTS[where], drawn, slow, reclaims)
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


# -- editing, variants and deleting (issue 12, points 6 and 7) -------------------------------
#
# Results are computed on a cluster's spec, so a spec that runs have used is frozen: an edit
# of it is refused (InUse, the API's 409) and saved as a new variant cluster instead
# (create_variant, parent = the original); names and descriptions stay editable. Deleting
# refuses while a queued or running experiment uses the object; a cluster or workload that
# finished experiments used is deleted only with them (``cascade``), never leaving a result
# without the cluster or trace it ran on. Deleting a run, an experiment or a workload deletes
# its stored artefacts (per-job tables, time series, stints, uploads, job tables).


class InUse(ValidationError):
    """The object is used by experiments (the API answers 409); ``experiments`` are their ids."""

    def __init__(self, message: str, experiments: Iterable[int] = ()) -> None:
        super().__init__(message, code="in_use")
        self.experiments = sorted(set(experiments))


def _named(experiments: Sequence[Experiment], limit: int = 5) -> str:
    names = [f"{e.name!r} (#{e.pk})" for e in experiments[:limit]]
    more = len(experiments) - limit
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def experiments_using(obj: Cluster | Workload) -> Any:
    """The experiments whose grid holds the cluster or workload (or whose runs use it)."""
    from django.db.models import Q

    field = "clusters" if isinstance(obj, Cluster) else "workloads"
    run_field = "runs__cluster" if isinstance(obj, Cluster) else "runs__workload"
    return (
        Experiment.objects.filter(Q(**{field: obj}) | Q(**{run_field: obj}))
        .distinct()
        .order_by("pk")
    )


def active_experiments(experiments: Any) -> Any:
    """Those of ``experiments`` (a queryset) with queued or running runs."""
    from planner.models import ACTIVE_STATES

    ids = Run.objects.filter(
        experiment__in=experiments.values("pk"), state__in=ACTIVE_STATES
    ).values("experiment_id")
    return Experiment.objects.filter(pk__in=ids).order_by("pk")


def spec_users(cluster: Cluster) -> list[Experiment]:
    """The experiments whose runs simulated (or will simulate) the cluster's spec."""
    ids = Run.objects.filter(cluster=cluster).values("experiment_id")
    return list(Experiment.objects.filter(pk__in=ids).order_by("pk"))


def check_spec_editable(cluster: Cluster, spec: Any) -> None:
    """Raise :class:`InUse` if ``spec`` differs from the cluster's and runs used the old one."""
    if spec is None or spec == cluster.spec:
        return
    users = spec_users(cluster)
    if users:
        raise InUse(
            f"the spec of cluster {cluster.name!r} is frozen: experiments {_named(users)} ran "
            "on it, and their results must keep referring to the spec they ran on. Save the "
            "edit as a new variant instead (the dashboard's 'Save as new variant', or "
            f"POST /api/v1/clusters/{cluster.pk}/clone/ with the spec); the name and "
            "description stay editable",
            [e.pk for e in users],
        )


def type_users(acc: Any) -> list[Experiment]:
    """The experiments whose runs simulated a cluster naming the owner's accelerator type
    ``acc`` (a pool names it and the spec does not define it itself: ``effective_spec``)."""
    from clustersim.catalog import normalize_name

    name = normalize_name(acc.name)
    clusters = []
    for pk, spec in (
        Cluster.objects.filter(owner_id=acc.owner_id, runs__isnull=False)
        .distinct()
        .values_list("pk", "spec")
    ):
        defined = {normalize_name(str(a.get("name", ""))) for a in spec.get("accelerators") or []}
        named = {normalize_name(str(p.get("accelerator", ""))) for p in spec.get("pools") or []}
        if name in named - defined:
            clusters.append(pk)
    ids = Run.objects.filter(cluster_id__in=clusters).values("experiment_id")
    return list(Experiment.objects.filter(pk__in=ids).order_by("pk"))


def check_type_editable(acc: Any, changes: dict[str, Any] | None) -> None:
    """Raise :class:`InUse` if ``changes`` (``None``: deleting) alter what the simulator
    reads of a type (all but ``notes``) that clusters whose specs runs used name: their
    results would silently refer to another type."""
    if changes is not None:
        changed = [k for k, v in changes.items() if k != "notes" and getattr(acc, k) != v]
        if not changed:
            return
    users = type_users(acc)
    if users:
        what = "deleted" if changes is None else "changed"
        raise InUse(
            f"accelerator type {acc.name!r} cannot be {what}: clusters naming it ran in "
            f"experiments {_named(users)}, whose results must keep referring to it. Define "
            "another type (or a price override in a variant of the cluster) instead; the "
            "notes stay editable",
            [e.pk for e in users],
        )


def update_cluster(
    cluster: Cluster,
    *,
    name: str | None = None,
    description: str | None = None,
    spec: dict[str, Any] | None = None,
) -> Cluster:
    """Edit the cluster in place: any field while no run used its spec, else only the name
    and description (:func:`check_spec_editable`). The spec is validated with the owner's
    types; saved are only the fields given (a worker may read the row meanwhile)."""
    with transaction.atomic():
        fields: dict[str, Any] = {}
        if spec is not None and spec != cluster.spec:
            check_spec_editable(cluster, spec)
            total, types = cluster_summary(spec, cluster.owner)
            fields.update(spec=spec, total_devices=total, device_types=types)
        if name is not None:
            fields["name"] = name
        if description is not None:
            fields["description"] = description
        if fields:
            for key, value in fields.items():
                setattr(cluster, key, value)
            cluster.save(update_fields=[*fields, "updated"])
    return cluster


def update_workload(
    workload: Workload, *, name: str | None = None, description: str | None = None
) -> Workload:
    """Rename the workload or edit its description; only those columns are written (the
    worker may be storing its parse result in the same row)."""
    fields = {k: v for k, v in (("name", name), ("description", description)) if v is not None}
    if fields:
        for key, value in fields.items():
            setattr(workload, key, value)
        workload.save(update_fields=[*fields, "updated"])
    return workload


def create_variant(
    cluster: Cluster, spec: dict[str, Any], name: str, description: str = ""
) -> Cluster:
    """A new cluster of the owner with ``spec`` (validated), its ``parent`` the original."""
    return create_cluster(
        cluster.owner,
        name[:200],
        spec,
        description=description,
        preset=cluster.preset,
        parent=cluster,
    )


def owner_types(owner_id: int) -> list[dict[str, Any]]:
    """The owner's accelerator types as spec entries (what a spec's pools may name)."""
    from planner.models import AcceleratorType

    return [t.to_spec() for t in AcceleratorType.objects.filter(owner_id=owner_id)]


def what_if(cluster: Cluster, op: str, params: dict[str, Any], name: str = "") -> Cluster:
    """A variant of the cluster made by one what-if operation of :mod:`clustersim.variants`
    (``add_pool``, ``replace_type``, ``scale``), named ``<name> + 64 H100-SXM5-80GB`` and
    so on unless ``name`` is given. Raises :class:`ValidationError` naming the parameter."""
    from clustersim.errors import ClustersimError
    from clustersim.variants import OPERATIONS

    if op not in OPERATIONS:
        raise ValidationError(f"op: one of {', '.join(OPERATIONS)}, not {op!r}")
    try:
        variant = OPERATIONS[op](cluster.spec, **params, extra_types=owner_types(cluster.owner_id))
    except ClustersimError as exc:
        raise ValidationError(str(exc)) from None
    return create_variant(
        cluster,
        variant.spec,
        name or variant.name(cluster.name),
        description=f"what-if of {cluster.name!r}:{variant.change}",
    )


def _run_artefacts(runs: Any) -> list[int]:
    ids: list[int] = []
    for row in runs.values_list("per_job_id", "timeseries_id", "stints_id"):
        ids += [i for i in row if i is not None]
    return ids


def _delete_artefacts(ids: Iterable[int]) -> None:
    """Delete the artefact rows (their blobs are never read: only ``pk`` is loaded)."""
    ids = list(ids)
    if ids:
        Artefact.objects.filter(pk__in=ids).only("pk").delete()


def _delete_experiment(exp: Experiment) -> None:
    artefacts = _run_artefacts(exp.runs.all())
    exp.delete()  # its runs with it
    _delete_artefacts(artefacts)


def experiment_blockers(exp: Experiment) -> str:
    """Why the experiment cannot be deleted now (``""``: it can)."""
    from planner.models import ACTIVE_STATES

    n = exp.runs.filter(state__in=ACTIVE_STATES).count()
    if not n:
        return ""
    return (
        f"experiment {exp.name!r} has {n} queued or running run{'s' if n > 1 else ''}: "
        "cancel it first (or wait for it to finish)"
    )


def delete_experiment(exp: Experiment) -> None:
    """Delete a finished experiment with its runs and their stored results (:class:`InUse`
    while runs are queued or running)."""
    with transaction.atomic():
        list(Run.objects.select_for_update().filter(experiment=exp).values_list("pk"))
        reason = experiment_blockers(exp)
        if reason:
            raise InUse(reason, [exp.pk])
        _delete_experiment(exp)


def run_blockers(run: Run) -> str:
    """Why the run cannot be deleted now (``""``: it can)."""
    from planner.models import ACTIVE_STATES

    if run.state in ACTIVE_STATES:
        return f"run #{run.pk} is {run.state}: cancel it first (or wait for it to finish)"
    if not Run.objects.filter(experiment_id=run.experiment_id).exclude(pk=run.pk).exists():
        return (
            f"run #{run.pk} is the only run of experiment #{run.experiment_id}: delete the "
            "experiment instead"
        )
    return ""


def delete_run(run: Run) -> None:
    """Delete a finished run and its stored results; the experiment counts one run less and
    its state follows the runs left (e.g. succeeded once its one failed run is gone)."""
    from django.db.models import F

    with transaction.atomic():
        row = Run.objects.select_for_update().filter(pk=run.pk).first()
        if row is None:
            return
        reason = run_blockers(row)
        if reason:
            raise InUse(reason, [row.experiment_id])
        artefacts = _run_artefacts(Run.objects.filter(pk=row.pk))
        row.delete()
        _delete_artefacts(artefacts)
        Experiment.objects.filter(pk=row.experiment_id).update(runs_total=F("runs_total") - 1)
        _restate(row.experiment_id)


def _restate(experiment_id: int) -> None:
    """The experiment's state from its runs, also when it had finished (a run deleted)."""
    from planner.models import ACTIVE_STATES

    states = set(Run.objects.filter(experiment_id=experiment_id).values_list("state", flat=True))
    if states & set(ACTIVE_STATES):
        runner.refresh_experiment(experiment_id)
        return
    final = (
        Experiment.State.FAILED
        if RunState.FAILED in states
        else Experiment.State.CANCELLED
        if RunState.CANCELLED in states
        else Experiment.State.SUCCEEDED
    )
    Experiment.objects.filter(pk=experiment_id).update(state=final)


def usage_blockers(obj: Cluster | Workload, cascade: bool = False) -> tuple[str, list[int]]:
    """Why the cluster or workload cannot be deleted (``""``: it can) and the experiments
    in the way. Active experiments always are; finished ones unless ``cascade``."""
    what = "cluster" if isinstance(obj, Cluster) else "workload"
    using = experiments_using(obj)
    active = list(active_experiments(using))
    if active:
        return (
            f"{what} {obj.name!r} is used by experiments that are queued or running: "
            f"{_named(active)}; cancel them first (or wait for them to finish)",
            [e.pk for e in active],
        )
    finished = list(using)
    if finished and not cascade:
        return (
            f"{what} {obj.name!r} has results in experiments {_named(finished)}: delete "
            f"those first, or delete the {what} together with them (cascade)",
            [e.pk for e in finished],
        )
    return "", []


def _delete_used(obj: Cluster | Workload, cascade: bool) -> list[int]:
    from django.db.models import ProtectedError

    with transaction.atomic():
        list(
            Run.objects.select_for_update()
            .filter(experiment__in=experiments_using(obj).values("pk"))
            .values_list("pk")
        )
        reason, ids = usage_blockers(obj, cascade)
        if reason:
            raise InUse(reason, ids)
        artefacts: list[int] = []
        if isinstance(obj, Workload):  # locked: a parse storing its table now waits, then
            # finds no row and rolls its table back (planner.parsing._store)
            row = (
                Workload.objects.select_for_update()
                .filter(pk=obj.pk)
                .values_list("source_id", "jobs_id")
                .first()
            )
            artefacts = [i for i in row or () if i is not None]
        deleted = []
        for exp in experiments_using(obj):
            deleted.append(exp.pk)
            _delete_experiment(exp)
        try:
            obj.delete()
        except ProtectedError:  # an experiment made meanwhile
            raise InUse(
                f"{obj.name!r} was just used by a new experiment; try again",
                [e.pk for e in experiments_using(obj)],
            ) from None
        _delete_artefacts(artefacts)
    return deleted


def delete_cluster(cluster: Cluster, *, cascade: bool = False) -> list[int]:
    """Delete the cluster (:class:`InUse` while experiments use it; with ``cascade`` the
    finished ones are deleted with it). Returns the ids of the experiments deleted."""
    return _delete_used(cluster, cascade)


def delete_workload(workload: Workload, *, cascade: bool = False) -> list[int]:
    """Delete the workload and its upload and job table (as :func:`delete_cluster`). Workloads
    derived from it keep their own job tables."""
    return _delete_used(workload, cascade)
