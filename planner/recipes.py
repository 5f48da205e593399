"""Workloads that are made rather than uploaded: synthetic ones and ones derived from another.

A recipe is plain JSON stored on the :class:`~planner.models.Workload` row; the worker turns
it into a job table (:func:`build`) exactly as it parses an upload, with a report that says
what was drawn or changed. :func:`validate_synthetic` and :func:`validate_derive` check a
recipe in the web request (cheap, no job table is touched) and raise ``ValidationError``
naming the field, so a bad recipe is refused before anything is stored.

Synthetic (``clustersim.synth``)::

    {"model": "gavel" | "gavel-single" | "fit", "fit_workload": <id, with "fit">,
     "duration_model": "lognormal" | "empirical", "job_types": true,
     "jobs": 2000, "duration_s": null, "arrival": "poisson" | "diurnal" | null,
     "rate_per_hour": null, "amplitude": 0.5, "peak_hour": 14, "start_hour": 0, "seed": 0}

Derived (``clustersim.transform``), applied in order to the parent's job table::

    {"parent": <workload id>, "steps": [
        {"op": "window", "start_s": 0, "end_s": 86400},
        {"op": "sample", "fraction": 0.5, "seed": 0}   (or "n": 1000),
        {"op": "scale", "factor": 1.5},
        {"op": "cap", "cluster": <cluster id>, "mode": "cap" | "drop"},
        {"op": "rebase", "start": "2023-06-01T00:00:00Z", "keep": "time_of_day"}]}

A rebased workload's ``t = 0`` is its new calendar time; runs on it take the carbon
intensity of those hours (``report["carbon_start"]``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from django.core.exceptions import ValidationError

MODELS = ("gavel", "gavel-single", "fit")
ARRIVALS = ("poisson", "diurnal")
DURATION_MODELS = ("lognormal", "empirical")
OPS = ("window", "sample", "scale", "cap", "rebase")
MAX_STEPS = 20


# -- validation (web request) --------------------------------------------------------------------


def _number(
    obj: dict[str, Any], key: str, where: str, *, positive: bool = False, lo: float | None = None
) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(f"{where}{key}: a number, not {value!r}")
    if positive and value <= 0:
        raise ValidationError(f"{where}{key}: must be positive, not {value!r}")
    if lo is not None and value < lo:
        raise ValidationError(f"{where}{key}: must be at least {lo:g}, not {value!r}")
    return float(value)


def _integer(obj: dict[str, Any], key: str, where: str, lo: int, hi: int) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValidationError(f"{where}{key}: an integer in {lo:,}..{hi:,}, not {value!r}")
    return int(value)


def _choice(obj: dict[str, Any], key: str, where: str, choices: tuple[str, ...]) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if value not in choices:
        raise ValidationError(f"{where}{key}: one of {', '.join(choices)}, not {value!r}")
    return str(value)


def _known(obj: dict[str, Any], where: str, allowed: set[str]) -> None:
    extra = sorted(set(obj) - allowed)
    if extra:
        known = ", ".join(sorted(allowed))
        raise ValidationError(f"{where}{extra[0]}: unknown field (known: {known})")


SYNTHETIC_FIELDS = {
    "model",
    "fit_workload",
    "duration_model",
    "job_types",
    "jobs",
    "duration_s",
    "arrival",
    "rate_per_hour",
    "amplitude",
    "peak_hour",
    "start_hour",
    "seed",
}


def validate_synthetic(recipe: Any, owner: Any) -> dict[str, Any]:
    """The recipe, normalised; ``ValidationError`` naming the field if it is not valid."""
    from clustersim.synth import MAX_JOBS
    from planner.models import Workload, WorkloadStatus

    if not isinstance(recipe, dict):
        raise ValidationError("recipe: an object")
    where = "recipe."
    _known(recipe, where, SYNTHETIC_FIELDS)
    out: dict[str, Any] = {"model": _choice(recipe, "model", where, MODELS) or "gavel"}
    out["jobs"] = _integer(recipe, "jobs", where, 1, MAX_JOBS)
    out["duration_s"] = _number(recipe, "duration_s", where, positive=True)
    if out["jobs"] is None and out["duration_s"] is None:
        raise ValidationError(f"{where}jobs: give jobs or duration_s (or both)")
    out["arrival"] = _choice(recipe, "arrival", where, ARRIVALS)
    out["rate_per_hour"] = _number(recipe, "rate_per_hour", where, positive=True)
    amplitude = _number(recipe, "amplitude", where, lo=0.0)
    if amplitude is not None and amplitude > 1:
        raise ValidationError(f"{where}amplitude: between 0 and 1, not {amplitude!r}")
    out["amplitude"] = 0.5 if amplitude is None else amplitude
    for key, default in (("peak_hour", 14.0), ("start_hour", 0.0)):
        value = _number(recipe, key, where, lo=0.0)
        if value is not None and value >= 24:
            raise ValidationError(f"{where}{key}: an hour of day in [0, 24), not {value!r}")
        out[key] = default if value is None else value
    out["seed"] = _integer(recipe, "seed", where, 0, 2**32 - 1) or 0
    out["duration_model"] = _choice(recipe, "duration_model", where, DURATION_MODELS) or "lognormal"
    job_types = recipe.get("job_types", True)
    if not isinstance(job_types, bool):
        raise ValidationError(f"{where}job_types: true or false, not {job_types!r}")
    out["job_types"] = job_types
    fit = recipe.get("fit_workload")
    if out["model"] == "fit":
        if fit is None:
            raise ValidationError(f"{where}fit_workload: the workload to fit (model 'fit')")
        ready = Workload.objects.owned_by(owner).filter(status=WorkloadStatus.READY)
        ok = isinstance(fit, int) and not isinstance(fit, bool) and ready.filter(pk=fit).exists()
        if not ok:
            raise ValidationError(f"{where}fit_workload: no ready workload {fit!r} of yours")
        out["fit_workload"] = int(fit)
    elif fit is not None:
        raise ValidationError(f"{where}fit_workload: only with model 'fit'")
    return out


def validate_derive(steps: Any, owner: Any) -> list[dict[str, Any]]:
    """The steps, normalised; ``ValidationError`` naming ``steps[i].field`` if not valid."""
    from clustersim.errors import ClustersimError
    from clustersim.transform import parse_time
    from planner.models import Cluster

    if not isinstance(steps, list) or not steps:
        raise ValidationError("steps: a non-empty list of steps")
    if len(steps) > MAX_STEPS:
        raise ValidationError(f"steps: at most {MAX_STEPS} steps")
    out = []
    for i, step in enumerate(steps):
        where = f"steps[{i}]."
        if not isinstance(step, dict):
            raise ValidationError(f"steps[{i}]: an object with an 'op'")
        op = _choice(step, "op", where, OPS)
        if op is None:
            raise ValidationError(f"{where}op: one of {', '.join(OPS)}")
        clean: dict[str, Any] = {"op": op}
        if op == "window":
            _known(step, where, {"op", "start_s", "end_s"})
            clean["start_s"] = _number(step, "start_s", where, lo=0.0)
            clean["end_s"] = _number(step, "end_s", where, positive=True)
            if clean["start_s"] is None and clean["end_s"] is None:
                raise ValidationError(f"{where}start_s: give start_s or end_s (or both)")
            if (
                clean["start_s"] is not None
                and clean["end_s"] is not None
                and clean["end_s"] <= clean["start_s"]
            ):
                raise ValidationError(f"{where}end_s: must be after start_s")
        elif op == "sample":
            _known(step, where, {"op", "fraction", "n", "seed"})
            fraction = _number(step, "fraction", where, positive=True)
            if fraction is not None and fraction > 1:
                raise ValidationError(f"{where}fraction: in (0, 1], not {fraction!r}")
            n = _integer(step, "n", where, 1, 10_000_000)
            if (fraction is None) == (n is None):
                raise ValidationError(f"{where}fraction: give fraction or n (one of them)")
            seed = _integer(step, "seed", where, 0, 2**32 - 1) or 0
            clean.update(fraction=fraction, n=n, seed=seed)
        elif op == "scale":
            _known(step, where, {"op", "factor"})
            factor = _number(step, "factor", where, positive=True)
            if factor is None:
                raise ValidationError(f"{where}factor: the load factor, e.g. 1.5")
            clean["factor"] = factor
        elif op == "cap":
            _known(step, where, {"op", "cluster", "mode"})
            cid = step.get("cluster")
            ok = isinstance(cid, int) and not isinstance(cid, bool)
            if not ok or not Cluster.objects.owned_by(owner).filter(pk=cid).exists():
                raise ValidationError(f"{where}cluster: no cluster {cid!r} of yours")
            clean["cluster"] = cid
            clean["mode"] = _choice(step, "mode", where, ("cap", "drop")) or "cap"
        else:  # rebase
            _known(step, where, {"op", "start", "keep"})
            start = step.get("start")
            if not isinstance(start, str):
                raise ValidationError(f"{where}start: an ISO 8601 time, e.g. 2023-06-01T00:00:00Z")
            try:
                parse_time(start, "start")
            except ClustersimError as exc:
                raise ValidationError(f"{where}start: {exc}") from None
            clean["start"] = start
            clean["keep"] = (
                _choice(step, "keep", where, ("time_of_day", "weekday", "none")) or "time_of_day"
            )
        out.append(clean)
    return out


# -- building (worker) ---------------------------------------------------------------------------


def _jobs_of(workload: Any) -> Any:
    from clustersim.errors import ClustersimError
    from planner.jobtable import from_parquet
    from planner.models import Artefact, WorkloadStatus

    if workload is None or workload.status != WorkloadStatus.READY or workload.jobs_id is None:
        raise ClustersimError("the source workload is gone or not ready")
    return from_parquet(Artefact.objects.get(pk=workload.jobs_id).read())


def build(workload: Any) -> tuple[Any, dict[str, Any]]:
    """The job table and report of a synthetic or derived workload (raises ClustersimError)."""
    from clustersim.errors import ClustersimError

    recipe = workload.recipe or {}
    if workload.origin == "synthetic":
        return _synthetic(recipe, workload.owner)
    if workload.origin == "derived":
        return _derived(recipe, workload)
    raise ClustersimError(f"workload {workload.pk} has no recipe to build")


def _synthetic(recipe: dict[str, Any], owner: Any) -> tuple[Any, dict[str, Any]]:
    from clustersim.synth import ArrivalProcess, fit_workload, gavel_model, generate_with_notes
    from planner.models import Workload

    assumptions: list[str] = []
    if recipe["model"] == "fit":
        source = Workload.objects.owned_by(owner).filter(pk=recipe["fit_workload"]).first()
        trace = _jobs_of(source)
        model = fit_workload(
            trace,
            duration=recipe["duration_model"],
            start_time=(source.report or {}).get("start_time") if source else None,
            diurnal=recipe["arrival"] == "diurnal",
            job_types=recipe["job_types"],
            name=f"fitted to {source.name if source else '?'}",
        )
    else:
        model = gavel_model(multi_gpu=recipe["model"] == "gavel")
        if not recipe["job_types"]:
            model = dataclasses.replace(model, job_types=None)
    arrival = model.arrival
    rate = recipe["rate_per_hour"] or arrival.rate_per_hour
    kind = recipe["arrival"] or arrival.kind
    if kind == "poisson":
        arrival = ArrivalProcess.poisson(rate)
    elif arrival.kind == "diurnal":  # the profile fitted to the source, at the chosen rate
        arrival = dataclasses.replace(arrival, rate_per_hour=rate)
    else:
        arrival = ArrivalProcess(
            kind="diurnal",
            rate_per_hour=rate,
            amplitude=recipe["amplitude"],
            peak_hour=recipe["peak_hour"],
            start_hour=recipe["start_hour"],
        )
    jobs, notes = generate_with_notes(
        model,
        n_jobs=recipe["jobs"],
        duration_s=recipe["duration_s"],
        seed=recipe["seed"],
        arrival=arrival,
    )
    assumptions.extend(model.describe())
    span = float(jobs.submit_time[-1] - jobs.submit_time[0]) if len(jobs) else 0.0
    report = _report("synthetic", len(jobs), len(jobs), notes + assumptions, span, None)
    return jobs, report


def _derived(recipe: dict[str, Any], workload: Any) -> tuple[Any, dict[str, Any]]:
    from clustersim import transform
    from clustersim.errors import ClustersimError
    from clustersim.spec import cluster_from_spec
    from planner.models import Cluster

    parent = workload.parent
    jobs = _jobs_of(parent)
    report_in = (parent.report or {}) if parent else {}
    start = report_in.get("start_time")
    carbon_start = report_in.get("carbon_start")
    n_in = len(jobs)
    notes = [f"derived from workload {parent.pk} ({parent.name!r}, {n_in:,} jobs)"]
    drops: dict[str, int] = {}  # counted drop reasons (jobs, not lines: they have none here)
    for i, step in enumerate(recipe.get("steps", [])):
        op = step["op"]
        try:
            if op == "window":
                t = transform.time_window(jobs, step["start_s"], step["end_s"], start_time=start)
            elif op == "sample":
                t = transform.sample(
                    jobs, step["fraction"], step["n"], step["seed"], start_time=start
                )
            elif op == "scale":
                t = transform.scale_load(jobs, step["factor"], start_time=start)
            elif op == "cap":
                owned = Cluster.objects.owned_by(workload.owner).filter(pk=step["cluster"]).first()
                if owned is None:
                    raise ClustersimError(f"cluster {step['cluster']} is gone")
                cluster = cluster_from_spec(owned.effective_spec())
                t = transform.cap_demand(jobs, cluster, step["mode"], start_time=start)
                # and the jobs whose CPU or memory no node of it holds (docs/resources.md)
                aux = transform.drop_aux_misfits(t.jobs, cluster, start_time=t.start_time)
                if len(aux.jobs) < len(t.jobs):
                    reason = transform.AUX_MISFIT_REASON
                    drops[reason] = drops.get(reason, 0) + len(t.jobs) - len(aux.jobs)
                t = transform.Transformed(aux.jobs, [*t.notes, *aux.notes], aux.start_time)
            else:
                t = transform.rebase_time(jobs, step["start"], start_time=start, keep=step["keep"])
                carbon_start = t.start_time
        except ClustersimError as exc:
            raise ClustersimError(f"steps[{i}] ({op}): {exc}") from None
        jobs, start = t.jobs, t.start_time
        notes.extend(f"steps[{i}] {op}: {n}" for n in t.notes)
    span = float(jobs.submit_time[-1] - jobs.submit_time[0]) if len(jobs) else 0.0
    report = _report("derived", n_in, len(jobs), notes, span, start)
    report["drop_reasons"] = {k: {"count": n, "first_lines": []} for k, n in drops.items()}
    if carbon_start:
        report["carbon_start"] = carbon_start
        report["assumptions"].append(
            f"runs on this workload take the carbon intensity from {carbon_start} on"
        )
    return jobs, report


def _report(
    fmt: str, read: int, kept: int, notes: list[str], span: float, start: str | None
) -> dict[str, Any]:
    """A report with the keys of an upload's parse report (the pages show both alike)."""
    return {
        "format": fmt,
        "path": "",
        "jobs_read": int(read),
        "jobs_kept": int(kept),
        "jobs_dropped": int(read - kept),
        "drop_reasons": {},
        "warnings": [],
        "assumptions": list(notes),
        "time_span_s": float(span),
        "start_time": start,
    }
