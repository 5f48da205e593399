from typing import Any

from django.contrib import admin

from planner.models import AcceleratorType, Artefact, Cluster, Experiment, Run, Workload


class EditedFieldsAdmin(admin.ModelAdmin):
    """Saving a change writes only the fields the form changed: a worker may be writing the
    row's other columns (a parse result, a run's progress) at the same time."""

    def save_model(self, request: Any, obj: Any, form: Any, change: bool) -> None:
        if not change:
            obj.save()
            return
        concrete = {f.name for f in obj._meta.concrete_fields if not f.primary_key}
        fields = [name for name in form.changed_data if name in concrete]
        if fields:
            obj.save(update_fields=[*fields, "updated"])


@admin.register(AcceleratorType)
class AcceleratorTypeAdmin(EditedFieldsAdmin):
    list_display = ("name", "owner", "kind", "fp16_tflops", "memory_gb", "price_per_hour")
    list_filter = ("kind",)
    search_fields = ("name",)


@admin.register(Cluster)
class ClusterAdmin(EditedFieldsAdmin):
    list_display = ("name", "owner", "preset", "total_devices", "created")
    search_fields = ("name",)
    raw_id_fields = ("parent",)


@admin.register(Workload)
class WorkloadAdmin(EditedFieldsAdmin):
    list_display = ("name", "owner", "status", "detected_format", "upload_size", "created")
    list_filter = ("status", "detected_format")
    exclude = ("source", "jobs")
    readonly_fields = ("report", "summary")


class RunInline(admin.TabularInline):
    model = Run
    fields = (
        "policy",
        "load_factor",
        "seed",
        "seed_independent",
        "state",
        "progress",
        "attempts",
        "error",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Experiment)
class ExperimentAdmin(EditedFieldsAdmin):
    list_display = ("name", "owner", "state", "runs_total", "created", "finished_at")
    list_filter = ("state",)
    inlines = (RunInline,)


@admin.register(Run)
class RunAdmin(EditedFieldsAdmin):
    list_display = (
        "id",
        "experiment",
        "policy",
        "load_factor",
        "seed",
        "state",
        "progress",
        "attempts",
    )
    list_filter = ("state", "policy")
    exclude = ("per_job", "timeseries")
    readonly_fields = ("summary", "heartbeat", "worker")


@admin.register(Artefact)
class ArtefactAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "kind", "filename", "size", "stored_size", "created")
    list_filter = ("kind",)
    exclude = ("data",)
