"""Forms of the dashboard; they validate through the same services the API uses."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from planner import services
from planner.models import Cluster, Workload, WorkloadStatus


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
    seeds = forms.CharField(initial="0", help_text="Comma-separated seeds.")
    placement = forms.ChoiceField(initial="consolidate")

    def __init__(self, *args: Any, owner: Any = None, **kwargs: Any) -> None:
        from scheduling.registry import PLACEMENTS, POLICIES

        super().__init__(*args, **kwargs)
        self.owner = owner
        self.fields["clusters"].queryset = Cluster.objects.owned_by(owner)
        self.fields["workloads"].queryset = Workload.objects.owned_by(owner).filter(
            status=WorkloadStatus.READY
        )
        self.fields["policies"].choices = [(n, n) for n in POLICIES]
        self.fields["placement"].choices = [(n, n) for n in PLACEMENTS]

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
