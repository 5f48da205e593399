"""Forms of the dashboard; they validate through the same services the API uses."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from planner import services
from planner.models import COMPAT_CHOICES, Cluster, Workload, WorkloadStatus


def _numbers(text: str, kind: type, what: str) -> list[Any]:
    try:
        values = [kind(x) for x in text.replace(";", ",").split(",") if x.strip()]
    except ValueError:
        raise ValidationError(f"{what}: comma-separated numbers, e.g. 1, 1.5, 2") from None
    if not values:
        raise ValidationError(f"{what}: give at least one")
    return values


class UploadForm(forms.Form):
    file = forms.FileField(help_text="Plain or gzip-compressed trace file.")
    name = forms.CharField(max_length=200, required=False)
    format = forms.ChoiceField(required=False, help_text="Leave on auto-detect unless it fails.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from clustersim.traces import formats

        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [("", "auto-detect"), *((k, k) for k in formats())]

    def clean_file(self) -> Any:
        f = self.cleaned_data["file"]
        if f.size > settings.CLUSTERSIM_UPLOAD_MAX_BYTES:
            raise ValidationError(f"the limit is {settings.CLUSTERSIM_UPLOAD_MAX_BYTES} bytes")
        return f


class ClusterForm(forms.Form):
    name = forms.CharField(max_length=200)
    preset = forms.ChoiceField(required=False, help_text="Start from a real cluster ...")
    spec = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 14, "cols": 80, "spellcheck": "false"}),
        help_text="... or write a spec (JSON). Example: "
        '{"pools": [{"accelerator": "V100", "nodes": 4, "devices_per_node": 8}]}',
    )

    def __init__(self, *args: Any, owner: Any = None, **kwargs: Any) -> None:
        from clustersim.presets import preset_names

        super().__init__(*args, **kwargs)
        self.owner = owner
        self.fields["preset"].choices = [("", "(none: use the spec below)")] + [
            (n, n) for n in preset_names()
        ]

    def clean(self) -> dict[str, Any]:
        from clustersim.presets import preset_spec

        data = super().clean()
        preset, text = data.get("preset"), (data.get("spec") or "").strip()
        if bool(preset) == bool(text):
            raise ValidationError("choose a preset or write a spec (exactly one)")
        if preset:
            spec = preset_spec(preset)
        else:
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValidationError(f"spec is not valid JSON: {exc}") from None
            if not isinstance(spec, dict):
                raise ValidationError("a spec is a JSON object")
        total, types = services.cluster_summary(spec, self.owner)
        data["spec_obj"], data["total_devices"], data["device_types"] = spec, total, types
        return data


class ExperimentForm(forms.Form):
    name = forms.CharField(max_length=200)
    clusters = forms.ModelMultipleChoiceField(
        queryset=Cluster.objects.none(), widget=forms.CheckboxSelectMultiple
    )
    workloads = forms.ModelMultipleChoiceField(
        queryset=Workload.objects.none(), widget=forms.CheckboxSelectMultiple
    )
    policies = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple)
    params = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text='Optional hyper-parameters by policy (JSON), e.g. {"las": {"quantum_s": 600}}',
    )
    load_factors = forms.CharField(
        initial="1", help_text="Arrival-rate scaling, comma-separated (2 = twice as many jobs/h)."
    )
    seeds = forms.CharField(initial="0")
    placement = forms.ChoiceField(
        required=False,
        initial="",
        help_text="Default: consolidate, or each policy's placement in the simulator below.",
    )
    compat = forms.ChoiceField(
        required=False,
        initial="",
        label="Compatibility mode",
        choices=[("", "full model"), *((n, f"only what {t} models") for n, t in COMPAT_CHOICES)],
        help_text="To compare with a reference simulator's numbers; it accepts only the policies"
        " it has (gavel: gavel-fifo, gavel-las; tiresias: fifo, tiresias).",
    )
    cost_horizon_hours = forms.FloatField(
        required=False,
        min_value=0.0,
        label="Cost horizon (hours)",
        help_text="Planning horizon of the owned-cluster cost: capital and energy paid over this"
        " many hours whatever the policy does. Blank: each workload's arrival span (at least"
        " 1 h). The cloud cost always counts the device-hours each run held.",
    )

    def __init__(self, *args: Any, owner: Any = None, **kwargs: Any) -> None:
        from scheduling.registry import PLACEMENTS, POLICIES

        super().__init__(*args, **kwargs)
        self.owner = owner
        self.fields["clusters"].queryset = Cluster.objects.owned_by(owner)
        self.fields["workloads"].queryset = Workload.objects.owned_by(owner).filter(
            status=WorkloadStatus.READY
        )
        seeded = " (uses the seed)"
        self.fields["policies"].choices = [
            (n, n + seeded if cls.uses_seed else n) for n, cls in POLICIES.items()
        ]
        self.fields["placement"].choices = [("", "default")] + [
            (n, n + seeded if cls.uses_seed else n) for n, cls in PLACEMENTS.items()
        ]
        self.fields["seeds"].help_text = seeds_help()

    def clean_load_factors(self) -> list[float]:
        values = _numbers(self.cleaned_data["load_factors"], float, "load factors")
        if any(v <= 0 for v in values):
            raise ValidationError("load factors must be positive")
        return values

    def clean_seeds(self) -> list[int]:
        values = _numbers(self.cleaned_data["seeds"], int, "seeds")
        if any(v < 0 for v in values):
            raise ValidationError("seeds must be non-negative")
        return values

    def clean_cost_horizon_hours(self) -> float | None:
        value = self.cleaned_data.get("cost_horizon_hours")
        if value is not None and not value > 0:
            raise ValidationError("the cost horizon must be more than 0 hours")
        return value

    def clean_params(self) -> dict[str, Any]:
        text = (self.cleaned_data.get("params") or "").strip()
        if not text:
            return {}
        try:
            params = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"not valid JSON: {exc}") from None
        if not isinstance(params, dict) or not all(isinstance(v, dict) for v in params.values()):
            raise ValidationError('an object of objects: {"policy": {"param": value}}')
        return params

    def policy_list(self) -> list[dict[str, Any]]:
        params = self.cleaned_data.get("params") or {}
        return [{"name": n, "params": params.get(n, {})} for n in self.cleaned_data["policies"]]

    def seed_independent_choices(self) -> list[str]:
        """The chosen policies whose runs will not depend on the seed with the chosen
        placement and mode (run once whatever the seeds); empty until those fields are
        valid (the form comes back with them when the service refuses the grid)."""
        from clustersim.compat import resolve
        from clustersim.errors import ClustersimError

        d = getattr(self, "cleaned_data", None) or {}
        fields = ("policies", "params", "placement", "compat")
        if not d.get("policies") or any(f in self.errors for f in fields):
            return []
        policies = self.policy_list()
        try:
            where = [
                resolve(p["name"], None, d.get("placement") or None, d.get("compat") or None)[1]
                for p in policies
            ]
        except ClustersimError:
            return []
        once = services.seed_independent(policies, where)
        return [
            f"{p['name']} with placement {w}"
            for p, w, alone in zip(policies, where, once, strict=True)
            if alone
        ]


def seeds_help() -> str:
    """The seeds field's help: which policies and placements draw from the seed (from the
    registry's ``uses_seed``), and that a combination neither draws from is run once."""
    from scheduling.registry import PLACEMENTS, POLICIES

    def seeded(registry: dict[str, Any]) -> str:
        return ", ".join(n for n, cls in registry.items() if cls.uses_seed) or "none"

    return (
        "Comma-separated. Seeds only matter for seeded configurations, where the policy or the "
        f"placement draws random numbers — placements: {seeded(PLACEMENTS)}; policies: "
        f"{seeded(POLICIES)}. Any other combination does not depend on the seed: it is run "
        "once, with the first seed, whatever seeds you list (the experiment page says so)."
    )


