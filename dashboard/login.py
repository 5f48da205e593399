"""Sign-in forms and page that refuse further tries after too many wrong passwords.

:class:`api.throttling.LoginGuard` counts wrong passwords per account and per client address;
while either is locked the form refuses the sign-in without checking the password, saying how
long to wait, and the sign-in page answers 429 with ``Retry-After``. The admin's sign-in form
is guarded the same way (``config/urls.py``).
"""

from __future__ import annotations

import math
from typing import Any

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpResponse

from api.throttling import LoginGuard

THROTTLED = "Too many failed sign-ins for this account or from this address: try again in %(wait)s."


def _duration(seconds: float) -> str:
    s = max(1, math.ceil(seconds))
    if s < 120:
        return f"{s} seconds"
    return f"{math.ceil(s / 60)} minutes"


class ThrottledLoginMixin:
    """``clean`` of an authentication form, guarded by :class:`LoginGuard`."""

    cleaned_data: dict[str, Any]
    request: Any
    #: seconds to wait when the sign-in was refused for too many failures (else ``None``)
    throttled: float | None = None

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if username is None or not password:
            return super().clean()  # type: ignore[misc,no-any-return]
        guard = LoginGuard(self.request, username)
        self._refuse_if_locked(guard)
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except forms.ValidationError as exc:
            if exc.code == "invalid_login":
                guard.failed()
                self._refuse_if_locked(guard, exc)
            raise
        guard.succeeded()
        return cleaned

    def _refuse_if_locked(
        self, guard: LoginGuard, cause: forms.ValidationError | None = None
    ) -> None:
        wait = guard.wait()
        if wait <= 0:
            return
        self.throttled = wait
        error = forms.ValidationError(THROTTLED, code="throttled", params={"wait": _duration(wait)})
        raise forms.ValidationError([*([cause] if cause else []), error])


class LoginForm(ThrottledLoginMixin, AuthenticationForm):
    """The sign-in page's form."""


class AdminLoginForm(ThrottledLoginMixin, AdminAuthenticationForm):
    """The admin's sign-in form."""


class LoginView(auth_views.LoginView):
    """Django's sign-in page with :class:`LoginForm`; 429 while locked."""

    authentication_form = LoginForm

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        wait = getattr(form, "throttled", None)
        if wait:
            response.status_code = 429
            response["Retry-After"] = str(max(1, math.ceil(wait)))
        return response
