"""Capacity-planning studies: creating them, advancing them on the workers, their answer.

A :class:`~planner.models.Study` is a search of :mod:`clustersim.advisor` whose state lives in
the database: every candidate is a :class:`~planner.models.StudyEvaluation` row. The Celery
tasks (:mod:`planner.tasks`) only call the functions here:

``advance(study_id)``
    Rebuilds the search from the finished rows (in the order they were asked), and when no
    row is pending asks the next batch: new pending rows, one ``evaluate_candidate`` message
    each. A conditional update on ``Study.round`` makes exactly one of several racing
    advances ask a batch. The phases: ``search`` (the budget), ``sensitivity`` (one step
    more and fewer of each type around the recommendation), ``growth`` (the purchase plan,
    computed in that task, in-process), then the answer is stored and the study succeeds.
``evaluate(evaluation_id, worker)``
    Claims a pending row (or a running one whose heartbeat went stale), simulates the
    candidate with a heartbeat thread, stores the result if the claim is still its own, and
    sends ``advance``. The evaluation is a function of the problem, the workload and the
    candidate only (the simulation seeds are the problem's), so which worker ran it, and
    how often, does not change the study's results.
``sweep()``
    (the housekeeping sweeper) sends again the evaluations whose message looks lost or whose
    worker stopped beating, and ``advance`` for running studies with nothing in flight.

A worker killed mid-study loses at most the evaluations it was running; the finished rows stay
and the study goes on from them. Cancelling marks the study; pending rows are not evaluated
and running ones are not stored.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connections, transaction
from django.db.models import Q
from django.utils import timezone

from clustersim import advisor as adv
from clustersim.errors import ClustersimError, SpecError
from planner.models import Artefact, Cluster, Study, StudyEvaluation, Workload, WorkloadStatus

log = logging.getLogger(__name__)

#: Largest evaluation budget of one study, and of its batch.
MAX_BUDGET = 500
MAX_BATCH = 16

State = Study.State
Phase = Study.Phase
EState = StudyEvaluation.State


def _key(counts: Sequence[int]) -> str:
    return ",".join(str(int(c)) for c in counts)


# -- creating ----------------------------------------------------------------------------------


def _objectives(items: Iterable[Any]) -> tuple[adv.Objective, ...]:
    out = []
    for i, o in enumerate(items):
        if isinstance(o, str):
            out.append(adv.parse_objective(o, i))
        elif isinstance(o, Mapping):
            metric = adv.check_metric(str(o.get("metric", "")), f"objectives[{i}].metric")
            out.append(adv.Objective(metric, str(o.get("sense") or adv.sense(metric))))
        else:
            raise SpecError(f"objectives[{i}]", "give a metric name or {metric, sense}")
    return tuple(out)


def _constraints(items: Iterable[Any]) -> list[adv.Constraint]:
    out = []
    for i, c in enumerate(items):
        if isinstance(c, str):
            out.append(adv.parse_constraint(c, i))
        elif isinstance(c, Mapping):
            unknown = set(c) - {"metric", "op", "bound"}
            if unknown:
                raise SpecError(f"constraints[{i}]", f"unknown keys {sorted(unknown)}")
            metric = adv.check_metric(str(c.get("metric", "")), f"constraints[{i}].metric")
            bound = c.get("bound")
            if isinstance(bound, bool) or not isinstance(bound, (int, float)):
                raise SpecError(f"constraints[{i}].bound", f"must be a number, not {bound!r}")
            out.append(adv.Constraint(metric, str(c.get("op", "")), float(bound)))
        else:
            raise SpecError(
                f"constraints[{i}]", "give e.g. 'jct_p95_s<=86400' or {metric, op, bound}"
            )
    return out


_TYPE_KEYS = {f.name for f in adv.TypeRange.__dataclass_fields__.values()}


def _types(items: Iterable[Any]) -> tuple[adv.TypeRange, ...]:
    out = []
    for i, t in enumerate(items):
        if not isinstance(t, Mapping):
            raise SpecError(f"types[{i}]", "give {accelerator, max_nodes, ...}")
        unknown = set(t) - _TYPE_KEYS
        if unknown:
            raise SpecError(f"types[{i}]", f"unknown keys {sorted(unknown)}")
        if "accelerator" not in t or "max_nodes" not in t:
            raise SpecError(f"types[{i}]", "accelerator and max_nodes are required")
        out.append(adv.TypeRange(**dict(t)))
    return tuple(out)


def build_problem(
    *,
    types: Sequence[Mapping[str, Any]],
    policies: Sequence[Mapping[str, Any]],
    objectives: Sequence[Any] = ("cost_usd", "jct_p95_s"),
    constraints: Sequence[Any] = (),
    capital_budget_usd: float | None = None,
    hourly_budget_usd: float | None = None,
    base_spec: Mapping[str, Any] | None = None,
    seeds: Sequence[int] = (0,),
    load_factor: float = 1.0,
    horizon_hours: float | None = None,
    rent: bool = False,
    prefix: float = 0.25,
) -> adv.Problem:
    """A validated :class:`clustersim.advisor.Problem` from API-shaped parts.

    Raises
    ------
    ValidationError
        With ``params={"field": <the field>}`` (``types[1].max_nodes``, ``constraints[0]``,
        ``capital_budget_usd``, ...), the message the advisor's check gave.
    """
    try:
        cons = _constraints(constraints)
        extra = len(cons)
        if capital_budget_usd is not None:
            cons.append(adv.Constraint("capital_usd", "<=", float(capital_budget_usd)))
        if hourly_budget_usd is not None:
            cons.append(adv.Constraint("hourly_usd", "<=", float(hourly_budget_usd)))
        problem = adv.Problem(
            types=_types(types),
            objectives=_objectives(objectives),
            constraints=tuple(cons),
            policies=tuple(str(p["name"]) for p in policies),
            params={str(p["name"]): dict(p.get("params") or {}) for p in policies},
            seeds=tuple(int(s) for s in seeds),
            base_spec=None if base_spec is None else dict(base_spec),
            load_factor=float(load_factor),
            horizon_hours=None if horizon_hours is None else float(horizon_hours),
            rent=bool(rent),
            prefix=float(prefix),
        )
        try:
            adv.validate(problem)
        except SpecError as exc:
            # a budget's own constraint is named by the budget field
            field = exc.field or ""
            if field.startswith("constraints["):
                idx = int(field[len("constraints[") :].split("]")[0])
                if idx >= extra:
                    which = cons[idx].metric
                    field = "capital_budget_usd" if which == "capital_usd" else "hourly_budget_usd"
                    raise SpecError(field, exc.message) from None
            raise
    except SpecError as exc:
        raise ValidationError(exc.message, params={"field": exc.field or "problem"}) from None
    except (TypeError, ValueError) as exc:
        raise ValidationError(str(exc), params={"field": "problem"}) from None
    return problem


def create_study(
    owner: Any,
    *,
    name: str,
    workload: Workload,
    problem: adv.Problem,
    base_cluster: Cluster | None = None,
    growth: Sequence[float] = (),
    budget: int = 40,
    seed: int = 0,
    batch: int = 2,
    description: str = "",
) -> Study:
    """Store a study and send its first ``advance`` after commit.

    Raises
    ------
    ValidationError
        ``params={"field": ...}`` for a workload that is not ready, a budget or batch out of
        range, or a bad growth scenario.
    """
    if workload.status != WorkloadStatus.READY or workload.jobs_id is None:
        raise ValidationError(
            f"workload {workload.name!r} is {workload.status}, not ready",
            params={"field": "workload"},
        )
    if not 1 <= int(budget) <= MAX_BUDGET:
        raise ValidationError(f"must be 1..{MAX_BUDGET}", params={"field": "budget"})
    if not 1 <= int(batch) <= MAX_BATCH:
        raise ValidationError(f"must be 1..{MAX_BATCH}", params={"field": "batch"})
    factors = [float(g) for g in growth]
    if len(factors) > 40 or any(not (0 < g < 1e3) for g in factors):
        raise ValidationError("at most 40 load factors, each positive", params={"field": "growth"})
    with transaction.atomic():
        study = Study.objects.create(
            owner=owner,
            name=name,
            description=description,
            workload=workload,
            base_cluster=base_cluster,
            problem=problem.to_dict(),
            growth=factors,
            budget=int(budget),
            seed=int(seed),
            batch=int(batch),
        )
        _advance_on_commit(study.pk)
    return study


def _advance_on_commit(study_id: int) -> None:
    from planner.services import _on_commit

    _on_commit(lambda: send_advance(study_id))


def send_advance(study_id: int) -> bool:
    from planner.dispatch import _send
    from planner.tasks import advance_study

    return _send(advance_study, study_id)


def _send_evaluation(evaluation_id: int) -> bool:
    from planner.dispatch import _send
    from planner.tasks import evaluate_candidate

    StudyEvaluation.objects.filter(pk=evaluation_id).update(sent_at=timezone.now())
    return _send(evaluate_candidate, evaluation_id)


def _eager() -> bool:
    from planner.dispatch import _eager as eager

    return eager()


# -- the search's state ------------------------------------------------------------------------


def problem_of(study: Study) -> adv.Problem:
    return adv.Problem.from_dict(study.problem)


@lru_cache(maxsize=4)
def _jobs(artefact_id: int) -> Any:
    """The workload's job table (a worker evaluates many candidates of one workload)."""
    from planner.jobtable import from_parquet

    return from_parquet(Artefact.objects.get(pk=artefact_id).read())