def attach_error(form: forms.Form, exc: ValidationError, pattern: str, field: Any) -> None:
    """Show a service's ``ValidationError`` on the form field it names (else above the form).

    ``pattern`` matches the message's field reference (e.g. ``recipe\\.(\\w+):``); ``field``
    turns what it captured into a form field name.
    """
    import re

    for message in exc.messages:
        m = re.match(pattern, message)
        key = field(*m.groups()) if m else None
        form.add_error(key if key in form.fields else None, message)


# -- synthetic workloads ---------------------------------------------------------------------

MODEL_CHOICES = [
    ("gavel", "Gavel model, multi-GPU jobs"),
    ("gavel-single", "Gavel model, single-GPU jobs"),
    ("fit", "Fit to one of my ready workloads"),
]


#: Form fields by recipe key, where they differ.
RECIPE_FIELDS = {"duration_s": "duration_hours"}


class SyntheticForm(forms.Form):
    """A synthetic recipe (:mod:`planner.recipes`), one field per recipe key."""

    name = forms.CharField(max_length=200, required=False, help_text="Blank: a name is made up.")
    model = forms.ChoiceField(choices=MODEL_CHOICES, initial="gavel")
    fit_workload = forms.ModelChoiceField(
        queryset=Workload.objects.none(),
        required=False,
        label="Workload to fit",
        empty_label="(choose a workload)",
        help_text="With “fit”: job sizes, durations and arrivals are drawn like this trace's.",
    )
    jobs = forms.IntegerField(required=False, initial=1000, help_text="How many jobs ...")
    duration_hours = forms.FloatField(
        required=False,
        label="Duration (hours)",
        help_text="... and/or for how long (hours); arrivals stop at either.",
    )
    arrival = forms.ChoiceField(
        required=False,
        choices=[("", "the model's own"), ("poisson", "Poisson"), ("diurnal", "diurnal")],
    )
    rate_per_hour = forms.FloatField(
        required=False,
        label="Arrivals per hour",
        help_text="Mean arrivals per hour; blank: the model's rate.",
    )
    amplitude = forms.FloatField(
        required=False, initial=0.5, help_text="Diurnal: day/night swing, 0 (flat) to 1."
    )
    peak_hour = forms.FloatField(required=False, initial=14, help_text="Diurnal: busiest hour.")
    start_hour = forms.FloatField(
        required=False, initial=0, help_text="Diurnal: hour of day at the trace's start."
    )
    duration_model = forms.ChoiceField(
        choices=[("lognormal", "lognormal"), ("empirical", "empirical (resample the trace)")],
        initial="lognormal",
        help_text="Fitted models: how job durations are drawn.",
    )
    job_types = forms.BooleanField(
        required=False, initial=True, help_text="Give jobs model types (throughputs differ)."
    )
    seed = forms.IntegerField(required=False, initial=0)

    def __init__(self, *args: Any, owner: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["fit_workload"].queryset = Workload.objects.owned_by(owner).filter(
            status=WorkloadStatus.READY
        )

    def recipe(self) -> dict[str, Any]:
        """The recipe of the cleaned data (blank fields left out: the service's defaults)."""
        d = self.cleaned_data
        recipe: dict[str, Any] = {
            "model": d["model"],
            "jobs": d.get("jobs"),
            "duration_s": None if d.get("duration_hours") is None else d["duration_hours"] * 3600,
            "arrival": d.get("arrival") or None,
            "rate_per_hour": d.get("rate_per_hour"),
            "amplitude": d.get("amplitude"),
            "peak_hour": d.get("peak_hour"),
            "start_hour": d.get("start_hour"),
            "duration_model": d.get("duration_model") or None,
            "job_types": bool(d.get("job_types")),
            "seed": d.get("seed"),
        }
        if d["model"] == "fit" and d.get("fit_workload") is not None:
            recipe["fit_workload"] = d["fit_workload"].pk
        return {k: v for k, v in recipe.items() if v is not None}

    def add_service_error(self, exc: ValidationError) -> None:
        attach_error(self, exc, r"recipe\.(\w+):", lambda key: RECIPE_FIELDS.get(key, key))


# -- derived workloads -----------------------------------------------------------------------


#: Form fields by step op and step key (to show a service error next to its field).
STEP_FIELDS = {
    "window": {"start_s": "window_from_h", "end_s": "window_to_h"},
    "sample": {"fraction": "sample_fraction", "n": "sample_n", "seed": "sample_seed"},
    "scale": {"factor": "load_factor"},
    "cap": {"cluster": "cap_cluster", "mode": "cap_mode"},
    "rebase": {"start": "rebase_start", "keep": "rebase_keep"},
}


class DeriveForm(forms.Form):
    """Transformation steps, each optional, applied in the order of the fields."""

    name = forms.CharField(max_length=200, required=False, help_text="Blank: “… (derived)”.")
    window_from_h = forms.FloatField(required=False, label="Window from (hours)")
    window_to_h = forms.FloatField(
        required=False, label="Window to (hours)", help_text="Keep jobs submitted in this window."
    )
    sample_fraction = forms.FloatField(
        required=False, label="Sample a fraction", help_text="e.g. 0.5 keeps half the jobs ..."
    )
    sample_n = forms.IntegerField(
        required=False, label="... or a number of jobs", help_text="(give one of them)"
    )
    sample_seed = forms.IntegerField(required=False, initial=0, label="Sample seed")
    load_factor = forms.FloatField(
        required=False, help_text="Scale the arrival rate (2 = twice as many jobs/h)."
    )
    cap_cluster = forms.ModelChoiceField(
        queryset=Cluster.objects.none(),
        required=False,
        label="Cap demand to cluster",
        empty_label="(no cap)",
    )
    cap_mode = forms.ChoiceField(
        choices=[("cap", "cap larger jobs to the cluster"), ("drop", "drop jobs that do not fit")],
        initial="cap",
        label="Jobs too large",
    )
    rebase_start = forms.DateTimeField(
        required=False,
        label="Rebase to (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="Move the trace to this calendar start (carbon follows its hours).",
    )
    rebase_keep = forms.ChoiceField(
        choices=[
            ("time_of_day", "keep the time of day"),
            ("weekday", "keep weekday and time of day"),
            ("none", "move exactly to this time"),
        ],
        initial="time_of_day",
        label="Rebase keeping",
    )

    def __init__(self, *args: Any, owner: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["cap_cluster"].queryset = Cluster.objects.owned_by(owner)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not self.errors and not self.steps():
            raise ValidationError(
                "choose at least one step: a window, a sample, a load factor, a cap or a rebase"
            )
        return data

    def steps(self) -> list[dict[str, Any]]:
        """The steps of the cleaned data, in order: window, sample, scale, cap, rebase."""
        d = self.cleaned_data
        steps: list[dict[str, Any]] = []
        lo, hi = d.get("window_from_h"), d.get("window_to_h")
        if lo is not None or hi is not None:
            step: dict[str, Any] = {"op": "window"}
            if lo is not None:
                step["start_s"] = lo * 3600
            if hi is not None:
                step["end_s"] = hi * 3600
            steps.append(step)
        fraction, n = d.get("sample_fraction"), d.get("sample_n")
        if fraction is not None or n is not None:
            step = {"op": "sample", "seed": d.get("sample_seed") or 0}
            if fraction is not None:
                step["fraction"] = fraction
            if n is not None:
                step["n"] = n
            steps.append(step)
        if d.get("load_factor") is not None:
            steps.append({"op": "scale", "factor": d["load_factor"]})
        if d.get("cap_cluster") is not None:
            steps.append({"op": "cap", "cluster": d["cap_cluster"].pk, "mode": d["cap_mode"]})
        if d.get("rebase_start") is not None:
            from datetime import UTC

            start = d["rebase_start"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            steps.append({"op": "rebase", "start": start, "keep": d["rebase_keep"]})
        return steps

    def add_service_error(self, exc: ValidationError, steps: list[dict[str, Any]]) -> None:
        def field(i: str, key: str) -> str | None:
            op = steps[int(i)]["op"] if int(i) < len(steps) else ""
            return STEP_FIELDS.get(op, {}).get(key)

        attach_error(self, exc, r"steps\[(\d+)\]\.(\w+):", field)


# -- clusters from node lists ----------------------------------------------------------------


def parse_aliases(text: str) -> dict[str, str]:
    """``MODEL = TYPE`` per line (blank lines and ``#`` comments skipped); errors name the line."""
    aliases: dict[str, str] = {}
    first: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        model, eq, target = (part.strip() for part in line.partition("="))
        if not eq or not model or not target:
            raise ValidationError(
                f"line {n}: write MODEL = TYPE, e.g. NVIDIA-L40S = L40; not {line!r}"
            )
        if model in first:
            raise ValidationError(f"line {n}: {model!r} is mapped already (line {first[model]})")
        aliases[model], first[model] = target, n
    return aliases


class ImportClusterForm(forms.Form):
    file = forms.FileField(help_text="A node list: kubectl JSON, Slurm text or an Alibaba CSV.")
    format = forms.ChoiceField(required=False, help_text="Leave on detect unless it fails.")
    name = forms.CharField(max_length=200, required=False, help_text="Blank: the file's name.")
    aliases = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 60, "spellcheck": "false"}),
        help_text="Map models the catalog does not know, one per line: MODEL = TYPE "
        "(e.g. NVIDIA-L40S = L40).",
    )
    nodes_per_rack = forms.IntegerField(
        required=False, min_value=1, help_text="Group nodes into racks of this size (optional)."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from clustersim.inventory import FORMATS

        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [
            ("", "detect"),
            *((k, f"{k}: {v}") for k, v in FORMATS.items()),
        ]

    def clean_file(self) -> Any:
        f = self.cleaned_data["file"]
        if f.size > services.MAX_INVENTORY_BYTES:
            raise ValidationError(f"the limit is {services.MAX_INVENTORY_BYTES} bytes")
        return f

    def clean_aliases(self) -> dict[str, str]:
        return parse_aliases(self.cleaned_data.get("aliases") or "")


def describe_recipe(w: Workload) -> list[dict[str, Any]]:
    """Lines saying what a synthetic or derived workload was made of: ``{"label", "text",
    "link": (name, url) or None}``; empty for an upload."""
    from django.urls import reverse

    recipe = w.recipe or {}
    lines: list[dict[str, Any]] = []

    def add(label: str, text: str, link: tuple[str, str] | None = None) -> None:
        lines.append({"label": label, "text": text, "link": link})

    if w.origin == "synthetic":
        model = dict(MODEL_CHOICES).get(recipe.get("model", ""), recipe.get("model", "?"))
        if recipe.get("model") == "fit":
            src = Workload.objects.filter(owner_id=w.owner_id, pk=recipe.get("fit_workload"))
            source = src.only("pk", "name").first()
            link = (
                (source.name, reverse("dashboard:workload", args=[source.pk])) if source else None
            )
            add("model", "fitted to" if source else "fitted to a deleted workload", link)
            add("durations", str(recipe.get("duration_model", "lognormal")))
        else:
            add("model", model)
        size = []
        if recipe.get("jobs") is not None:
            size.append(f"{recipe['jobs']:,} jobs")
        if recipe.get("duration_s") is not None:
            size.append(f"{recipe['duration_s'] / 3600:g} h")
        add("size", " within ".join(size) if len(size) == 2 else size[0] if size else "?")
        arrival = recipe.get("arrival") or "the model's own"
        rate = recipe.get("rate_per_hour")
        text = f"{arrival}, {rate:g} jobs/h" if rate else f"{arrival}, the model's rate"
        if recipe.get("arrival") == "diurnal":
            text += (
                f"; amplitude {recipe.get('amplitude', 0.5):g}, peak at "
                f"{recipe.get('peak_hour', 14):g} h, starting at {recipe.get('start_hour', 0):g} h"
            )
        add("arrivals", text)
        add("job types", "yes" if recipe.get("job_types", True) else "no")
        add("seed", str(recipe.get("seed", 0)))
    elif w.origin == "derived":
        clusters = {c.pk: c for c in Cluster.objects.filter(owner_id=w.owner_id).only("pk", "name")}
        for i, step in enumerate(recipe.get("steps", []), 1):
            op = step.get("op", "?")
            label = f"{i}. {op}"
            if op == "window":
                lo, hi = step.get("start_s"), step.get("end_s")
                add(
                    label,
                    "jobs submitted from "
                    + ("the start" if lo is None else f"hour {lo / 3600:g}")
                    + " to "
                    + ("the end" if hi is None else f"hour {hi / 3600:g}"),
                )
            elif op == "sample":
                what = (
                    f"{step['fraction']:.0%} of the jobs"
                    if step.get("fraction") is not None
                    else f"{step.get('n', 0):,} jobs"
                )
                add(label, f"{what} at random (seed {step.get('seed', 0)})")
            elif op == "scale":
                add(label, f"load × {step.get('factor', 1):g} (arrival rate)")
            elif op == "cap":
                c = clusters.get(step.get("cluster"))
                mode = (
                    "larger jobs capped to"
                    if step.get("mode") != "drop"
                    else "jobs too large dropped for"
                )
                link = (c.name, reverse("dashboard:cluster", args=[c.pk])) if c else None
                add(label, mode if c else f"{mode} a deleted cluster", link)
            elif op == "rebase":
                keep = {
                    "time_of_day": "keeping the time of day",
                    "weekday": "keeping weekday and time",
                }
                add(
                    label,
                    f"moved to start at {step.get('start')} "
                    + keep.get(step.get("keep"), "exactly"),
                )
            else:
                add(label, str(step))
    return lines
