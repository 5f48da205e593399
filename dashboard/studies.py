"""Pages of capacity-planning studies (:mod:`planner.studies`): the form, the study page with
its progress, front chart, recommendation, sensitivity, "why" and growth tables, and the
one-click "make it a cluster and an experiment"."""

from __future__ import annotations

from typing import Any

import pandas as pd
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from clustersim import advisor as adv
from clustersim.errors import SpecError
from dashboard.access import chart_access
from dashboard.plotting import Chart, empty
from planner import studies
from planner.models import Cluster, Study, Workload, WorkloadStatus


class StudyForm(forms.Form):
    """The API's study in text fields (the CLI's syntax for types, objectives, constraints)."""

    name = forms.CharField(max_length=200)
    workload = forms.ModelChoiceField(queryset=Workload.objects.none())
    base_cluster = forms.ModelChoiceField(
        queryset=Cluster.objects.none(),
        required=False,
        help_text="Pools every candidate keeps; empty: a green field.",
    )
    policies = forms.CharField(
        initial="fifo",
        help_text="Comma-separated policy names; a candidate must meet the constraints under "
        "each (the worst of them counts).",
    )
    types = forms.CharField(
        initial="v100:0-4,k80:0-4",
        help_text="Decision space in nodes: type:min-max[:step][@devices_per_node], e.g. "
        "h100:0-4,a100:0-8,l4:0-16:2@4 (prices from the catalog).",
    )
    objectives = forms.CharField(
        initial="cost_usd, jct_p95_s",
        help_text="Metrics to optimise, the first decides the recommendation; min:/max: to "
        "override a metric's natural direction.",
    )
    constraints = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One per line, e.g. jct_p95_s<=86400 or carbon_kg<=5000.",
    )
    capital_budget_usd = forms.FloatField(required=False, min_value=0)
    hourly_budget_usd = forms.FloatField(required=False, min_value=0)
    rent = forms.BooleanField(required=False, help_text="Rent the added devices by the hour.")
    load_factor = forms.FloatField(initial=1.0, min_value=0.001, max_value=1000)
    growth = forms.CharField(
        required=False,
        help_text="Growth scenario for a purchase plan: 1.3x4 (+30 % per step, four steps) or "
        "load factors 1.2,1.5,2.",
    )
    budget = forms.IntegerField(
        initial=40, min_value=1, max_value=studies.MAX_BUDGET, help_text="Evaluations."
    )
    seeds = forms.CharField(initial="0", help_text="Simulation seeds (metrics averaged).")
    seed = forms.IntegerField(initial=0, min_value=0, help_text="Seed of the search.")

    def __init__(self, *args: Any, owner: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["workload"].queryset = Workload.objects.owned_by(owner).filter(  # type: ignore[attr-defined]
            status=WorkloadStatus.READY
        )
        self.fields["base_cluster"].queryset = Cluster.objects.owned_by(owner)  # type: ignore[attr-defined]

    def problem(self) -> tuple[adv.Problem, list[float]]:
        """The validated problem and growth factors; errors land on the form's fields."""
        d = self.cleaned_data
        try:
            types = [
                {k: v for k, v in vars(t).items() if v is not None}
                for t in adv.parse_types(d["types"])
            ]
            objectives = [o.strip() for o in d["objectives"].split(",") if o.strip()]
            constraints = [c.strip() for c in d["constraints"].splitlines() if c.strip()]
            growth = list(adv.growth_factors(d["growth"])) if d["growth"].strip() else []
            try:
                seeds = [int(s) for s in d["seeds"].split(",")]
            except ValueError:
                raise SpecError("seeds", "comma-separated integers") from None
        except SpecError as exc:
            raise ValidationError(exc.message, params={"field": exc.field}) from None
        base = d.get("base_cluster")
        problem = studies.build_problem(
            types=types,
            policies=[{"name": p.strip()} for p in d["policies"].split(",") if p.strip()],
            objectives=objectives or ("cost_usd", "jct_p95_s"),
            constraints=constraints,
            capital_budget_usd=d.get("capital_budget_usd"),
            hourly_budget_usd=d.get("hourly_budget_usd"),
            base_spec=None if base is None else base.effective_spec(),
            seeds=seeds,
            load_factor=d["load_factor"],
            rent=d["rent"],
        )
        return problem, growth

    def add_service_error(self, exc: ValidationError) -> None:
        """The field the service named (``types[1].max_nodes`` lands on ``types``)."""
        field = (getattr(exc, "params", None) or {}).get("field", "")
        head = field.split("[")[0].split(".")[0]
        head = {"capital_usd": "capital_budget_usd", "policies": "policies"}.get(head, head)
        if head not in self.fields:
            head = None
        label = f"{field}: " if field and field != head else ""
        for m in exc.messages:
            self.add_error(head, f"{label}{m}")


@login_required
def study_create(request: HttpRequest) -> HttpResponse:
    form = StudyForm(request.POST or None, owner=request.user)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            problem, growth = form.problem()
            study = studies.create_study(
                request.user,
                name=d["name"],
                workload=d["workload"],
                base_cluster=d.get("base_cluster"),
                problem=problem,
                growth=growth,
                budget=d["budget"],
                seed=d["seed"],
            )
        except ValidationError as exc:
            form.add_service_error(exc)
        else:
            return redirect("dashboard:study", pk=study.pk)
    return render(request, "dashboard/study_form.html", {"form": form})


def _study(request: HttpRequest, pk: int) -> Study:
    return get_object_or_404(Study.objects.owned_by(request.user), pk=pk)


def _context(study: Study) -> dict[str, Any]:
    problem = studies.problem_of(study)
    answer = study.answer if study.state == Study.State.SUCCEEDED else None
    rec = None
    if answer and answer.get("recommendation") is not None:
        rec = answer["evaluations"][answer["recommendation"]]
    names = [t.accelerator for t in problem.types]
    metrics = [o.metric for o in problem.objectives] + [
        c.metric
        for c in problem.constraints
        if c.metric not in {o.metric for o in problem.objectives}
    ]
    rows = []
    for i in (answer or {}).get("front", []):
        e = answer["evaluations"][i]  # type: ignore[index]
        rows.append(
            {
                "counts": list(zip(names, e["counts"], strict=True)),
                "values": [e["metrics"].get(m) for m in metrics],
                "recommended": i == answer.get("recommendation"),  # type: ignore[union-attr]
            }
        )
    closest = []
    for i in (answer or {}).get("closest", []):
        e = answer["evaluations"][i]  # type: ignore[index]
        closest.append(
            {
                "counts": list(zip(names, e["counts"], strict=True)),
                "values": [e["metrics"].get(m) for m in metrics],
                "margins": e["margins"],
            }
        )
    sens = [
        {**r, "changes": [r.get(f"{m}_change") for m in metrics]}
        for r in (answer or {}).get("sensitivity", [])
    ]
    return {
        "s": study,
        "problem": problem,
        "names": names,
        "metrics": metrics,
        "progress": studies.progress(study),
        "active": study.state in (Study.State.QUEUED, Study.State.RUNNING),
        "answer": answer,
        "rec": rec,
        "rec_counts": list(zip(names, rec["counts"], strict=True)) if rec else [],
        "front_rows": rows,
        "closest": closest,
        "sensitivity": sens,
        "growth": (answer or {}).get("growth") or [],
    }


@login_required
def study_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "dashboard/study_detail.html", _context(_study(request, pk)))


