"""Domain models. Every object has an owner; querysets offer ``owned_by(user)``.

A run is a row with a state machine (DESIGN §2): queued → running → succeeded / failed /
cancelled. The Celery task advances it (see :mod:`planner.runner`); the row is the truth, not
the result backend. Large results (job tables, per-job outcomes, time series) are compressed
:class:`Artefact` rows, so workers need no filesystem shared with the web server.
"""

from __future__ import annotations

import gzip
import hashlib
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from clustersim.cluster import DEFAULT_AMORTISATION_YEARS


class OwnedQuerySet(models.QuerySet):
    def owned_by(self, user: Any) -> OwnedQuerySet:
        """Rows of ``user``; nothing for an anonymous user."""
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(owner=user)


class Owned(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created = models.DateTimeField(default=timezone.now, editable=False)
    updated = models.DateTimeField(auto_now=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        abstract = True


#: Media type of Parquet files.
PARQUET = "application/vnd.apache.parquet"


class Artefact(Owned):
    """A blob in the database: an uploaded trace, a job table, per-job results, a time series,
    a run's device stints.

    ``data`` holds the bytes as stored: gzip-compressed when ``encoding == "gzip"``, as is
    otherwise (Parquet, already compressed). :meth:`read` returns the original bytes.
    """

    class Kind(models.TextChoices):
        UPLOAD = "upload", "uploaded trace"
        JOBS = "jobs", "normalised job table (Parquet)"
        PER_JOB = "per_job", "per-job results (Parquet)"
        TIMESERIES = "timeseries", "time series (JSON)"
        STINTS = "stints", "device stints per job and node (Parquet)"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    filename = models.CharField(max_length=255, blank=True)
    content_type = models.CharField(max_length=100, default="application/octet-stream")
    encoding = models.CharField(max_length=8, blank=True)
    size = models.BigIntegerField(help_text="bytes before compression")
    stored_size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    data = models.BinaryField()

    class Meta:
        indexes = (models.Index(fields=["owner", "kind"]),)

    def __str__(self) -> str:
        return f"{self.kind} {self.filename or self.pk} ({self.size} B)"

    @classmethod
    def build(
        cls,
        owner: Any,
        kind: str,
        raw: bytes,
        *,
        filename: str = "",
        content_type: str = "application/octet-stream",
        compress: bool = True,
    ) -> Artefact:
        """An unsaved artefact for ``raw`` (gzip-compressed unless ``compress`` is false)."""
        data = gzip.compress(raw, compresslevel=6, mtime=0) if compress else raw
        return cls(
            owner=owner,
            kind=kind,
            filename=filename,
            content_type=content_type,
            encoding="gzip" if compress else "",
            size=len(raw),
            stored_size=len(data),
            sha256=hashlib.sha256(raw).hexdigest(),
            data=data,
        )

    @classmethod
    def build_parquet(cls, owner: Any, kind: str, raw: bytes, filename: str) -> Artefact:
        """An unsaved Parquet artefact, stored as is (its columns are zstd-compressed)."""
        return cls.build(owner, kind, raw, filename=filename, content_type=PARQUET, compress=False)

    def read(self) -> bytes:
        data = bytes(self.data)
        return gzip.decompress(data) if self.encoding == "gzip" else data


class AcceleratorType(Owned):
    """A user-defined accelerator type (built-in ones come from ``clustersim.catalog``).

    A cluster spec whose pool names this type gets it added to its ``accelerators`` list when
    it is simulated (:meth:`Cluster.effective_spec`). A name equal to a catalog key replaces
    the catalog's type for this user's clusters (e.g. to change a price).
    """

    class Kind(models.TextChoices):
        GPU = "gpu"
        TPU = "tpu"
        NPU = "npu"
        EDGE = "edge"

    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.GPU)
    fp16_tflops = models.FloatField(help_text="dense FP16/BF16 peak, TFLOPS")
    memory_gb = models.FloatField()
    memory_bw_tbs = models.FloatField(help_text="memory bandwidth, TB/s")
    busy_w = models.FloatField(help_text="power when busy, W")
    idle_w = models.FloatField(null=True, blank=True, help_text="power when idle, W")
    price_per_hour = models.FloatField(help_text="on-demand (cloud) price, $ per device-hour")
    release_year = models.PositiveIntegerField()
    purchase_usd = models.FloatField(
        null=True,
        blank=True,
        help_text="capital cost of one device, $ (blank: price_per_hour × 5,112.5 h)",
    )
    amortisation_years = models.FloatField(
        default=DEFAULT_AMORTISATION_YEARS,
        help_text="years over which an owner spreads the purchase price",
    )
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ("name", "id")
        constraints = (
            models.UniqueConstraint(fields=["owner", "name"], name="accelerator_name_per_owner"),
        )

    def __str__(self) -> str:
        return self.name

    def to_spec(self) -> dict[str, Any]:
        """The entry of a cluster spec's ``accelerators`` list."""
        spec: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "fp16_tflops": self.fp16_tflops,
            "memory_gb": self.memory_gb,
            "memory_bw_tbs": self.memory_bw_tbs,
            "busy_w": self.busy_w,
            "price_per_hour": self.price_per_hour,
            "release_year": self.release_year,
        }
        if self.idle_w is not None:
            spec["idle_w"] = self.idle_w
        if self.purchase_usd is not None:
            spec["purchase_usd"] = self.purchase_usd
        spec["amortisation_years"] = self.amortisation_years
        return spec


