"""Upload limits hold before a body is read, and an accepted upload is streamed to storage.

The limits are made small here (1 MiB a file) so that the tests move little data; the
production figures (a 2 GB body refused, a 255 MB upload stored) are measured on gunicorn by
``bench/chaos.py``.
"""

from __future__ import annotations

import hashlib
import io
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile, TemporaryUploadedFile
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from planner import storage
from planner.models import Artefact, Workload
from tests.django.conftest import GAVEL_TRACE

pytestmark = pytest.mark.django_db

MiB = 1024 * 1024


@pytest.fixture
def small_limits(settings: Any) -> None:
    settings.CLUSTERSIM_UPLOAD_MAX_BYTES = MiB
    settings.CLUSTERSIM_REQUEST_MAX_BYTES = 4 * MiB


class Never(io.RawIOBase):
    """A request body that must not be read."""

    def read(self, *args: Any) -> bytes:
        raise AssertionError("the body was read")


class Counted(io.BytesIO):
    """A request body that counts the bytes read from it."""

    taken = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.taken += len(data)
        return data


def multipart(content: bytes, name: str = "trace.csv") -> bytes:
    return encode_multipart(BOUNDARY, {"file": SimpleUploadedFile(name, content), "name": "w"})


def post_body(client: Any, url: str, body: io.IOBase, length: int, **extra: Any) -> Any:
    return client.generic(
        "POST",
        url,
        b"",
        content_type=MULTIPART_CONTENT,  # the API client's way; the test client's below
        **{
            "CONTENT_TYPE": MULTIPART_CONTENT,
            "CONTENT_LENGTH": str(length),
            "wsgi.input": body,
            **extra,
        },
    )


# -- refused from the headers ---------------------------------------------------------------------


def test_a_2_gb_upload_is_refused_before_its_body_is_read(api: Any) -> None:
    r = post_body(api, "/api/v1/workloads/", Never(), 2 * 1024**3)
    assert r.status_code == 413
    assert r.json()["detail"] == (
        "the request is 2,147,483,648 bytes; an upload (files and fields) may be at most "
        "269,484,032 bytes (257 MiB)"
    )
    assert not Workload.objects.exists() and not Artefact.objects.exists()


def test_the_upload_page_refuses_it_too(web: Client) -> None:
    r = post_body(web, "/workloads/upload/", Never(), 2 * 1024**3)
    assert r.status_code == 413 and r["Content-Type"].startswith("text/plain")
    assert "an upload (files and fields) may be at most" in r.content.decode()


def test_a_large_json_body_is_refused_before_it_is_read(api: Any) -> None:
    r = api.generic(
        "POST",
        "/api/v1/clusters/",
        b"",
        **{
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(50 * MiB),
            "wsgi.input": Never(),
        },
    )
    assert r.status_code == 413 and "a request body may be at most" in r.json()["detail"]


def test_a_chunked_body_is_refused_with_length_required(api: Any) -> None:
    r = api.generic(
        "POST",
        "/api/v1/workloads/",
        b"",
        **{
            "CONTENT_TYPE": MULTIPART_CONTENT,
            "HTTP_TRANSFER_ENCODING": "chunked",
            "wsgi.input": Never(),
        },
    )
    assert r.status_code == 411 and "Content-Length" in r.json()["detail"]


# -- a file past the limit inside a body that is not ---------------------------------------------


def test_reading_stops_once_a_file_passes_the_limit(api: Any, small_limits: None) -> None:
    body = multipart(os.urandom(3 * MiB), "big.csv")
    stream = Counted(body)
    r = post_body(api, "/api/v1/workloads/", stream, len(body))
    assert r.status_code == 413, r.content
    assert r.json()["detail"] == (
        "big.csv: larger than the upload limit of 1,048,576 bytes (1 MiB)"
    )
    assert stream.taken < 2 * MiB  # the file's first MiB and a chunk, not its 3 MiB
    assert not Workload.objects.exists() and not Artefact.objects.exists()


@pytest.mark.parametrize("enforce_csrf", [False, True])
def test_the_upload_page_stops_too_whatever_reads_the_form_first(
    owner: Any, small_limits: None, enforce_csrf: bool
) -> None:
    web = Client(enforce_csrf_checks=enforce_csrf)  # with CSRF checks the middleware reads it
    web.force_login(owner)
    web.get("/workloads/upload/")  # the CSRF cookie
    body = multipart(os.urandom(2 * MiB), "big.csv")
    stream = Counted(body)
    r = post_body(web, "/workloads/upload/", stream, len(body))
    assert r.status_code == 413
    assert "big.csv: larger than the upload limit" in r.content.decode()
    assert stream.taken < 2 * MiB
    assert not Workload.objects.exists()


def test_a_file_within_the_limit_is_accepted(api: Any, small_limits: None) -> None:
    content = GAVEL_TRACE.read_bytes()
    assert len(content) < MiB
    body = multipart(content, "gavel.trace")
    r = post_body(api, "/api/v1/workloads/", Counted(body), len(body))
    assert r.status_code == 202, r.content
    source = Workload.objects.get().source
    assert source is not None and source.read() == content


# -- streamed into storage ------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, storage.CHUNK_BYTES - 1, 3 * storage.CHUNK_BYTES + 17])
def test_a_stored_stream_reads_back_as_the_bytes_build_would_keep(
    owner: Any, tmp_path: Path, size: int
) -> None:
    content = (b"job,1,2,3\n" * (size // 10 + 1))[: size // 2] + os.urandom(size - size // 2)
    path = tmp_path / "upload.bin"
    path.write_bytes(content)
    with path.open("rb") as f:
        art = storage.store(owner, Artefact.Kind.UPLOAD, f, filename="upload.bin")
    built = Artefact.build(owner, Artefact.Kind.UPLOAD, content, filename="upload.bin")
    art = Artefact.objects.get(pk=art.pk)
    assert art.read() == content
    assert (art.size, art.sha256, art.encoding) == (size, built.sha256, "gzip")
    assert art.sha256 == hashlib.sha256(content).hexdigest()
    assert art.stored_size == len(bytes(art.data))
    # the instance returned reads its bytes from the database when asked
    fresh = storage.store(owner, Artefact.Kind.UPLOAD, content, filename="again.bin")
    assert fresh.read() == content


def test_storing_a_large_upload_holds_a_few_chunks_in_memory(owner: Any, tmp_path: Path) -> None:
    size = 48 * MiB
    path = tmp_path / "large.bin"
    with path.open("wb") as f:  # incompressible: the compressed copy is as large
        for _ in range(size // MiB):
            f.write(os.urandom(MiB))
    # on disk, as Django spools an upload larger than FILE_UPLOAD_MAX_MEMORY_SIZE
    upload = TemporaryUploadedFile("large.bin", "application/octet-stream", size, None)
    with path.open("rb") as src:
        while chunk := src.read(MiB):
            upload.write(chunk)
    upload.flush()
    tracemalloc.start()
    try:
        art = storage.store(owner, Artefact.Kind.UPLOAD, upload, filename="large.bin")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        upload.close()
    assert peak < 16 * MiB, f"peak {peak / MiB:.0f} MiB for a {size // MiB} MiB upload"
    assert Artefact.objects.get(pk=art.pk).size == size
