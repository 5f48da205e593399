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
        field = "preset" if preset else "spec"
        if preset:
            spec = preset_spec(preset)
        else:
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as exc:
                self.add_error("spec", f"not valid JSON: {exc}")
                return data
            if not isinstance(spec, dict):
                self.add_error("spec", "a spec is a JSON object")
                return data
        try:
            total, types = services.cluster_summary(spec, self.owner)
        except ValidationError as exc:
            self.add_error(field, exc)
            return data
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
        " it has (gavel: Gavel's policies, gavel-*; tiresias: fifo, tiresias).",
    )
    elastic = forms.CharField(
        required=False,
        max_length=32,
        label="Elastic jobs",
        help_text="Let rigid jobs shrink and grow: LO-HI, each side xF (F times the job's"
        " devices) or a device count, e.g. x0.5-x2 (half to twice), 1-x1 (only shrink)."
        " Only the elastic policies (afs, optimus, pollux) resize jobs (singularity resizes"
        " any job by splicing). Blank: as the workloads say.",
    )
    aux_demand = forms.CharField(
        required=False,
        max_length=40,
        label="CPU/memory demand",
        help_text="Give the jobs without a CPU or memory demand one: synergy (3 cores and 62.5 GB"
        " per device), proportional (the clusters' smallest per-device share), per-gpu:C,M (C"
        " cores and M GB per device, e.g. per-gpu:4,32), ignore (drop every demand, the"
        " trace's too). Demands bind only on nodes whose spec gives CPU cores or host memory;"
        " the runs then show CPU and memory utilisation. Blank: the workloads' own demands.",
    )
    cost_horizon_hours = forms.FloatField(
        required=False,
        min_value=0.0,
        label="Cost horizon (hours)",
        help_text="Planning horizon of the owned-cluster cost: capital and energy paid over this"
        " many hours whatever the policy does. Blank: each workload's arrival span (at least"
        " 1 h). The cloud cost always counts the device-hours each run held.",
    )

    failures = forms.BooleanField(
        required=False,
        label="Node failures",
        help_text="Nodes fail and are repaired (each pool's MTBF and repair time, else the"
        " documented defaults); jobs on a failed node restart from their last checkpoint;"
        " the results gain goodput, lost work, restarts and the effective training time"
        " ratio (docs/failures.md). Failures are drawn from the seed: every run is repeated"
        " per seed.",
    )
    checkpoint_interval_s = forms.FloatField(
        required=False,
        label="Checkpoint interval (s)",
        help_text="With node failures or spot reclaims: seconds of a job's computing between"
        " two checkpoints. Blank: 3600.",
    )
    checkpoint_overhead_s = forms.FloatField(
        required=False,
        label="Checkpoint overhead (s)",
        help_text="With node failures or spot reclaims: seconds one checkpoint costs a job."
        " Blank: 60.",
    )
    mtbf_hours = forms.FloatField(
        required=False,
        label="MTBF of every node (hours)",
        help_text="With node failures: overrides every pool's. Blank: each pool's own.",
    )
    repair_hours = forms.FloatField(
        required=False,
        label="Repair time of every node (hours)",
        help_text="With node failures: overrides every pool's. Blank: each pool's own.",
    )
    spot = forms.BooleanField(
        required=False,
        label="Spot reclaims",
        help_text="The clusters' spot pools (spot: true in their specs) lose nodes at their"
        " reclaim rate, or as the trace below says; a job whose checkpoint fits in the pool's"
        " notice keeps its work, the others restart from their last checkpoint; the results"
        " gain spot reclaims, restarts and lost work, goodput and the effective training time"
        " ratio (docs/failures.md). Drawn reclaims depend on the seed: every run is repeated"
        " per seed. Not with the power model.",
    )
    spot_trace = forms.CharField(
        required=False,
        label="Reclaim trace (CSV)",
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="With spot reclaims: replay these instead of drawing them, one per line"
        " under the header node,reclaimed_at_s,returned_at_s (nodes numbered pool by pool"
        " from 0, every one a spot node). Blank: drawn at each pool's rate.",
    )
    network = forms.BooleanField(
        required=False,
        label="Network contention",
        help_text="Multi-node jobs share NICs and rack uplinks (max-min fair) and run at their"
        " share; the results gain the time lost to contention and the uplinks' utilisation"
        " (docs/network.md). Not with co-locating policies, the power model or compat gavel.",
    )
    share_nics = forms.TypedChoiceField(
        required=False,
        label="NICs of a node",
        choices=(("", "shared by its jobs (default)"), ("false", "each job's own, whole")),
        coerce=lambda v: v == "true",
        empty_value=None,
        help_text="With network contention: jobs on a common node share its NIC"
        " (share_nics, the default), or only the rack uplinks are shared and each job gets"
        " its slowest NIC whole (share_nics = false).",
    )
    stragglers = forms.BooleanField(
        required=False,
        label="Stragglers (slow nodes)",
        help_text="A share of the nodes, drawn from the seed, runs slower, and a gang touching"
        " one runs at its pace; the results gain the jobs slowed and the device-hours lost"
        " (docs/failures.md). A share between 0 and 1 depends on the seed: every run is"
        " repeated per seed. Not with co-locating policies, the power model or compat gavel.",
    )
    slow_share = forms.FloatField(
        required=False,
        label="Share of slow nodes",
        help_text="With stragglers: 0..1 (required).",
    )
    slow_speed = forms.FloatField(
        required=False,
        label="Pace of a slow node",
        help_text="With stragglers: 0 < pace <= 1 of its normal pace. Blank: 0.5.",
    )
    avoid_slow = forms.BooleanField(
        required=False,
        label="Avoid slow nodes",
        help_text="With stragglers: place gangs on fast nodes when they can hold them.",
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
        self.fields["policies"].choices = policy_choices(POLICIES, seeded)
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

    def clean_elastic(self) -> str:
        try:
            return services.checked_elastic(self.cleaned_data.get("elastic"))
        except ValidationError as exc:
            raise ValidationError([m.removeprefix("elastic: ") for m in exc.messages]) from None

    def clean_aux_demand(self) -> str:
        try:
            return services.checked_aux_demand(self.cleaned_data.get("aux_demand"))
        except ValidationError as exc:
            raise ValidationError([m.removeprefix("aux_demand: ") for m in exc.messages]) from None

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

    def clean(self) -> dict[str, Any]:
        from clustersim.errors import ClustersimError
        from clustersim.failures import SETTINGS, check_settings

        data = super().clean()
        given = {n: data[n] for n, *_ in SETTINGS if data.get(n) is not None}
        data["failure_settings"] = None
        if given and not data.get("failures"):
            for name in given:
                if data.get("spot") and name.startswith("checkpoint"):
                    continue  # the checkpoints of spot reclaims (_clean_spot)
                what = (
                    "node failures or spot reclaims"
                    if name.startswith("checkpoint")
                    else ("node failures")
                )
                self.add_error(name, f"only with {what} on: tick it or leave this blank")
        elif data.get("failures"):
            bad = False
            for name, value in given.items():  # each error under its own field
                try:
                    check_settings({name: value})
                except ClustersimError as exc:
                    self.add_error(name, str(exc))
                    bad = True
            if not bad:
                data["failure_settings"] = check_settings(given)
        data["network_settings"] = None
        share_nics = data.get("share_nics")
        if not data.get("network"):
            if share_nics is not None:
                self.add_error(
                    "share_nics", "only with network contention on: tick it or leave this blank"
                )
        else:
            data["network_settings"] = {"share_nics": share_nics is not False}
        self._clean_stragglers(data)
        self._clean_spot(data)
        chosen = set(data.get("policies") or ())
        stray = sorted(set(data.get("params") or {}) - chosen) if chosen else []
        if stray:
            self.add_error(
                "params",
                f"parameters for {', '.join(stray)}, which you did not choose above",
            )
        return data

    def _clean_stragglers(self, data: dict[str, Any]) -> None:
        """``data["straggler_settings"]`` from the straggler fields (``None``: off or
        invalid), each error under its own field."""
        from clustersim.errors import ClustersimError
        from clustersim.stragglers import check_settings

        fields = {"share": "slow_share", "speed": "slow_speed", "avoid": "avoid_slow"}
        given = {k: data[f] for k, f in fields.items() if data.get(f) is not None}
        if not given.get("avoid"):  # an unticked box is no setting
            given.pop("avoid", None)
        data["straggler_settings"] = None
        if not data.get("stragglers"):
            for key in given:
                self.add_error(fields[key], "only with stragglers on: tick it or leave this blank")
            return
        if "share" not in given:
            self.add_error("slow_share", "stragglers.share: required with stragglers on")
            return
        try:
            data["straggler_settings"] = check_settings(given)
        except ClustersimError as exc:
            key = str(exc).split(":", 1)[0].removeprefix("stragglers.")
            self.add_error(fields.get(key, "stragglers"), str(exc))

    def _clean_spot(self, data: dict[str, Any]) -> None:
        """``data["spot_settings"]`` from the spot fields and the checkpoint fields (``None``:
        off or invalid), each error under its own field."""
        from clustersim.errors import ClustersimError
        from clustersim.spot import TRACE_COLUMNS, check_settings, parse_trace_csv

        text = (data.get("spot_trace") or "").strip()
        data["spot_settings"] = None
        if not data.get("spot"):
            if text:
                self.add_error(
                    "spot_trace", "only with spot reclaims on: tick it or leave this blank"
                )
            return
        given: dict[str, Any] = {
            k: data[k]
            for k in ("checkpoint_interval_s", "checkpoint_overhead_s")
            if data.get(k) is not None
        }
        if text:
            try:
                rows = parse_trace_csv(text, "reclaim trace")
            except ClustersimError as exc:
                self.add_error("spot_trace", str(exc))
                return
            given["trace"] = [dict(zip(TRACE_COLUMNS, r, strict=True)) for r in rows]
        try:
            data["spot_settings"] = check_settings(given)
        except ClustersimError as exc:
            key = str(exc).split(":", 1)[0].removeprefix("spot.")
            self.add_error(key if key in self.fields else "spot", str(exc))

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
        once = services.seed_independent(
            policies,
            where,
            failures=d.get("failure_settings"),
            stragglers=d.get("straggler_settings"),
            spot=d.get("spot_settings"),
        )
        return [
            f"{p['name']} with placement {w}"
            for p, w, alone in zip(policies, where, once, strict=True)
            if alone
        ]

    def add_service_error(self, exc: ValidationError) -> None:
        """Show each of the service's messages under the field it concerns, in this form's
        terms (``las.quantum_s: ...`` rather than ``policies[1].params.quantum_s: ...``);
        whole-grid problems (too many runs, the queue limit) above the form."""
        import re

        names = [p["name"] for p in self.policy_list()]
        for message in exc.messages:
            m = re.match(r"policies\[(\d+)\](\.params)?(?:\.(\w+))?: (.*)", message)
            if m:
                index, params, key, text = m.groups()
                name = names[int(index)] if int(index) < len(names) else "?"
                if params and key and not text.startswith(f"{name} "):
                    text = f"{name}.{key}: {text}"
                elif params and not key:
                    text = f"{name}: {text}"
                self.add_error("params" if params else "policies", text)
            elif message.startswith("compat "):
                self.add_error("placement" if "placement" in message else "compat", message)
            elif message.startswith("network"):
                self.add_error("network", message)
            elif message.startswith("stragglers"):
                self.add_error("stragglers", message)
            elif message.startswith("failures:"):
                self.add_error("failures", message)
            elif message.startswith("elastic"):
                self.add_error("elastic", message)
            elif message.startswith("aux_demand: "):
                self.add_error("aux_demand", message.removeprefix("aux_demand: "))
            elif message.startswith("spot.trace"):
                self.add_error("spot_trace", message)
            elif message.startswith("spot"):
                self.add_error("spot", message)
            elif message.startswith("load factors"):
                self.add_error("load_factors", message)
            elif message.startswith("workloads not parsed"):
                self.add_error("workloads", message)
            else:
                self.add_error(None, message)


#: Policy families of the experiment form, by the module that defines the policy (the
#: registry keeps one module per family); modules of one classic policy each are baselines.
POLICY_FAMILIES = {
    "gavel": "Gavel (heterogeneity-aware)",
    "gavel_lp": "Gavel (heterogeneity-aware)",
    "gavel_packing": "Gavel (heterogeneity-aware)",
    "gavel_mmf_packed": "Gavel (heterogeneity-aware)",
    "allocation": "Gavel (heterogeneity-aware)",
    "themis": "Themis",
    "allox": "AlloX",
    "gandiva": "Gandiva",
    "gandiva_fair": "Gandiva",
    "power_down": "Power and energy",
    "power_cap": "Power and energy",
    "energy_aware": "Power and energy",
    "comm_wait": "Network-aware",
    "afs": "Elastic",
    "optimus": "Elastic",
    "singularity": "Elastic",
    "drf": "Multi-resource",
    "synergy": "Multi-resource",
    "slurm": "Production schedulers",
    "yarn_capacity": "Production schedulers",
    "kubernetes": "Production schedulers",
}
BASELINES = "Baselines"
_BASELINE_MODULES = frozenset({"fifo", "sjf", "srtf", "las", "tiresias", "priority", "edf"})


def policy_family(cls: Any) -> str:
    """The family a policy class is listed under on the experiment form."""
    module = str(cls.__module__).rsplit(".", 1)[-1]
    if module in _BASELINE_MODULES:
        return BASELINES
    return POLICY_FAMILIES.get(module, module.replace("_", " ").capitalize())


def policy_choices(policies: Any, seeded: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """The registry's policies as checkbox choices grouped by family (baselines first, then
    in registry order), so a registry of 25+ policies reads as a few short lists."""
    groups: dict[str, list[tuple[str, str]]] = {BASELINES: []}
    for name, cls in policies.items():
        label = name + seeded if cls.uses_seed else name
        groups.setdefault(policy_family(cls), []).append((name, label))
    return [(family, items) for family, items in groups.items() if items]


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


# -- cluster editor, what-ifs, renames and prefilled experiments (issue 12) ------------------

#: Spec keys shown as text, as integers (every other shown key is a number).
_TEXT_KEYS = frozenset({"name", "carbon_zone", "region", "rack", "accelerator"})
_INT_KEYS = frozenset({"nodes", "devices_per_node", "racks", "cpu_cores", "release_year"})
#: Keys kept as they are but not shown (lists).
_HIDDEN_KEYS = frozenset({"aliases", "assumptions"})
#: What a blank field means, by key (the spec's defaults, clustersim.spec).
_PLACEHOLDERS = {
    "pue": "1.2",
    "price_per_kwh": "0.10",
    "carbon_g_per_kwh": "400",
    "oversubscription": "1",
    "rack_oversubscription": "1",
    "devices_per_node": "by kind",
    "intra_gbs": "catalog",
    "nic_gbps": "100",
    "overhead_w": "50/device",
    "availability": "1",
    "mtbf_hours": "by type",
    "repair_hours": "24 h or by availability",
    "failure_shape": "1",
    "spot_discount": "0.6 (or a price)",
    "spot_reclaim_hours": "3600",
    "spot_return_hours": "1",
    "spot_notice_s": "120",
    "idle_w": "11.4% busy",
    "region": "first",
    "rack": "own rack",
    "name": "",
}
_LABELS = {
    "price_per_kwh": "$/kWh",
    "carbon_g_per_kwh": "gCO₂/kWh",
    "price_per_hour": "$/device-h",
    "purchase_usd": "purchase $",
    "amortisation_years": "amortisation (years)",
    "oversubscription": "uplink ratio",
    "rack_oversubscription": "rack uplink ratio",
    "devices_per_node": "devices/node",
    "racks": "spread over N racks",
    "intra_gbs": "intra-node GB/s",
    "nic_gbps": "NIC Gbit/s",
    "host_mem_gb": "host GB",
    "overhead_w": "node W",
    "mtbf_hours": "MTBF h (per node)",
    "repair_hours": "repair h",
    "failure_shape": "failure Weibull shape",
    "spot": "capacity",
    "spot_price_per_hour": "spot $/device-h",
    "spot_discount": "spot discount (0..1)",
    "spot_reclaim_hours": "h between reclaims (per node)",
    "spot_return_hours": "h until it returns",
    "spot_notice_s": "reclaim notice s",
    "fp16_tflops": "FP16 TFLOPS",
    "memory_bw_tbs": "mem TB/s",
}


class SpecRowForm(forms.Form):
    """One entry of a list in a spec (a region, rack, pool, type): a blank field leaves its
    key out (the spec's default applies). The entry as it was rides along in ``keep`` (JSON):
    keys the row does not show are kept, and a value saved unchanged is the original one (an
    integer stays one; a blank text stays), so saving an untouched page changes no spec."""

    keys: tuple[str, ...] = ()
    keep = forms.CharField(required=False, widget=forms.HiddenInput)

    @classmethod
    def initial_of(cls, entry: dict[str, Any]) -> dict[str, Any]:
        initial = {k: entry[k] for k in cls.keys if k in entry}
        return {**initial, "keep": json.dumps(entry)}

    def clean_keep(self) -> dict[str, Any]:
        text = self.cleaned_data.get("keep") or ""
        try:
            kept = json.loads(text) if text else {}
        except json.JSONDecodeError:
            raise ValidationError("the page was changed: reload it") from None
        return kept if isinstance(kept, dict) else {}

    def entry(self) -> dict[str, Any]:
        d = self.cleaned_data
        original: dict[str, Any] = d.get("keep") or {}
        out: dict[str, Any] = {}
        for key, was in original.items():
            if key not in self.keys:
                out[key] = was
                continue
            now = d.get(key)
            if now in (None, ""):
                if was == "":
                    out[key] = was
            else:
                out[key] = was if was == now and type(was) is not bool else now
        for key in self.keys:
            if key not in original and d.get(key) not in (None, ""):
                out[key] = d[key]
        return out


def _row_form(part: str, keys: tuple[str, ...], required: tuple[str, ...]) -> type[SpecRowForm]:
    """A row form with a field per spec key of ``part`` (so keys the format gains appear)."""
    from clustersim.catalog import KINDS

    fields: dict[str, Any] = {}
    for key in keys:
        if key in _HIDDEN_KEYS:
            continue
        need = key in required
        field: forms.Field
        if key == "kind":
            field = forms.ChoiceField(
                required=False, choices=[("", "(gpu)"), *((k, k) for k in KINDS)]
            )
        elif key == "spot":  # a pool's spot flag (clustersim.spot): blank is on demand
            field = forms.TypedChoiceField(
                required=False,
                choices=[("", "on demand"), ("False", "on demand (spot: false)"), ("True", "spot")],
                coerce=lambda v: v == "True",
                empty_value=None,
            )
        elif key in _TEXT_KEYS:
            field = forms.CharField(required=need, max_length=200)
        elif key in _INT_KEYS:
            field = forms.IntegerField(required=need)
        else:
            field = forms.FloatField(required=need)
        field.label = _LABELS.get(key, key.replace("_", " "))
        placeholder = _PLACEHOLDERS.get(key, "" if need else "default")
        if part == "pools" and key == "name":
            placeholder = "pool<i>"
        field.widget.attrs.update(placeholder=placeholder, title=key)
        if key == "accelerator" or (part == "prices" and key == "name"):
            field.widget.attrs["list"] = "accelerator-names"
        fields[key] = field
    attrs = {**fields, "keys": tuple(fields)}
    return type(f"{part.title()}RowForm", (SpecRowForm,), attrs)


def _editor_rows() -> dict[str, type[SpecRowForm]]:
    from clustersim.variants import (
        ACCELERATOR_KEYS,
        ACCELERATOR_REQUIRED,
        POOL_KEYS,
        RACK_KEYS,
        REGION_KEYS,
        price_keys,
    )

    return {
        "regions": _row_form("regions", REGION_KEYS, ("name",)),
        "racks": _row_form("racks", RACK_KEYS, ("name",)),
        "pools": _row_form("pools", POOL_KEYS, ("accelerator", "nodes")),
        "accelerators": _row_form("accelerators", ACCELERATOR_KEYS, ACCELERATOR_REQUIRED),
        "prices": _row_form("prices", ("name", *price_keys()), ("name",)),
    }


#: The editor's parts: formset prefix → (title, help).
EDITOR_PARTS = {
    "regions": (
        "Regions",
        "Carbon zone (hourly intensity series), electricity price and PUE. None: one default "
        "region.",
    ),
    "racks": (
        "Racks",
        "Declared racks, each in a region, with the uplink oversubscription ratio (1 = "
        "non-blocking). Pools that name none get racks of their own.",
    ),
    "pools": (
        "Node pools",
        "Groups of identical nodes: accelerator type and count, devices per node, a declared "
        "rack or N racks of their own, region, links, CPU, memory, power, availability, and "
        "the failure model runs with failures use (MTBF and repair time in hours, Weibull "
        "shape; docs/failures.md), and spot capacity: its price (or discount off on-demand), "
        "the mean hours between reclaims of a node and until it returns, and the notice (s) "
        "runs with spot reclaims use. Blank fields take the spec's defaults.",
    ),
    "accelerators": (
        "Accelerator types of this cluster",
        "Types of your own (or a catalog name to replace that type entirely). Types you keep "
        "for every cluster are on the API's /accelerators/.",
    ),
    "prices": (
        "Price overrides",
        "A catalog type at another price in this cluster (blank: the catalog's).",
    ),
}


class ClusterMetaForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 80})
    )
    variant_name = forms.CharField(
        max_length=200,
        required=False,
        label="Variant name",
        help_text="For “Save as new variant”; blank: the name followed by “(edited)”.",
    )


