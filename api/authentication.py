"""Token authentication with a short-lived per-process cache of valid tokens.

DRF's :class:`~rest_framework.authentication.TokenAuthentication` reads the token and its user
from the database on every request: a query that, with the ORM's work around it, costs about
as much as a small list page. :class:`CachedTokenAuthentication` remembers, per process, the
tokens it has found valid (with their active user) for ``CLUSTERSIM_TOKEN_CACHE_S`` seconds
(default 5; 0 turns the cache off).

What that means for security:

- A deleted token, or a user deactivated or deleted, stops authenticating at once in the
  process that made the change (signals drop the entries) and within
  ``CLUSTERSIM_TOKEN_CACHE_S`` seconds everywhere else (other gunicorn workers, other hosts).
- Only tokens found valid are cached: an unknown or wrong token is looked up every time, so
  guessing cannot fill the cache; the cache holds at most :data:`MAX_ENTRIES` tokens.
- Every request gets its own copy of the cached user, so nothing one request stores on it
  (permission caches, attributes) is seen by another.
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models.signals import post_delete, post_save
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

MAX_ENTRIES = 1024

_lock = threading.Lock()
# token key -> (expiry on the monotonic clock, user, token)
_cache: dict[str, tuple[float, Any, Any]] = {}


def ttl_s() -> float:
    return float(getattr(settings, "CLUSTERSIM_TOKEN_CACHE_S", 0.0))


class CachedTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``, answered from the cache while the entry is fresh.

    A wrong token counts as an anonymous request of its client address: past the ``anon``
    rate limit the answer is 429 rather than 401 (:mod:`api.throttling`).
    """

    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            from api.throttling import count_failed_credentials

            count_failed_credentials(request)
            raise

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        ttl = ttl_s()
        if ttl <= 0:
            return super().authenticate_credentials(key)
        now = time.monotonic()
        hit = _cache.get(key)
        if hit is not None and hit[0] > now:
            return _copies(hit[1], hit[2])
        user, token = super().authenticate_credentials(key)  # raises for a bad key
        cached = _copies(user, token)
        with _lock:
            if len(_cache) >= MAX_ENTRIES:
                for k in [k for k, v in _cache.items() if v[0] <= now]:
                    del _cache[k]
                if len(_cache) >= MAX_ENTRIES:
                    _cache.clear()
            _cache[key] = (now + ttl, *cached)
        return user, token


def _copies(user: Any, token: Any) -> tuple[Any, Any]:
    """A copy of the user and of the token pointing to that copy (no shared instances)."""
    user = copy.copy(user)
    token = copy.copy(token)
    token.user = user
    return user, token


def forget(key: str | None = None, user_id: Any = None) -> None:
    """Drop the entry of a token key and/or every entry of a user (all entries: no argument)."""
    with _lock:
        if key is None and user_id is None:
            _cache.clear()
            return
        for k in [k for k, v in _cache.items() if k == key or v[1].pk == user_id]:
            del _cache[k]


def _token_changed(sender: Any, instance: Any, **kwargs: Any) -> None:
    forget(key=instance.pk, user_id=instance.user_id)


def _user_changed(sender: Any, instance: Any, **kwargs: Any) -> None:
    forget(user_id=instance.pk)


def connect_signals() -> None:
    """Called from :meth:`api.apps.ApiConfig.ready`."""
    post_delete.connect(_token_changed, sender=Token, dispatch_uid="api-token-cache-token-del")
    post_save.connect(_token_changed, sender=Token, dispatch_uid="api-token-cache-token-save")
    user_model = get_user_model()
    post_delete.connect(_user_changed, sender=user_model, dispatch_uid="api-token-cache-user-del")
    post_save.connect(_user_changed, sender=user_model, dispatch_uid="api-token-cache-user-save")
