"""Settings for pytest-django: in-memory SQLite, fast hashing, tasks run eagerly in-process.

The integration tests do not use these: they start real processes with the production
settings against PostgreSQL and Redis.
"""

from config.settings.base import *  # noqa: F403

DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_BROKER_URL = "memory://"
CELERY_BROKER_TRANSPORT_OPTIONS = {}
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
CLUSTERSIM_HEARTBEAT_S = 0.0
# in-memory SQLite inside a test transaction: a second thread would not see the rows
CLUSTERSIM_HEARTBEAT_THREAD = False
LOGGING = {"version": 1, "disable_existing_loggers": False}
WHITENOISE_AUTOREFRESH = True
# tests see every token lookup (query counts do not depend on test order); the cache's own
# tests turn it on
CLUSTERSIM_TOKEN_CACHE_S = 0.0
# rate limits far above what a test does; tests of the limits set their own (the throttle
# cache is emptied before each test: tests/django/conftest.py)
REST_FRAMEWORK = {
    **REST_FRAMEWORK,  # noqa: F405
    "DEFAULT_THROTTLE_RATES": dict.fromkeys(("anon", "user", "expensive"), "100000/minute"),
}
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "throttle",
    },
}
