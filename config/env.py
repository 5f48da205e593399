"""Typed readers of environment variables that fail loudly on a bad value.

Every setting that can change between deployments comes through one of these helpers. A value
that is present but malformed raises :class:`~django.core.exceptions.ImproperlyConfigured`
naming the variable, so a typo stops the process at start-up instead of being ignored.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_MISSING: Any = object()
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str, default: Any) -> str | Any:
    value = os.environ.get(name)
    if value is None:
        if default is _MISSING:
            raise ImproperlyConfigured(f"environment variable {name} is required")
        return default
    return value


def env_str(name: str, default: Any = _MISSING) -> str:
    """The variable as a string; required when no ``default`` is given."""
    return str(_raw(name, default))


#: ``DJANGO_SECRET_KEY`` of ``.env.example``: a placeholder, refused like any weak key.
ENV_EXAMPLE_SECRET_KEY = "change-me-to-50-or-more-random-characters-python-c-import-secrets"
#: Shortest secret key accepted, and fewest distinct characters (Django's ``check --deploy``).
SECRET_KEY_MIN_LENGTH = 50
SECRET_KEY_MIN_UNIQUE = 5


def env_secret_key(name: str) -> str:
    """A strong secret key (required): at least 50 characters, at least 5 distinct ones, not
    Django's ``django-insecure-`` development keys and not the ``.env.example`` placeholder.

    The same rules as Django's ``check --deploy`` (security.W009), enforced when the settings
    load so that a weak key stops the process instead of signing sessions.
    """
    value = env_str(name)
    how = 'make one with: python -c "import secrets; print(secrets.token_urlsafe(50))"'
    if value == ENV_EXAMPLE_SECRET_KEY:
        problem = "is the placeholder of .env.example"
    elif value.startswith("django-insecure"):
        problem = "starts with 'django-insecure' (a development key)"
    elif len(value) < SECRET_KEY_MIN_LENGTH:
        problem = f"has {len(value)} characters; at least {SECRET_KEY_MIN_LENGTH} are needed"
    elif len(set(value)) < SECRET_KEY_MIN_UNIQUE:
        problem = (
            f"has {len(set(value))} distinct characters; at least {SECRET_KEY_MIN_UNIQUE} "
            "are needed"
        )
    else:
        return value
    raise ImproperlyConfigured(f"environment variable {name} {problem}; {how}")


def env_bool(name: str, default: bool | Any = _MISSING) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (any case)."""
    value = _raw(name, default)
    if isinstance(value, bool):
        return value
    low = value.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ImproperlyConfigured(f"environment variable {name}={value!r} is not a boolean")


def env_int(name: str, default: int | Any = _MISSING) -> int:
    """An integer."""
    value = _raw(name, default)
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(
            f"environment variable {name}={value!r} is not an integer"
        ) from None


def env_float(name: str, default: float | Any = _MISSING) -> float:
    """A finite float."""
    value = _raw(name, default)
    if isinstance(value, int | float):
        return float(value)
    try:
        out = float(value)
    except ValueError:
        raise ImproperlyConfigured(
            f"environment variable {name}={value!r} is not a number"
        ) from None
    if out != out or out in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"environment variable {name}={value!r} is not finite")
    return out


def env_list(name: str, default: list[str] | Any = _MISSING) -> list[str]:
    """A comma-separated list; empty items are dropped."""
    value = _raw(name, default)
    if isinstance(value, list):
        return value
    return [item.strip() for item in value.split(",") if item.strip()]


_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str | None) -> tuple[int, int] | None:
    """``"100/minute"`` → ``(100, 60)`` (DRF's rate syntax: a count, ``/``, a period whose first
    letter is ``s``, ``m``, ``h`` or ``d``); ``None``, ``""`` or ``"off"`` → ``None`` (no limit).
    ``ValueError`` on anything else."""
    if rate is None or rate.strip().lower() in ("", "off", "none"):
        return None
    count, sep, period = rate.strip().partition("/")
    seconds = _PERIODS.get(period.strip()[:1].lower()) if sep else None
    if seconds is None or not count.strip().isdigit() or int(count) < 1:
        raise ValueError(f"{rate!r} is not a rate like 100/minute, 20/hour or off")
    return int(count), seconds


def env_rate(name: str, default: str) -> str | None:
    """A request rate in DRF's syntax (``100/minute``, ``20/hour``), or ``None`` for ``off``."""
    value = env_str(name, default)
    try:
        parsed = parse_rate(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"environment variable {name}: {exc}") from None
    return value.strip() if parsed else None


def parse_database_url(url: str, name: str = "DATABASE_URL") -> dict[str, Any]:
    """Django ``DATABASES`` entry from ``postgres://user:pw@host:port/db`` or ``sqlite:///path``.

    ``sqlite:////abs/path`` is an absolute path, ``sqlite:///rel/path`` is relative to the
    working directory. Query parameters of a PostgreSQL URL become connection ``OPTIONS``
    (e.g. ``?sslmode=require``).
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        path = unquote(parts.path)[1:] if parts.path.startswith("/") else unquote(parts.path)
        if not path or path == ":memory:":
            path = ":memory:"
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path}
    if scheme in ("postgres", "postgresql", "pgsql"):
        db = unquote(parts.path.lstrip("/"))
        if not db:
            raise ImproperlyConfigured(f"{name}={url!r} names no database")
        try:
            port = parts.port
        except ValueError:
            raise ImproperlyConfigured(f"{name}={url!r} has a bad port") from None
        options = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": db,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(port or ""),
            "OPTIONS": options,
        }
    raise ImproperlyConfigured(
        f"{name}={url!r}: unsupported scheme {scheme!r} (use postgres:// or sqlite:///)"
    )


def env_database(name: str, default: str) -> dict[str, Any]:
    """A ``DATABASES`` entry from a database URL variable."""
    return parse_database_url(env_str(name, default), name)