class ClusterEditor:
    """The cluster edit page: name and description, and a formset per part of the spec.

    Top-level spec keys the editor does not show (the spec's display ``name``) are kept.
    :meth:`spec` assembles the edited spec; :meth:`add_spec_error` shows the simulator's
    message (``pools[1].nodes: ...``) next to the field it names.
    """

    def __init__(self, cluster: Cluster, data: Any = None) -> None:
        from clustersim.variants import split_price_overrides

        self.cluster = cluster
        self.rows = _editor_rows()
        spec = cluster.spec
        own, prices = split_price_overrides(spec.get("accelerators") or [])
        # the entries the price rows came from: an untouched row saves its entry as it was
        names = [p["name"] for p in prices]
        self._price_entries = [
            dict(a) for a in spec.get("accelerators") or [] if a.get("name") in names
        ]
        entries = {
            "regions": spec.get("regions") or [],
            "racks": spec.get("racks") or [],
            "pools": spec.get("pools") or [],
            "accelerators": own,
            "prices": prices,
        }
        self.meta = ClusterMetaForm(
            data,
            prefix="cluster",
            initial={"name": cluster.name, "description": cluster.description},
        )
        self.formsets = {
            part: forms.formset_factory(self.rows[part], extra=1, can_delete=True)(
                data,
                prefix=part,
                initial=[self.rows[part].initial_of(dict(e)) for e in entries[part]],
            )
            for part in EDITOR_PARTS
        }
        self.errors: list[str] = []
        self._index: dict[str, list[forms.Form]] = {}

    def parts(self) -> list[dict[str, Any]]:
        return [
            {"prefix": p, "title": t, "help": h, "formset": self.formsets[p]}
            for p, (t, h) in EDITOR_PARTS.items()
        ]

    def is_valid(self) -> bool:
        ok = self.meta.is_valid()
        return all([ok, *(fs.is_valid() for fs in self.formsets.values())])

    def _kept(self, part: str) -> list[SpecRowForm]:
        fs = self.formsets[part]
        out = []
        for i, form in enumerate(fs.forms):
            if form.cleaned_data.get("DELETE"):
                continue
            if i >= fs.initial_form_count() and not form.has_changed():
                continue
            out.append(form)
        return out

    def spec(self) -> dict[str, Any]:
        """The edited spec (call after :meth:`is_valid`)."""
        from clustersim.errors import ClustersimError
        from clustersim.variants import price_override

        spec = {
            k: v
            for k, v in self.cluster.spec.items()
            if k not in ("regions", "racks", "accelerators", "pools")
        }
        for part in ("regions", "racks"):
            forms_ = self._kept(part)
            self._index[part] = list(forms_)
            if forms_:
                spec[part] = [f.entry() for f in forms_]
        own, prices = self._kept("accelerators"), self._kept("prices")
        accelerators = [f.entry() for f in own]
        initial_prices = self.formsets["prices"].forms[: len(self._price_entries)]
        for f in prices:
            if f in initial_prices and not f.has_changed():
                accelerators.append(self._price_entries[initial_prices.index(f)])
                continue
            entry = f.entry()
            name = entry.pop("name")
            try:
                accelerators.append(price_override(name, entry))
            except ClustersimError as exc:
                f.add_error(None, str(exc))
        self._index["accelerators"] = [*own, *prices]
        if accelerators:
            spec["accelerators"] = accelerators
        pools = self._kept("pools")
        self._index["pools"] = list(pools)
        spec["pools"] = [f.entry() for f in pools]
        return spec

    def add_spec_error(self, exc: ValidationError) -> None:
        import re

        for message in exc.messages:
            m = re.match(r"(regions|racks|accelerators|pools)\[(\d+)\]\.?(\w*)", message)
            rows = self._index.get(m.group(1), []) if m else []
            if m and int(m.group(2)) < len(rows):
                form = rows[int(m.group(2))]
                key = m.group(3)
                form.add_error(key if key in form.fields else None, message)
            else:
                self.errors.append(message)

    def has_errors(self) -> bool:
        forms_ = [f for fs in self.formsets.values() for f in fs.forms]
        return bool(self.errors or self.meta.errors or any(f.errors for f in forms_))