class Cluster(Owned):
    """An inventory: the simulator's cluster spec JSON (``clustersim.spec``), unchanged."""

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    spec = models.JSONField()
    preset = models.CharField(max_length=64, blank=True, help_text="preset it was built from")
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="clones",
        help_text="cluster it was cloned from",
    )
    total_devices = models.PositiveIntegerField(default=0)
    device_types = models.JSONField(default=list, help_text="accelerator type names present")
    import_report = models.JSONField(
        null=True, blank=True, help_text="what the importer understood (imported node lists)"
    )

    class Meta:
        ordering = ("-created", "-id")

    def __str__(self) -> str:
        return self.name

    def effective_spec(self) -> dict[str, Any]:
        """The spec with the owner's accelerator types that its pools name added."""
        return effective_spec(self.spec, AcceleratorType.objects.filter(owner_id=self.owner_id))

    def clone(self, name: str | None = None) -> Cluster:
        """A saved copy owned by the same user, pointing back here."""
        return Cluster.objects.create(
            owner_id=self.owner_id,
            name=name or f"{self.name} (copy)",
            description=self.description,
            spec=self.spec,
            preset=self.preset,
            parent=self,
            total_devices=self.total_devices,
            device_types=list(self.device_types),
        )


def effective_spec(spec: dict[str, Any], types: Any) -> dict[str, Any]:
    """``spec`` plus the user-defined ``types`` its pools name that it does not define itself."""
    from clustersim.catalog import normalize_name

    defined = {normalize_name(str(a.get("name", ""))) for a in spec.get("accelerators", [])}
    wanted = {normalize_name(str(p.get("accelerator", ""))) for p in spec.get("pools", [])}
    extra = [
        t.to_spec()
        for t in types
        if normalize_name(t.name) in wanted and normalize_name(t.name) not in defined
    ]
    if not extra:
        return spec
    return {**spec, "accelerators": [*spec.get("accelerators", []), *extra]}


class WorkloadStatus(models.TextChoices):
    PENDING = "pending"
    PARSING = "parsing"
    READY = "ready"
    FAILED = "failed"


class WorkloadOrigin(models.TextChoices):
    UPLOAD = "upload"
    SYNTHETIC = "synthetic"
    DERIVED = "derived"


