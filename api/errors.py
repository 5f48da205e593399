"""Error pages of the API in JSON: a URL under ``/api/`` that matches no route (404) or a
server error (500) answers ``{"detail": ...}`` like every other API error, not Django's HTML
page. Other URLs keep Django's pages. Installed as ``handler404`` and ``handler500`` in
``config/urls.py`` (Django uses them when ``DEBUG`` is off)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults


def _api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Any = None) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "Server error."}, status=500)
    return defaults.server_error(request)