def jobs_of(study: Study) -> Any:
    workload = study.workload
    if workload.jobs_id is None:
        raise ClustersimError(f"workload {workload.pk} has no parsed job table")
    return _jobs(workload.jobs_id)


def _finished(study: Study, kind: str) -> list[adv.Evaluation]:
    rows = study.evaluations.filter(kind=kind, state=EState.DONE).order_by("index")
    return [adv.Evaluation.from_dict(r.result) for r in rows if r.result is not None]


def search_of(study: Study) -> adv.Search:
    """The search, rebuilt from the finished rows (in asked order)."""
    search = adv.Search(problem_of(study), budget=study.budget, seed=study.seed, batch=study.batch)
    for ev in _finished(study, Phase.SEARCH):
        search.tell(ev)
    return search


def progress(study: Study) -> dict[str, Any]:
    """Counts of evaluations by state, the simulated share of the budget, the phase."""
    by = dict.fromkeys(EState.values, 0)
    for state, n in _count_states(study):
        by[state] = n
    search_done = study.evaluations.filter(kind=Phase.SEARCH, state=EState.DONE)
    simulated = sum(
        1
        for r in search_done.values_list("result", flat=True)
        if r and r.get("status") in ("full", "pruned")
    )
    return {
        "phase": study.phase,
        "evaluations": by,
        "simulated": simulated,
        "budget": study.budget,
        "fraction": 1.0 if study.state == State.SUCCEEDED else min(1.0, simulated / study.budget),
    }


