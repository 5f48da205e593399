from django.contrib import admin

from planner.models import AcceleratorType, Artefact, Cluster, Experiment, Run, Workload


@admin.register(AcceleratorType)
class AcceleratorTypeAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "kind", "fp16_tflops", "memory_gb", "price_per_hour")
    list_filter = ("kind",)
    search_fields = ("name",)


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "preset", "total_devices", "created")
    search_fields = ("name",)
    raw_id_fields = ("parent",)


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "status", "detected_format", "upload_size", "created")
    list_filter = ("status", "detected_format")
    exclude = ("source", "jobs")
    readonly_fields = ("report", "summary")


class RunInline(admin.TabularInline):
    model = Run
    fields = ("policy", "load_factor", "seed", "state", "progress", "attempts", "error")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "state", "runs_total", "created", "finished_at")
    list_filter = ("state",)
    inlines = (RunInline,)


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
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