class Workload(Owned):
    """A trace and its normalised job table: uploaded and parsed, or built from a recipe.

    Synthetic and derived workloads (:mod:`planner.recipes`) keep their ``recipe``; a derived
    one points at its ``parent``. All three are built by the same worker task.
    """

    name = models.CharField(max_length=200)
    origin = models.CharField(
        max_length=16, choices=WorkloadOrigin.choices, default=WorkloadOrigin.UPLOAD
    )
    recipe = models.JSONField(null=True, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="derived"
    )
    description = models.TextField(blank=True)
    format = models.CharField(
        max_length=32, blank=True, help_text="requested format; blank: detect"
    )
    detected_format = models.CharField(max_length=32, blank=True)
    status = models.CharField(
        max_length=16, choices=WorkloadStatus.choices, default=WorkloadStatus.PENDING
    )
    original_filename = models.CharField(max_length=255)
    upload_size = models.BigIntegerField(default=0)
    source = models.ForeignKey(
        Artefact, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    jobs = models.ForeignKey(
        Artefact, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    report = models.JSONField(null=True, blank=True)
    summary = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    parse_started = models.DateTimeField(null=True, blank=True)
    parsed_at = models.DateTimeField(null=True, blank=True)
    parse_attempts = models.PositiveIntegerField(
        default=0, help_text="claims of the parse (a worker lost or a database outage each)"
    )
    dispatched_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="when its parse message was last sent; null: not sent (the sweeper sends it)",
    )

    class Meta:
        ordering = ("-created", "-id")
        indexes = (models.Index(fields=["status", "dispatched_at"]),)

    def __str__(self) -> str:
        return self.name


#: The compatibility modes of :mod:`clustersim.compat` (a test keeps the two lists equal; the
#: web process does not import the simulator to know them).
COMPAT_CHOICES = (
    ("gavel", "Gavel's simulator"),
    ("pollux", "Pollux's simulator"),
    ("synergy", "Synergy's simulator"),
    ("tiresias", "Tiresias's simulator"),
)


class Experiment(Owned):
    """A grid: clusters × workloads × policies (with parameters) × load factors × seeds.

    A point of the grid whose results cannot depend on the seed (neither its policy nor its
    placement draws from it, and no failures or slow nodes are drawn:
    :func:`clustersim.engine.seed_matters`) is run once, with the first of ``seeds``, and that
    run is marked ``seed_independent``; the others get one run per seed. ``seeds`` keeps every
    seed asked for; ``runs_total`` counts the runs made. ``failures`` (null: off) turns node
    failures on for every run, ``network`` network contention, ``stragglers`` slow nodes and
    ``spot`` the reclaims of the clusters' spot pools likewise. ``elastic`` (blank: as the
    workloads say) is the rule that lets every run's rigid jobs shrink and grow
    (:func:`clustersim.elastic.apply_elastic`, ``docs/elastic.md``). ``aux_demand`` (blank:
    the workloads' own) is the rule that gives every run's jobs without a CPU or memory demand
    one (:func:`clustersim.resources.apply_demand`, ``docs/resources.md``).
    """

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    clusters = models.ManyToManyField(Cluster, related_name="experiments")
    workloads = models.ManyToManyField(Workload, related_name="experiments")
    policies = models.JSONField(help_text='[{"name": "tiresias", "params": {...}}, ...]')
    placement = models.CharField(
        max_length=32,
        default="consolidate",
        blank=True,
        help_text="blank: each policy's default under the compatibility mode",
    )
    compat = models.CharField(
        max_length=16,
        blank=True,
        default="",
        choices=COMPAT_CHOICES,
        help_text="model only what this reference simulator models (clustersim.compat)",
    )
    load_factors = models.JSONField(default=list)
    seeds = models.JSONField(default=list)
    until_s = models.FloatField(null=True, blank=True, help_text="simulation horizon, s")
    cost_horizon_hours = models.FloatField(
        null=True,
        blank=True,
        help_text="planning horizon of the owned-cluster cost, h (blank: each workload's "
        "arrival span, at least 1 h; docs/metrics.md)",
    )
    failures = models.JSONField(
        null=True,
        blank=True,
        default=None,
        help_text="node failures and checkpoint restarts (clustersim.failures.check_settings): "
        "checkpoint_interval_s, checkpoint_overhead_s, mtbf_hours, repair_hours; null: off",
    )
    network = models.JSONField(
        null=True,
        blank=True,
        default=None,
        help_text="network contention (clustersim.network.check_settings): share_nics; null: off",
    )
    stragglers = models.JSONField(
        null=True,
        blank=True,
        default=None,
        help_text="slow nodes (clustersim.stragglers.check_settings): share, speed, avoid; "
        "null: off",
    )
    spot = models.JSONField(
        null=True,
        blank=True,
        default=None,
        help_text="reclaims of the spot pools (clustersim.spot.check_settings): trace (rows of "
        "node, reclaimed_at_s, returned_at_s; null: drawn at the pools' rates), "
        "checkpoint_interval_s, checkpoint_overhead_s; null: off",
    )
    elastic = models.CharField(
        max_length=32,
        blank=True,
        default="",
        help_text="device-count bounds of the rigid jobs, LO-HI, each side xF (F times "
        "num_gpus) or a count, e.g. x0.5-x2 (clustersim.elastic.parse_rule); blank: as the "
        "workloads say",
    )
    aux_demand = models.CharField(
        max_length=40,
        blank=True,
        default="",
        help_text="CPU/memory demand rule of the jobs without one: none, ignore, synergy, "
        "proportional or per-gpu:C,M (clustersim.resources.parse_rule); blank: the workloads' "
        "own demands only",
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    runs_total = models.PositiveIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created", "-id")

    def __str__(self) -> str:
        return self.name


class RunState(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE_STATES = (RunState.QUEUED, RunState.RUNNING)
FINAL_STATES = (RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED)


class RunQuerySet(OwnedQuerySet):
    def active(self) -> RunQuerySet:
        return self.filter(state__in=ACTIVE_STATES)


class Run(Owned):
    """One simulation of the grid. Advanced only by :mod:`planner.runner` (conditional updates).

    ``attempts`` counts claims; the claim number is the fencing token: a worker writes
    progress and results only while the row is ``running`` with its own attempt number, so a
    redelivered or reaped task can never write a second result.

    A queued run with ``dispatched_at`` null waits in the database; the dispatcher
    (:mod:`planner.dispatch`) sends it to the simulation queue, a few runs per user at a time.
    """

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="runs")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="runs")
    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, related_name="runs")
    policy = models.CharField(max_length=64)
    params = models.JSONField(default=dict, blank=True)
    placement = models.CharField(max_length=32, default="consolidate")
    load_factor = models.FloatField(default=1.0)
    seed = models.IntegerField(default=0)
    seed_independent = models.BooleanField(
        default=False,
        help_text="its results do not depend on the seed (neither the policy nor the placement "
        "draws from it): run once, with the experiment's first seed, for all its seeds",
    )

    state = models.CharField(max_length=16, choices=RunState.choices, default=RunState.QUEUED)
    progress = models.FloatField(default=0.0, help_text="share of jobs arrived, 0..1")
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=255, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(default=timezone.now)
    dispatched_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="when its simulate message was last sent; null while it waits for the "
        "dispatcher (planner.dispatch)",
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    wall_s = models.FloatField(null=True, blank=True, help_text="seconds the simulation took")
    events = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)

    summary = models.JSONField(null=True, blank=True)
    per_job = models.ForeignKey(
        Artefact, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    timeseries = models.ForeignKey(
        Artefact, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    stints = models.ForeignKey(
        Artefact,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="who held which devices when (none for runs stored before stints existed)",
    )

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ("id",)
        indexes = (
            models.Index(fields=["state", "heartbeat"]),
            models.Index(fields=["experiment", "state"]),
            models.Index(fields=["state", "dispatched_at"]),
        )

    def __str__(self) -> str:
        return f"run {self.pk}: {self.policy} x{self.load_factor} seed {self.seed}"

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_STATES


class Study(Owned):
    """A capacity-planning study (issue 17): a search over inventories with the simulator in
    the loop (:mod:`clustersim.advisor`), advanced by Celery tasks (:mod:`planner.studies`).

    ``problem`` is :meth:`clustersim.advisor.Problem.to_dict` as validated at creation, the
    base cluster's spec copied in (editing the cluster later does not change the study).
    Each candidate evaluated is a :class:`StudyEvaluation` row: the rows are the study's
    state, so a study resumes from them after any interruption and loses no finished
    evaluation. ``round`` counts the batches asked (a conditional update on it makes one
    advance, of several racing, the one that asks the next batch). ``answer`` is filled when
    the study succeeds (:func:`planner.studies.answer`).
    """

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Phase(models.TextChoices):
        SEARCH = "search"
        SENSITIVITY = "sensitivity"
        GROWTH = "growth"
        DONE = "done"

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, related_name="studies")
    base_cluster = models.ForeignKey(
        Cluster, null=True, blank=True, on_delete=models.SET_NULL, related_name="studies"
    )
    problem = models.JSONField(help_text="clustersim.advisor.Problem.to_dict()")
    growth = models.JSONField(
        default=list, blank=True, help_text="load factors of the growth scenario; []: none"
    )
    budget = models.PositiveIntegerField(default=40, help_text="evaluations of the search")
    seed = models.IntegerField(default=0, help_text="seed of the search's proposals")
    batch = models.PositiveIntegerField(default=2, help_text="candidates evaluated in parallel")
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    phase = models.CharField(max_length=16, choices=Phase.choices, default=Phase.SEARCH)
    round = models.PositiveIntegerField(default=0)
    answer = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cluster = models.ForeignKey(
        Cluster,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="the recommended inventory as a cluster (after apply)",
    )
    experiment = models.ForeignKey(
        Experiment,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="the experiment comparing it with the base (after apply)",
    )

    class Meta:
        ordering = ("-created", "-id")
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.name


class StudyEvaluation(models.Model):
    """One candidate of a study, simulated by one task (:func:`planner.studies.evaluate`).

    ``kind`` is the phase that asked for it; ``index`` the order it was asked in (the search
    is rebuilt by telling the finished rows in that order). ``attempts`` is the fencing
    token, as for runs: only the claim that wrote ``attempts`` may store the result.
    """

    class State(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="evaluations")
    kind = models.CharField(max_length=16, choices=Study.Phase.choices)
    index = models.PositiveIntegerField()
    counts = models.JSONField(help_text="nodes per type of the decision space")
    key = models.CharField(max_length=200, help_text="the counts as text, for uniqueness")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=255, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(
        null=True, blank=True, help_text="clustersim.advisor.Evaluation.to_dict()"
    )
    error = models.TextField(blank=True)

    class Meta:
        ordering = ("study", "index")
        constraints = (
            models.UniqueConstraint(
                fields=("study", "kind", "key"), name="one_evaluation_per_candidate"
            ),
        )
        indexes = (models.Index(fields=["state", "heartbeat"]),)

    def __str__(self) -> str:
        return f"study {self.study_id} {self.kind} {self.key}"