def _count_states(study: Study) -> list[tuple[str, int]]:
    from django.db.models import Count

    return list(
        study.evaluations.values_list("state").annotate(n=Count("id")).values_list("state", "n")
    )


# -- advancing -----------------------------------------------------------------------------------


def advance(study_id: int) -> str:
    """Steps of the study (module docstring) until one waits for evaluations: a phase change
    goes straight on to the next phase's batch; in eager mode (tests) the evaluations ran
    inline, so it goes on until the study ends."""
    for _ in range(10_000):
        outcome, sent, moved = _advance_once(study_id)
        if not (moved or (_eager() and sent)):
            return outcome
    return "stopped"  # a bound on the loop, never reached by a finite study


def _advance_once(study_id: int) -> tuple[str, bool, bool]:
    """One step: ``(outcome, sent evaluations, moved to the next phase)``."""
    study = Study.objects.filter(pk=study_id).select_related("workload").first()
    if study is None:
        return "gone", False, False
    if study.state in (State.SUCCEEDED, State.FAILED, State.CANCELLED):
        return study.state, False, False
    if study.evaluations.filter(state__in=(EState.PENDING, EState.RUNNING)).exists():
        return "waiting", False, False
    if study.state == State.QUEUED:
        Study.objects.filter(pk=study_id, state=State.QUEUED).update(
            state=State.RUNNING, started_at=timezone.now()
        )
    try:
        todo, kind = _next(study)
    except (ClustersimError, ValueError) as exc:
        _fail(study_id, f"{type(exc).__name__}: {exc}")
        return "failed", False, False
    if todo is None:
        return study.state, False, False
    if not todo:  # the phase is over: go to the next one (the claim on round decides who)
        outcome = _next_phase(study)
        return outcome, False, outcome not in ("raced", "failed", "succeeded")
    with transaction.atomic():
        if not Study.objects.filter(pk=study_id, round=study.round, state=State.RUNNING).update(
            round=study.round + 1
        ):
            return "raced", False, False
        start = study.evaluations.count()
        rows = [
            StudyEvaluation(study=study, kind=kind, index=start + i, counts=list(c), key=_key(c))
            for i, c in enumerate(todo)
        ]
        StudyEvaluation.objects.bulk_create(rows)
        ids = list(
            study.evaluations.filter(kind=kind, key__in=[r.key for r in rows]).values_list(
                "pk", flat=True
            )
        )
    for pk in sorted(ids):
        _send_evaluation(pk)
    return f"asked {len(ids)}", True, False


