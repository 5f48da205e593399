"""Parsing an uploaded trace into a job table (run by the ``planner.parse_workload`` task)."""

from __future__ import annotations

import gzip
import io
import logging
import os
import re
import shutil
import tempfile
from datetime import timedelta
from typing import IO, Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from clustersim.errors import ClustersimError, TraceError
from planner.jobtable import to_parquet, workload_summary
from planner.models import Artefact, Workload, WorkloadOrigin, WorkloadStatus

log = logging.getLogger(__name__)


def safe_filename(name: str) -> str:
    """A base name safe to create in a temporary directory (readers sniff the extension)."""
    base = os.path.basename(name.replace("\\", "/")) or "upload"
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", base).lstrip(".") or "upload"
    return base[:200]


def claim_workload(workload_id: int) -> bool:
    """Move a pending upload to parsing; a parse abandoned by a dead worker may be retaken.

    ``parse_attempts`` counts claims (compare-and-swap on it: two deliveries of one message
    cannot both win); a workload claimed ``CLUSTERSIM_RUN_MAX_ATTEMPTS`` times without an
    outcome is failed with the last reason instead.
    """
    abandoned = timezone.now() - timedelta(seconds=settings.CLUSTERSIM_PARSE_HARD_TIME_LIMIT_S)
    claimable = Q(status=WorkloadStatus.PENDING) | Q(
        status=WorkloadStatus.PARSING, parse_started__lt=abandoned
    )
    row = (
        Workload.objects.filter(pk=workload_id)
        .filter(claimable)
        .values("status", "parse_attempts", "error")
        .first()
    )
    if row is None:
        return False
    mine = Workload.objects.filter(
        pk=workload_id, status=row["status"], parse_attempts=row["parse_attempts"]
    ).filter(claimable)
    if row["parse_attempts"] >= settings.CLUSTERSIM_RUN_MAX_ATTEMPTS:
        last = row["error"] or "its worker was lost each time"
        mine.update(
            status=WorkloadStatus.FAILED,
            error=f"gave up after {row['parse_attempts']} attempts; the last: {last}"[:5000],
            parsed_at=timezone.now(),
        )
        return False
    return bool(
        mine.update(
            status=WorkloadStatus.PARSING,
            parse_started=timezone.now(),
            error="",
            parse_attempts=row["parse_attempts"] + 1,
        )
    )


def fail_workload(workload_id: int, reason: str) -> bool:
    """Fail a workload that is parsing with ``reason`` (the task's last resort)."""
    return bool(
        Workload.objects.filter(pk=workload_id, status=WorkloadStatus.PARSING).update(
            status=WorkloadStatus.FAILED, error=reason[:5000], parsed_at=timezone.now()
        )
    )


def release_workload(workload_id: int, reason: str, *, last_try: bool = False) -> bool:
    """Give a parsing workload back (a transient error): pending again, for the task's retry
    (the claim is given back, as for runs: :func:`planner.runner.release`) or, after its
    ``last_try``, for the sweeper to send again (the claim is kept: a workload whose every
    try meets the error fails after ``CLUSTERSIM_RUN_MAX_ATTEMPTS`` rounds)."""
    mine = Workload.objects.filter(pk=workload_id, status=WorkloadStatus.PARSING)
    fields: dict[str, Any] = {"status": WorkloadStatus.PENDING, "error": reason[:5000]}
    if last_try:
        fields["dispatched_at"] = None
    else:
        fields["dispatched_at"] = timezone.now()
        fields["parse_attempts"] = F("parse_attempts") - 1
    return bool(mine.filter(parse_attempts__gt=0).update(**fields))


def _copy_upload(source: Artefact, out: IO[bytes]) -> None:
    """Write an uploaded file as the user sent it, in pieces: the stored bytes are not copied
    whole again (a stored gzip encoding is undone while copying)."""
    data = source.data if isinstance(source.data, bytes) else bytes(source.data)
    if source.encoding == "gzip":
        with gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb") as stream:  # shares ``data``
            shutil.copyfileobj(stream, out, 1 << 20)
    else:
        out.write(data)


