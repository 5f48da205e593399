"""Who may read the chart endpoints (``/charts/...``), and how their errors are answered.

The pages fetch the charts with the browser's session; scripts and notebooks fetch the same
URLs (``?format=csv`` for a chart's data) with the API's token, ``Authorization: Token <key>``
(:class:`api.authentication.CachedTokenAuthentication`: the same cache, and a wrong token
counts against the anonymous rate limit as it does on the API).

An *API client* (a request with an ``Authorization`` header, one that accepts
``application/json``, or one asking for ``?format=csv`` or ``?format=json``) is answered errors
in JSON, ``{"detail": ...}`` as the API answers them: 401 without valid credentials (with
``WWW-Authenticate: Token``), 404 for an object that is not the user's or a chart that does
not exist, 400 for a bad parameter. Anyone else (a browser navigating to a chart URL) keeps
the site's pages; without a session that is a 404, as for another user's object.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse

View = Callable[..., HttpResponse]

EXPORT_FORMATS = ("csv", "json")


def is_api_client(request: HttpRequest) -> bool:
    """Whether errors should be answered in JSON (see the module's docstring)."""
    if request.META.get("HTTP_AUTHORIZATION"):
        return True
    if request.GET.get("format") in EXPORT_FORMATS:
        return True
    accept = request.headers.get("Accept", "")
    return "application/json" in accept and "text/html" not in accept


def json_error(status: int, detail: str, **headers: str) -> JsonResponse:
    response = JsonResponse({"detail": detail}, status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def _unauthorised(detail: str) -> JsonResponse:
    return json_error(401, detail, WWW_Authenticate="Token")


def _token_user(request: HttpRequest) -> Any:
    """The user of the request's ``Authorization: Token`` header, or a JSON error answer."""
    from rest_framework.exceptions import APIException, AuthenticationFailed

    from api.authentication import CachedTokenAuthentication

    try:
        found = CachedTokenAuthentication().authenticate(request)
    except AuthenticationFailed as exc:
        return _unauthorised(str(exc.detail))
    except APIException as exc:  # too many wrong tokens from this address (429)
        wait = getattr(exc, "wait", None)
        headers = {"Retry_After": str(int(wait) + 1)} if wait else {}
        return json_error(exc.status_code, str(exc.detail), **headers)
    if found is None:
        return _unauthorised("Give the API token as 'Authorization: Token <key>'.")
    return found[0]


def chart_access(view: View) -> View:
    """Let ``view`` be read with a session or an API token; JSON errors for API clients."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        api = is_api_client(request)
        if request.META.get("HTTP_AUTHORIZATION"):
            user = _token_user(request)
            if isinstance(user, HttpResponse):
                return user
            request.user = user
        elif api and not request.user.is_authenticated:
            return _unauthorised("Authentication credentials were not provided.")
        try:
            response = view(request, *args, **kwargs)
        except Http404 as exc:
            if not api:
                raise
            reason = str(exc) if exc.args else ""
            # "No Experiment matches the given query." says which model, not whose: keep it
            # as the API's plain "Not found." (an object of someone else is just not found)
            detail = reason if reason and "matches the given query" not in reason else ""
            return json_error(404, detail or "Not found.")
        return response

    return wrapped