@login_required
def study_progress(request: HttpRequest, pk: int) -> HttpResponse:
    ctx = _context(_study(request, pk))
    response = render(request, "dashboard/_study_progress.html", ctx)
    response["X-Poll-Done"] = "0" if ctx["active"] else "1"
    return response


@login_required
@require_POST
def study_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(request, pk)
    if studies.cancel(study):
        messages.info(request, "Cancelled; finished evaluations are kept (resume goes on).")
    return redirect("dashboard:study", pk=study.pk)


@login_required
@require_POST
def study_resume(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(request, pk)
    if not studies.resume(study):
        messages.error(request, f"A {study.state} study cannot be resumed.")
    return redirect("dashboard:study", pk=study.pk)


@login_required
@require_POST
def study_apply(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(request, pk)
    try:
        _, experiment = studies.apply(study)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("dashboard:study", pk=study.pk)
    messages.info(request, "Made the recommended cluster and an experiment comparing it.")
    return redirect("dashboard:experiment", pk=experiment.pk)


@require_GET
@chart_access
def study_chart(request: HttpRequest, pk: int, name: str) -> HttpResponse:
    """``front``: every evaluated candidate on the first two objectives, the front joined,
    the recommendation marked (a study with one objective plots it against devices)."""
    from django.http import Http404

    from dashboard.charts import respond

    study = _study(request, pk)
    if name != "front":
        raise Http404(f"no chart {name!r}")
    version = f"{study.state}:{study.updated.isoformat()}"
    return respond(
        request, lambda: front_chart(study), kind="study", pk=pk, name=name, version=version
    )


def front_chart(study: Study) -> Chart:
    problem = studies.problem_of(study)
    answer = study.answer if study.state == Study.State.SUCCEEDED else studies.answer(study)
    evs = answer["evaluations"]
    if not evs:
        return empty("Candidates", "No candidate evaluated yet: the chart fills as they finish.")
    x_metric = problem.objectives[0].metric
    y_metric = problem.objectives[1].metric if len(problem.objectives) > 1 else "devices"
    names = [t.accelerator for t in problem.types]
    rows = []
    for i, e in enumerate(evs):
        label = ", ".join(f"{n} x{c}" for n, c in zip(names, e["counts"], strict=True))
        rows.append(
            {
                "candidate": label,
                "status": e["status"],
                "feasible": e["feasible"],
                x_metric: e["metrics"].get(x_metric),
                y_metric: e["metrics"].get(y_metric),
                "front": i in answer["front"],
                "recommended": i == answer.get("recommendation"),
            }
        )
    frame = pd.DataFrame(rows)
    traces = []
    groups = [
        ("feasible", frame["feasible"], "circle", "#2a9d8f"),
        ("infeasible", ~frame["feasible"] & (frame["status"] == "full"), "x", "#e76f51"),
        ("stopped early (prefix)", frame["status"] == "pruned", "triangle-down", "#999999"),
    ]
    for label, mask, symbol, colour in groups:
        sub = frame[mask & frame[x_metric].notna() & frame[y_metric].notna()]
        if sub.empty:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": label,
                "x": sub[x_metric].tolist(),
                "y": sub[y_metric].tolist(),
                "text": sub["candidate"].tolist(),
                "marker": {"symbol": symbol, "color": colour, "size": 9},
                "hovertemplate": "%{text}<br>%{x:.4g}, %{y:.4g}<extra>" + label + "</extra>",
            }
        )
    front = frame[frame["front"]].sort_values(x_metric)
    if not front.empty:
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "Pareto front",
                "x": front[x_metric].tolist(),
                "y": front[y_metric].tolist(),
                "line": {"color": "#264653", "dash": "dot"},
                "hoverinfo": "skip",
            }
        )
    rec = frame[frame["recommended"]]
    if not rec.empty:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "recommended",
                "x": rec[x_metric].tolist(),
                "y": rec[y_metric].tolist(),
                "text": rec["candidate"].tolist(),
                "marker": {"symbol": "star", "color": "#f4a261", "size": 18},
                "hovertemplate": "%{text}<extra>recommended</extra>",
            }
        )
    figure = {
        "data": traces,
        "layout": {
            "xaxis": {"title": {"text": x_metric}},
            "yaxis": {"title": {"text": y_metric}},
            "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        },
    }
    note = f"{len(evs)} candidates, {answer.get('simulated', 0)} simulated"
    return Chart(title="Candidates and the Pareto front", figure=figure, data=frame, note=note)