def _next(study: Study) -> tuple[list[tuple[int, ...]] | None, str]:
    """The next candidates of the study's phase; ``[]`` when the phase is over."""
    if study.phase == Phase.SEARCH:
        search = search_of(study)
        # static and empty candidates settled by the sampler are stored as finished rows
        todo = search.ask()
        _store_free(study, search)
        return todo, Phase.SEARCH
    if study.phase == Phase.SENSITIVITY:
        rec = search_of(study).answer().recommendation
        if rec is None:
            return [], Phase.SENSITIVITY
        problem = problem_of(study)
        known = {e.counts for e in _finished(study, Phase.SEARCH) if e.status == "full"}
        known |= {e.counts for e in _finished(study, Phase.SENSITIVITY)}
        todo = [c for c in _neighbours(problem, rec.counts) if c not in known]
        return todo, Phase.SENSITIVITY
    if study.phase == Phase.GROWTH:
        return [], Phase.GROWTH
    return None, study.phase


def _neighbours(problem: adv.Problem, counts: Sequence[int]) -> list[tuple[int, ...]]:
    out = []
    for i, t in enumerate(problem.types):
        for delta in (t.step, -t.step):
            c = list(counts)
            c[i] += delta
            if t.min_nodes <= c[i] <= t.max_nodes:
                out.append(tuple(c))
    return out


def _store_free(study: Study, search: adv.Search) -> None:
    """Rows for what the search settled without simulating (static or empty candidates)."""
    have = set(study.evaluations.filter(kind=Phase.SEARCH).values_list("key", flat=True))
    start = study.evaluations.count()
    rows: list[StudyEvaluation] = []
    for ev in search.evaluations:
        key = _key(ev.counts)
        if key in have or ev.status not in ("static", "empty"):
            continue
        rows.append(
            StudyEvaluation(
                study=study,
                kind=Phase.SEARCH,
                index=start + len(rows),
                counts=list(ev.counts),
                key=key,
                state=EState.DONE,
                result=_json(ev.to_dict()),
            )
        )
        have.add(key)
    if rows:
        StudyEvaluation.objects.bulk_create(rows, ignore_conflicts=True)


def _next_phase(study: Study) -> str:
    order = [Phase.SEARCH, Phase.SENSITIVITY, Phase.GROWTH, Phase.DONE]
    nxt = order[order.index(Phase(study.phase)) + 1]
    if not Study.objects.filter(pk=study.pk, round=study.round, phase=study.phase).update(
        phase=nxt, round=study.round + 1
    ):
        return "raced"
    if nxt == Phase.GROWTH:
        study.refresh_from_db()
        try:
            plan = _growth(study)
        except (ClustersimError, ValueError) as exc:
            _fail(study.pk, f"growth plan: {type(exc).__name__}: {exc}")
            return "failed"
        answer_now = answer(study)
        answer_now["growth"] = plan
        Study.objects.filter(pk=study.pk, state=State.RUNNING).update(answer=_json(answer_now))
        return "growth planned"
    if nxt == Phase.DONE:
        study.refresh_from_db()
        final = answer(study)
        final["growth"] = (study.answer or {}).get("growth")
        Study.objects.filter(pk=study.pk, state=State.RUNNING).update(
            state=State.SUCCEEDED, answer=_json(final), finished_at=timezone.now()
        )
        return "succeeded"
    return f"phase {nxt}"