class _WhatIfForm(forms.Form):
    op = forms.CharField(widget=forms.HiddenInput)
    name = forms.CharField(
        max_length=200,
        required=False,
        label="Variant name",
        help_text="Blank: the cluster's name and the change.",
    )

    def __init__(self, *args: Any, cluster: Cluster, **kwargs: Any) -> None:
        from clustersim.variants import pool_names

        super().__init__(*args, **kwargs)
        self.cluster = cluster
        self.pools = pool_names(cluster.spec)
        self.order_fields([*(k for k in self.fields if k != "name"), "name"])

    def pool_choices(self) -> list[tuple[str, str]]:
        out = []
        for name, pool in zip(self.pools, self.cluster.spec.get("pools") or [], strict=True):
            size = f"{pool.get('nodes')} × {pool.get('devices_per_node', '?')}"
            out.append((name, f"{name} ({pool.get('accelerator')}, {size})"))
        return out

    def params(self) -> dict[str, Any]:
        d = self.cleaned_data
        return {k: v for k, v in d.items() if k not in ("op", "name") and v not in (None, "")}


class AddPoolForm(_WhatIfForm):
    """Add N devices of a type in a new pool."""

    title = "Add devices in a new pool"

    accelerator = forms.CharField(
        max_length=100, widget=forms.TextInput(attrs={"list": "accelerator-names"})
    )
    devices = forms.IntegerField(min_value=1, help_text="How many devices (whole nodes).")
    devices_per_node = forms.IntegerField(
        min_value=1, max_value=1024, required=False, help_text="Blank: 8 for GPUs, 4 for TPUs."
    )
    region = forms.ChoiceField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        regions = [str(r.get("name")) for r in self.cluster.spec.get("regions") or []]
        self.fields["region"].choices = [("", "the first"), *((r, r) for r in regions)]
        self.initial.setdefault("op", "add_pool")


