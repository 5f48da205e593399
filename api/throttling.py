"""Request rate limits of the API and lock-outs of sign-ins after wrong passwords.

**API rate limits** (DRF throttles, ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``): ``anon``
per client address for requests without credentials, ``user`` per signed-in user for every
request, and ``expensive`` per user for the actions a view lists in ``expensive_actions``
(uploads, synthetic and derived workloads, experiments and re-runs, node-list imports),
counted on top of ``user``. Past a limit the API answers 429 with ``Retry-After``. Counts are
fixed windows (``100/minute``: at most 100 in each calendar minute) kept with an atomic
increment, so every web worker counts the same requests once.

**Sign-in lock-outs** (:class:`LoginGuard`, used by the sign-in page and the admin's): wrong
passwords are counted per account (the username, whichever client sends it) and per client
address (whichever usernames it tries). Past ``CLUSTERSIM_LOGIN_ACCOUNT_FAILURES`` for an
account or ``CLUSTERSIM_LOGIN_IP_FAILURES`` for an address, that account or address is locked
for ``CLUSTERSIM_LOGIN_LOCK_S``, doubled by each further failure up to
``CLUSTERSIM_LOGIN_MAX_LOCK_S``; while locked, sign-ins are refused without checking the
password (the page says how long to wait and answers 429).

The trade-off of an account lock is that anyone can lock someone else out by guessing at
their username. Here that lock is short and capped (15 minutes by default, never permanent),
a correct sign-in clears the account's count, and a client address that has signed in to the
account before is not held by the account's lock at all (only by its own address's): a user
at their usual address keeps signing in while somebody elsewhere guesses at their password,
and a new client waits at most the cap.

The counters live in the ``throttle`` cache (Redis in production, shared by all workers). If
that cache fails, requests are let through and a warning is logged.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from typing import Any

from django.conf import settings
from django.core.cache import caches
from rest_framework.exceptions import Throttled
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from config.env import parse_rate

log = logging.getLogger(__name__)

#: Name of the cache holding the counters (settings.CACHES).
CACHE_ALIAS = "throttle"


def _now() -> float:
    return time.time()


def _cache() -> Any:
    return caches[CACHE_ALIAS]


def client_address(request: Any) -> str:
    """The client's address: ``REMOTE_ADDR``, or the ``X-Forwarded-For`` entry added by the
    outermost of ``REST_FRAMEWORK["NUM_PROXIES"]`` trusted proxies (DRF's rule)."""
    return str(BaseThrottle().get_ident(request) or "unknown")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# -- API rate limits ----------------------------------------------------------------------------


class RateThrottle(BaseThrottle):
    """A fixed-window counter per ``scope`` and identity; the rate is read on every request
    (so a changed setting applies at once)."""

    scope = ""

    def __init__(self) -> None:
        self._wait: float | None = None

    def identity(self, request: Request, view: Any) -> str | None:
        """Who is counted; ``None``: this throttle does not apply to the request."""
        raise NotImplementedError

    def allow_request(self, request: Request, view: Any) -> bool:
        return self.allow_request_of(request, self.identity(request, view))

    def allow_request_of(self, request: Request, who: str | None) -> bool:
        """Count a request of ``who`` (``None``: not counted); ``False`` past the rate."""
        rate = parse_rate(api_settings.DEFAULT_THROTTLE_RATES.get(self.scope))
        if rate is None or who is None:
            return True
        limit, period = rate
        now = _now()
        window = int(now // period)
        key = f"rate:{self.scope}:{_digest(who)}:{period}:{window}"
        try:
            cache = _cache()
            cache.add(key, 0, period + 5)
            count = int(cache.incr(key))
        except Exception:  # the cache is down or the key just expired: let it through
            log.warning("rate limit %s not counted", self.scope, exc_info=True)
            return True
        if count <= limit:
            return True
        self._wait = (window + 1) * period - now
        return False

    def wait(self) -> float | None:
        return self._wait


class AnonRateThrottle(RateThrottle):
    """Requests without credentials, per client address (scope ``anon``)."""

    scope = "anon"

    def identity(self, request: Request, view: Any) -> str | None:
        user = getattr(request, "_user", None)  # never authenticates (the caller has)
        if user is not None and user.is_authenticated:
            return None
        return f"ip:{client_address(request)}"


class AnonymousRateLimit(BasePermission):
    """The ``anon`` limit *before* the permission checks: DRF checks permissions before
    throttles, so without this an anonymous request to a protected endpoint would answer 401
    however often it came. Listed first in ``DEFAULT_PERMISSION_CLASSES``."""

    def has_permission(self, request: Request, view: Any) -> bool:
        limit = AnonRateThrottle()
        if not limit.allow_request(request, view):
            raise Throttled(wait=limit.wait())
        return True


def count_failed_credentials(request: Request) -> None:
    """A request with a wrong API token counts as an anonymous one; past the ``anon`` limit
    it is 429 instead of 401 (``api.authentication``)."""
    limit = AnonRateThrottle()
    if not limit.allow_request_of(request, f"ip:{client_address(request)}"):
        raise Throttled(wait=limit.wait())


class UserRateThrottle(RateThrottle):
    """Every request of a signed-in user (scope ``user``)."""

    scope = "user"

    def identity(self, request: Request, view: Any) -> str | None:
        if request.user is None or not request.user.is_authenticated:
            return None
        return f"user:{request.user.pk}"


class ExpensiveRateThrottle(UserRateThrottle):
    """The actions a view names in ``expensive_actions`` (scope ``expensive``), per user."""

    scope = "expensive"

    def identity(self, request: Request, view: Any) -> str | None:
        if getattr(view, "action", None) not in getattr(view, "expensive_actions", ()):
            return None
        return super().identity(request, view)


# -- sign-in lock-outs ----------------------------------------------------------------------------


class LoginGuard:
    """Counts the wrong passwords of one sign-in attempt's account and client address.

    Parameters
    ----------
    request
        The sign-in request (its client address is counted).
    username
        The username tried (compared without case).
    """

    def __init__(self, request: Any, username: str) -> None:
        self.address = _digest(f"ip:{client_address(request)}")
        self.account = _digest(f"user:{username.strip().casefold()}")

    def _known_key(self) -> str:
        return f"login:known:{self.account}:{self.address}"

    def wait(self) -> float:
        """Seconds before this account may be tried from this address (0: now)."""
        keys = [f"login:lock:ip:{self.address}"]
        try:
            cache = _cache()
            if not cache.get(self._known_key()):
                keys.append(f"login:lock:account:{self.account}")
            until = [float(v) for v in cache.get_many(keys).values() if v is not None]
        except Exception:
            log.warning("sign-in lock-outs not read", exc_info=True)
            return 0.0
        return max([0.0, *(u - _now() for u in until)])

    def failed(self) -> None:
        """A wrong password: count it for the account and the address, and lock whichever
        went past its limit."""
        limits = (
            ("account", self.account, settings.CLUSTERSIM_LOGIN_ACCOUNT_FAILURES),
            ("ip", self.address, settings.CLUSTERSIM_LOGIN_IP_FAILURES),
        )
        reset = max(1, math.ceil(settings.CLUSTERSIM_LOGIN_RESET_S))
        try:
            cache = _cache()
            for kind, who, limit in limits:
                key = f"login:failures:{kind}:{who}"
                cache.add(key, 0, reset)
                count = int(cache.incr(key))
                cache.touch(key, reset)  # forgotten RESET_S after the last failure
                if count >= limit:
                    lock = min(
                        settings.CLUSTERSIM_LOGIN_MAX_LOCK_S,
                        settings.CLUSTERSIM_LOGIN_LOCK_S * 2.0 ** min(count - limit, 60),
                    )
                    cache.set(f"login:lock:{kind}:{who}", _now() + lock, math.ceil(lock) + 1)
        except Exception:
            log.warning("sign-in failure not counted", exc_info=True)

    def succeeded(self) -> None:
        """A correct password: this address is known to the account from now on, and the
        account's count starts again unless the account is locked (a known address signed in
        through the lock: whoever is guessing elsewhere stays locked)."""
        try:
            cache = _cache()
            lock = f"login:lock:account:{self.account}"
            until = cache.get(lock)
            if until is None or float(until) <= _now():
                cache.delete_many([f"login:failures:account:{self.account}", lock])
            known_s = math.ceil(settings.CLUSTERSIM_LOGIN_KNOWN_CLIENT_S)
            if known_s > 0:
                cache.set(self._known_key(), 1, known_s)
        except Exception:
            log.warning("sign-in success not recorded", exc_info=True)