def _growth(study: Study) -> list[dict[str, Any]] | None:
    if not study.growth:
        return None
    problem = problem_of(study)
    rec = search_of(study).answer().recommendation
    start = None if problem.base_spec is not None or rec is None else rec.counts
    return adv.growth_plan(
        problem,
        jobs_of(study),
        study.growth,
        budget=max(4, study.budget // 4),
        seed=study.seed,
        start=start,
    )


def _fail(study_id: int, reason: str) -> None:
    Study.objects.filter(pk=study_id, state__in=(State.QUEUED, State.RUNNING)).update(
        state=State.FAILED, error=reason[:2000], finished_at=timezone.now()
    )


def _json(data: Any) -> Any:
    """JSON-safe (infinities and NaN become null)."""
    import math

    def clean(x: Any) -> Any:
        if isinstance(x, float):
            return x if math.isfinite(x) else None
        if isinstance(x, dict):
            return {str(k): clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x

    return json.loads(json.dumps(clean(data), allow_nan=False))


# -- evaluating ----------------------------------------------------------------------------------


def _stale_before() -> Any:
    return timezone.now() - timedelta(seconds=settings.CLUSTERSIM_STALE_AFTER_S)


class _Beat:
    """A thread that writes the row's heartbeat while it is ours (the run Heartbeat's way)."""

    def __init__(self, pk: int, attempt: int) -> None:
        self.pk, self.attempt = pk, attempt
        self.every = max(float(settings.CLUSTERSIM_HEARTBEAT_S), 0.2)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self.every):
                StudyEvaluation.objects.filter(
                    pk=self.pk, state=EState.RUNNING, attempts=self.attempt
                ).update(heartbeat=timezone.now())
        except Exception:  # the sweeper sends it again if beats stop for good
            log.exception("evaluation %s: heartbeat write failed", self.pk)
        finally:
            connections.close_all()

    def __enter__(self) -> _Beat:
        if settings.CLUSTERSIM_HEARTBEAT_THREAD:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)


def evaluate(evaluation_id: int, worker: str) -> str:
    """Claim, simulate and store one candidate (module docstring)."""
    from django.db.models import F

    row = StudyEvaluation.objects.filter(pk=evaluation_id).select_related("study").first()
    if row is None:
        return "gone"
    study = row.study
    if study.state not in (State.QUEUED, State.RUNNING):
        return f"study {study.state}"
    claimable = Q(state=EState.PENDING) | Q(state=EState.RUNNING, heartbeat__lt=_stale_before())
    attempt = row.attempts + 1
    if not StudyEvaluation.objects.filter(claimable, pk=row.pk, attempts=row.attempts).update(
        state=EState.RUNNING,
        attempts=F("attempts") + 1,
        worker=worker[:255],
        heartbeat=timezone.now(),
    ):
        return "not claimable"
    problem = problem_of(study)
    counts = tuple(int(c) for c in row.counts)
    try:
        with _Beat(row.pk, attempt):
            jobs = jobs_of(study)
            t0 = time.perf_counter()
            if row.kind == Phase.SEARCH:
                ev = adv.evaluate_halving(problem, jobs, counts)
            else:
                ev = adv.evaluate(problem, jobs, counts, with_why=False)
            log.info("study %s: %s in %.1f s", study.pk, row.key, time.perf_counter() - t0)
    except (ClustersimError, ValueError) as exc:
        StudyEvaluation.objects.filter(pk=row.pk, state=EState.RUNNING, attempts=attempt).update(
            state=EState.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000]
        )
        _fail(study.pk, f"candidate {row.key}: {type(exc).__name__}: {exc}")
        return "failed"
    stored = StudyEvaluation.objects.filter(
        pk=row.pk, state=EState.RUNNING, attempts=attempt
    ).update(state=EState.DONE, result=_json(ev.to_dict()), heartbeat=timezone.now())
    if stored and not _eager():
        send_advance(study.pk)
    return "stored" if stored else "lost its claim"


# -- the sweeper, cancelling ---------------------------------------------------------------------


def sweep() -> dict[str, list[int]]:
    """Send again evaluations that look lost, and ``advance`` for idle running studies."""
    stale = _stale_before()
    resend = list(
        StudyEvaluation.objects.filter(study__state__in=(State.QUEUED, State.RUNNING))
        .filter(
            (Q(state=EState.PENDING) & (Q(sent_at__isnull=True) | Q(sent_at__lt=stale)))
            | Q(state=EState.RUNNING, heartbeat__lt=stale)
        )
        .values_list("pk", flat=True)
    )
    for pk in resend:
        _send_evaluation(pk)
    idle = list(
        Study.objects.filter(state__in=(State.QUEUED, State.RUNNING), updated__lt=stale)
        .exclude(evaluations__state__in=(EState.PENDING, EState.RUNNING))
        .values_list("pk", flat=True)
    )
    for pk in idle:
        send_advance(pk)
    return {"evaluations_resent": resend, "studies_advanced": idle}


