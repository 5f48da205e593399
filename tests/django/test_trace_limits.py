"""Uploads over the trace-reading limits, or with absurd values, fail to parse with a message
naming the limit (and its setting) or the line and field, instead of taking the worker down
or parsing "ready" and failing every run."""

from __future__ import annotations

import gzip
import io
from typing import Any

from django.test import override_settings

HEADER = b"timestamp,duration,num_gpus,gpu_time,cluster\n"
ROW = b"2017-10-01 00:00:00,60,1,60,c\n"


def _upload(api: Any, content: bytes, filename: str, **extra: Any) -> Any:
    f = io.BytesIO(content)
    f.name = filename
    return api.post("/api/v1/workloads/", {"file": f, **extra}, format="multipart")


def _parsed(api: Any, callbacks: Any, content: bytes, filename: str, **extra: Any) -> Any:
    with callbacks(execute=True):
        r = _upload(api, content, filename, **extra)
    assert r.status_code == 202
    return api.get(f"/api/v1/workloads/{r.json()['id']}/").json()


@override_settings(CLUSTERSIM_TRACE_MAX_DECOMPRESSED_BYTES=1 << 20)
def test_a_gzip_bomb_fails_naming_the_limit_and_its_setting(
    api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    bomb = gzip.compress(HEADER + b"\n" * (4 << 20))  # 4 MiB of blank lines in 4 kB
    assert len(bomb) < 10_000
    w = _parsed(api, django_capture_on_commit_callbacks, bomb, "bomb.csv.gz")
    assert w["status"] == "failed"
    assert "bomb.csv.gz: decompressed content larger than the limit of 1 MiB" in w["error"]
    assert "CLUSTERSIM_TRACE_MAX_DECOMPRESSED_BYTES" in w["error"]
    # the same upload parses once the limit allows it
    with override_settings(CLUSTERSIM_TRACE_MAX_DECOMPRESSED_BYTES=8 << 20):
        w = _parsed(api, django_capture_on_commit_callbacks, gzip.compress(HEADER + ROW), "a.gz")
    assert w["status"] == "ready"


@override_settings(CLUSTERSIM_TRACE_MAX_LINE_BYTES=1000, CLUSTERSIM_TRACE_MAX_HEADER_FIELDS=50)
def test_long_lines_and_wide_headers_fail_at_their_line(
    api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    long = HEADER + ROW + b"x" * 2000 + b"\n" + ROW
    w = _parsed(api, django_capture_on_commit_callbacks, long, "long.csv", format="philly")
    assert w["status"] == "failed"
    assert w["report"]["error"]["line"] == 3
    assert "CLUSTERSIM_TRACE_MAX_LINE_BYTES" in w["error"]
    wide = HEADER.rstrip(b"\n") + b"".join(b",c%d" % i for i in range(60)) + b"\n"
    w = _parsed(api, django_capture_on_commit_callbacks, wide + ROW, "wide.csv", format="philly")
    assert w["status"] == "failed"
    assert "header has 65 fields, more than the limit of 50 fields" in w["error"]


def test_an_absurd_value_fails_at_its_line_instead_of_parsing_ready(
    api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    bad = HEADER + ROW + b"2017-10-01 00:01:00,1e308,1,60,c\n"
    w = _parsed(api, django_capture_on_commit_callbacks, bad, "bad.csv")
    assert w["status"] == "failed"
    assert (w["report"]["error"]["line"], w["report"]["error"]["field"]) == (3, "duration")
    assert "bad.csv:3 [duration]: work = 1e+308 is out of range" in w["error"]


@override_settings(CLUSTERSIM_TRACE_MAX_ROWS=3)
def test_a_file_of_more_rows_than_the_setting_fails(
    api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    w = _parsed(api, django_capture_on_commit_callbacks, HEADER + ROW * 3, "rows.csv")
    assert w["status"] == "failed"
    assert w["report"]["error"]["line"] == 4
    assert "CLUSTERSIM_TRACE_MAX_ROWS" in w["error"]