class ReplaceTypeForm(_WhatIfForm):
    """Give a pool another accelerator type."""

    title = "Replace a pool's type"

    pool = forms.ChoiceField()
    accelerator = forms.CharField(
        max_length=100,
        label="New type",
        widget=forms.TextInput(attrs={"list": "accelerator-names"}),
        help_text="Same nodes and devices per node; intra-node links: the new type's default.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["pool"].choices = self.pool_choices()
        self.initial.setdefault("op", "replace_type")


class ScaleForm(_WhatIfForm):
    """Scale every pool (or one) by a factor."""

    title = "Scale pools"

    factor = forms.FloatField(
        help_text="Nodes × factor, to the nearest whole node (halves up); e.g. 1.5 or 0.5."
    )
    pool = forms.ChoiceField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["pool"].choices = [("", "every pool"), *self.pool_choices()]
        self.initial.setdefault("op", "scale")


WHAT_IF_FORMS: dict[str, type[_WhatIfForm]] = {
    "add_pool": AddPoolForm,
    "replace_type": ReplaceTypeForm,
    "scale": ScaleForm,
}


def what_if_forms(cluster: Cluster, bound: _WhatIfForm | None = None) -> list[_WhatIfForm]:
    """The cluster page's what-if forms (``bound`` in place of its kind's blank one)."""
    out: list[_WhatIfForm] = []
    for op, cls in WHAT_IF_FORMS.items():
        if bound is not None and bound.prefix == op:
            out.append(bound)
        else:
            out.append(cls(cluster=cluster, prefix=op))
    return out


def attach_what_if_error(form: _WhatIfForm, exc: ValidationError) -> None:
    """A service error ``"devices: ..."`` next to its field, else above the form."""
    for message in exc.messages:
        head, sep, _ = message.partition(": ")
        form.add_error(head if sep and head in form.fields else None, message)


class WorkloadEditForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60})
    )