def cancel(study: Study) -> bool:
    """Stop a queued or running study (finished evaluations stay)."""
    return bool(
        Study.objects.filter(pk=study.pk, state__in=(State.QUEUED, State.RUNNING)).update(
            state=State.CANCELLED, finished_at=timezone.now()
        )
    )


def resume(study: Study) -> bool:
    """Go on with a cancelled or failed study from its finished evaluations."""
    with transaction.atomic():
        ok = Study.objects.filter(pk=study.pk, state__in=(State.CANCELLED, State.FAILED)).update(
            state=State.RUNNING, error="", finished_at=None
        )
        if ok:
            study.evaluations.filter(state__in=(EState.RUNNING, EState.FAILED)).update(
                state=EState.PENDING, sent_at=None
            )
            study.evaluations.filter(state=EState.PENDING).update(sent_at=None)
            _on_commit_resend(study.pk)
    return bool(ok)


def _on_commit_resend(study_id: int) -> None:
    from planner.services import _on_commit

    def go() -> None:
        pending = list(
            StudyEvaluation.objects.filter(study_id=study_id, state=EState.PENDING).values_list(
                "pk", flat=True
            )
        )
        for pk in pending:
            _send_evaluation(pk)
        if not pending or _eager():
            send_advance(study_id)

    _on_commit(go)


# -- the answer ----------------------------------------------------------------------------------


def answer(study: Study) -> dict[str, Any]:
    """The study's answer from its rows: :meth:`clustersim.advisor.Answer.to_dict` plus the
    sensitivity rows, the problem's names, and the recommendation's inventory."""
    problem = problem_of(study)
    search = search_of(study)
    ans = search.answer()
    out = ans.to_dict(problem)
    out["objectives"] = [{"metric": o.metric, "sense": o.sense} for o in problem.objectives]
    out["constraints"] = [str(c) for c in problem.constraints]
    out["simulated"] = search.simulated
    rows: list[dict[str, Any]] = []
    if ans.recommendation is not None:
        known = {e.counts: e for e in ans.evaluations}
        known.update({e.counts: e for e in _finished(study, Phase.SENSITIVITY)})
        have = all(c in known for c in _neighbours(problem, ans.recommendation.counts))
        if have:
            rows = adv.sensitivity(problem, jobs_of(study), ans.recommendation, known=known)
        out["inventory"] = [
            {"accelerator": t.accelerator, "nodes": n, "devices": n * t.devices_per_node}
            for t, n in zip(problem.types, ans.recommendation.counts, strict=True)
        ]
    out["sensitivity"] = rows
    return _json(out)


def apply(study: Study) -> tuple[Cluster, Any]:
    """The recommendation as a cluster, and an experiment comparing it with the base cluster
    under every policy of the study (one click on the study page).

    Raises
    ------
    ValidationError
        ``params={"field": "study"}`` when the study has no recommendation (yet).
    """
    from planner import services

    if (
        study.state != State.SUCCEEDED
        or not study.answer
        or study.answer.get("recommendation") is None
    ):
        raise ValidationError(
            "the study has no recommendation (it has not succeeded, or nothing met the "
            "constraints)",
            params={"field": "study"},
        )
    problem = problem_of(study)
    rec = study.answer["evaluations"][study.answer["recommendation"]]
    spec = adv.candidate_spec(problem, rec["counts"])
    with transaction.atomic():
        name = _free_name(study.owner, f"{study.name}: recommended")
        cluster = services.create_cluster(study.owner, name, spec)
        clusters = [cluster] + ([study.base_cluster] if study.base_cluster is not None else [])
        experiment = services.create_experiment(
            study.owner,
            name=f"{study.name}: recommended vs base"[:200],
            clusters=clusters,
            workloads=[study.workload],
            policies=[
                {"name": p, "params": dict(problem.params.get(p, {}))} for p in problem.policies
            ],
            load_factors=[problem.load_factor],
            seeds=list(problem.seeds),
            cost_horizon_hours=problem.horizon_hours,
            description=f"made from study {study.pk} ({study.name})",
        )
        Study.objects.filter(pk=study.pk).update(cluster=cluster, experiment=experiment)
    return cluster, experiment


def _free_name(owner: Any, base: str) -> str:
    name = base[:190]
    k = 2
    while Cluster.objects.filter(owner=owner, name=name).exists():
        name = f"{base[:186]} ({k})"
        k += 1
    return name
