"""Request bodies are bounded before they are read.

- :class:`RequestSizeLimitMiddleware` (first in ``MIDDLEWARE``) answers **413** from the
  ``Content-Length`` header alone, before a byte of the body is read: a multipart body may
  take ``CLUSTERSIM_REQUEST_MAX_BYTES`` (the upload limit plus 1 MiB for the other fields),
  any other body ``DATA_UPLOAD_MAX_MEMORY_SIZE``. A chunked body (no ``Content-Length``) is
  answered **411**: Django would not read it and would see an empty form instead.
- :class:`CappedUploadHandler` (first in ``FILE_UPLOAD_HANDLERS``) counts each uploaded
  file's bytes as the multipart parser hands them over and stops the upload as soon as one
  file passes ``CLUSTERSIM_UPLOAD_MAX_BYTES``, so that such a file is neither spooled whole
  nor read further; the middleware then answers 413 naming the file and the limit, whatever
  the view or the CSRF check made of the interrupted form.

API answers are ``{"detail": ...}`` JSON; others plain text. A reverse proxy in front should
have the same limit (nginx: ``client_max_body_size``), so that it refuses the body before
forwarding it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError

#: Attribute of the request where :class:`CappedUploadHandler` leaves its message.
TOO_LARGE = "_clustersim_upload_too_large"


class UploadTooLarge(MultiPartParserError):
    """An uploaded file passed the upload limit (the upload stops there)."""


def _answer(request: HttpRequest, status: int, message: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": message}, status=status)
    else:
        response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response["Connection"] = "close"  # the rest of the body is not read
    return response


def _limit_text(n: int) -> str:
    return f"{n:,} bytes ({n / 2**20:.0f} MiB)"


class RequestSizeLimitMiddleware:
    """413 for a body over its limit, judged by ``Content-Length`` before reading it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        meta = request.META
        if "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower():
            return _answer(
                request, 411, "request bodies must be sent with a Content-Length (not chunked)"
            )
        try:
            length = int(meta.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0  # Django answers a malformed length itself
        multipart = meta.get("CONTENT_TYPE", "").lower().startswith("multipart/")
        limit = (
            settings.CLUSTERSIM_REQUEST_MAX_BYTES
            if multipart
            else settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        )
        if limit is not None and length > limit:
            what = "an upload (files and fields)" if multipart else "a request body"
            return _answer(
                request,
                413,
                f"the request is {length:,} bytes; {what} may be at most {_limit_text(limit)}",
            )
        response = self.get_response(request)
        message = getattr(request, TOO_LARGE, None)
        if message and response.status_code != 413:
            return _answer(request, 413, message)
        return response


class CappedUploadHandler(FileUploadHandler):
    """Stops an upload once one file passes ``CLUSTERSIM_UPLOAD_MAX_BYTES``."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        limit = settings.CLUSTERSIM_UPLOAD_MAX_BYTES
        if self.received > limit:
            message = f"{self.file_name}: larger than the upload limit of {_limit_text(limit)}"
            if self.request is not None:
                setattr(self.request, TOO_LARGE, message)
            raise UploadTooLarge(message)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler (memory or temporary file) makes the file