def _read_limits() -> Any:
    """The trace-reading limits of the settings (``CLUSTERSIM_TRACE_MAX_*``)."""
    from clustersim.traces import ReadLimits

    return ReadLimits(
        max_decompressed_bytes=settings.CLUSTERSIM_TRACE_MAX_DECOMPRESSED_BYTES,
        max_streamed_bytes=settings.CLUSTERSIM_TRACE_MAX_STREAMED_BYTES,
        max_line_bytes=settings.CLUSTERSIM_TRACE_MAX_LINE_BYTES,
        max_header_fields=settings.CLUSTERSIM_TRACE_MAX_HEADER_FIELDS,
        max_rows=settings.CLUSTERSIM_TRACE_MAX_ROWS,
    )


def reason(exc: BaseException) -> str:
    """Why a file could not be parsed, in words for its owner (no exception class names)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"the file could not be read: {exc.strerror}"
    return str(exc)


def _clean(text: str, tmp_path: str, shown: str) -> str:
    return text.replace(tmp_path, shown)


def parse_workload(workload_id: int) -> str:
    """Parse the upload; store the report, summary and job table; ``ready`` or ``failed``."""
    if not claim_workload(workload_id):
        return "skipped"
    workload = Workload.objects.select_related("source", "parent", "owner").get(pk=workload_id)
    if workload.origin != WorkloadOrigin.UPLOAD:
        return build_workload(workload)
    if workload.source is None:
        Workload.objects.filter(pk=workload_id).update(
            status=WorkloadStatus.FAILED, error="the uploaded file is missing"
        )
        return "failed"
    shown = workload.original_filename or "upload"
    with tempfile.TemporaryDirectory(prefix="clustersim-parse-") as tmp:
        path = os.path.join(tmp, safe_filename(shown))
        with open(path, "wb") as fh:
            _copy_upload(workload.source, fh)
        try:
            from clustersim.traces import read_trace

            jobs, report = read_trace(path, workload.format or None, limits=_read_limits())
        except TraceError as exc:
            error: dict[str, Any] = {
                "line": exc.line,
                "field": exc.field,
                "message": exc.message,
            }
            Workload.objects.filter(pk=workload_id, status=WorkloadStatus.PARSING).update(
                status=WorkloadStatus.FAILED,
                error=_clean(str(exc), path, shown),
                report={"error": error, "path": shown},
                parsed_at=timezone.now(),
            )
            return "failed"
        except (ClustersimError, OSError, ValueError) as exc:
            Workload.objects.filter(pk=workload_id, status=WorkloadStatus.PARSING).update(
                status=WorkloadStatus.FAILED,
                error=_clean(reason(exc), path, shown),
                parsed_at=timezone.now(),
            )
            return "failed"
        report_dict = report.to_dict()
    report_dict["path"] = shown
    report_dict = {
        k: ([_clean(x, path, shown) for x in v] if isinstance(v, list) else v)
        for k, v in report_dict.items()
    }
    return _store(workload, jobs, report_dict)


def _store(workload: Workload, jobs: Any, report: dict[str, Any]) -> str:
    """Save the job table and mark the workload ready (if it is still this parse's)."""
    table = Artefact.build_parquet(
        workload.owner, Artefact.Kind.JOBS, to_parquet(jobs), f"workload-{workload.pk}-jobs.parquet"
    )
    with transaction.atomic():
        table.save()
        n = Workload.objects.filter(pk=workload.pk, status=WorkloadStatus.PARSING).update(
            status=WorkloadStatus.READY,
            detected_format=str(report.get("format", "")),
            report=report,
            summary=workload_summary(jobs),
            jobs=table,
            parsed_at=timezone.now(),
        )
        if n == 0:
            transaction.set_rollback(True)
            return "lost"
    return "ready"


def build_workload(workload: Workload) -> str:
    """Build a synthetic or derived workload from its recipe (:mod:`planner.recipes`)."""
    from planner import recipes

    try:
        jobs, report = recipes.build(workload)
    except (ClustersimError, ValueError) as exc:
        Workload.objects.filter(pk=workload.pk, status=WorkloadStatus.PARSING).update(
            status=WorkloadStatus.FAILED,
            error=reason(exc),
            parsed_at=timezone.now(),
        )
        return "failed"
    return _store(workload, jobs, report)