def _numbers_text(values: list[Any]) -> str:
    return ", ".join(
        str(int(v)) if isinstance(v, float) and v.is_integer() else str(v) for v in values
    )


def experiment_initial(exp: Any) -> dict[str, Any]:
    """The create form's initial values for a re-run of ``exp`` with changes: its clusters,
    workloads, policies and parameters, load factors, seeds, placement, mode and cost
    horizon.

    A policy listed twice with different parameters (possible over the API) keeps its first
    parameters: the form takes one set per policy."""
    params: dict[str, Any] = {}
    names: list[str] = []
    for p in exp.policies:
        if p["name"] not in names:
            names.append(p["name"])
            if p.get("params"):
                params[p["name"]] = p["params"]
    initial = {
        "name": f"{exp.name} (re-run)"[:200],
        "clusters": list(exp.clusters.values_list("pk", flat=True)),
        "workloads": list(exp.workloads.values_list("pk", flat=True)),
        "policies": names,
        "params": json.dumps(params) if params else "",
        "load_factors": _numbers_text(exp.load_factors),
        "seeds": _numbers_text(exp.seeds),
        "placement": exp.placement,
        "compat": exp.compat,
        "cost_horizon_hours": exp.cost_horizon_hours,
    }
    if exp.elastic:  # elastic bounds by a rule (blank: as the trace gives them)
        initial["elastic"] = exp.elastic
    if exp.aux_demand:  # CPU/memory demands by a rule (blank: the workloads' own)
        initial["aux_demand"] = exp.aux_demand
    if exp.failures is not None:  # node failures on, with their settings
        from clustersim.failures import SETTINGS

        initial["failures"] = True
        initial.update({n: exp.failures.get(n) for n, *_ in SETTINGS})
    if exp.network is not None:  # network contention on
        initial["network"] = True
        if exp.network.get("share_nics") is False:
            initial["share_nics"] = "false"
    if exp.stragglers is not None:  # slow nodes on, with their settings
        initial["stragglers"] = True
        initial["slow_share"] = exp.stragglers.get("share")
        initial["slow_speed"] = exp.stragglers.get("speed")
        initial["avoid_slow"] = bool(exp.stragglers.get("avoid"))
    if exp.spot is not None:  # spot reclaims on, with their trace and checkpoints
        from clustersim.spot import TRACE_COLUMNS

        initial["spot"] = True
        initial["checkpoint_interval_s"] = exp.spot.get("checkpoint_interval_s")
        initial["checkpoint_overhead_s"] = exp.spot.get("checkpoint_overhead_s")
        if exp.spot.get("trace"):
            lines = [",".join(TRACE_COLUMNS)]
            lines += [",".join(f"{r[c]:g}" for c in TRACE_COLUMNS) for r in exp.spot["trace"]]
            initial["spot_trace"] = "\n".join(lines)
    return initial


def compare_initial(owner: Any, clusters: list[Cluster]) -> dict[str, Any]:
    """The create form's initial values to compare ``clusters`` (an original and its
    variants): the workloads, policies, loads and seeds of the latest experiment that used
    the first of them, else the owner's latest ready workload under FIFO."""
    from planner.models import Experiment

    base = (
        Experiment.objects.owned_by(owner).filter(clusters=clusters[0]).order_by("-pk").first()
        if clusters
        else None
    )
    initial: dict[str, Any] = {}
    if base is not None:
        initial = experiment_initial(base)
    else:
        latest = (
            Workload.objects.owned_by(owner)
            .filter(status=WorkloadStatus.READY)
            .order_by("-created", "-pk")
            .first()
        )
        initial = {"workloads": [latest.pk] if latest else [], "policies": ["fifo"]}
    initial["clusters"] = [c.pk for c in clusters]
    initial["name"] = " vs ".join(c.name for c in clusters)[:200]
    return initial
