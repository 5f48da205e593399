"""Settings shared by every environment; everything deployment-specific comes from env vars.

See ``.env.example`` for the variables and their meaning.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from config.env import env_bool, env_database, env_float, env_int, env_list, env_rate, env_str

BASE_DIR = Path(__file__).resolve().parents[2]
VAR_DIR = Path(env_str("CLUSTERSIM_VAR_DIR", str(BASE_DIR / "var")))

SECRET_KEY = env_str("DJANGO_SECRET_KEY", "django-insecure-local-development-only")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "planner",
    "api",
    "dashboard",
]

MIDDLEWARE = [
    "config.uploads.RequestSizeLimitMiddleware",  # 413 before a body is read
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# -- database: SQLite by default, PostgreSQL from DATABASE_URL --------------------------------
DATABASES: dict[str, dict[str, Any]] = {
    "default": env_database("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
}
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DJANGO_CONN_MAX_AGE", 0)
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    if DATABASES["default"]["NAME"] != ":memory:":
        Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # the web server and the worker write to one file: wait for locks, take them up front
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(VAR_DIR / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Uploads are streamed into the database (workers share no filesystem with the web server).
# Bodies are bounded before they are read (config/uploads.py): an uploaded file may be
# CLUSTERSIM_UPLOAD_MAX_BYTES, a multipart body CLUSTERSIM_REQUEST_MAX_BYTES (default: that
# plus 1 MiB of form fields), any other body DATA_UPLOAD_MAX_MEMORY_SIZE; past them, 413.
CLUSTERSIM_UPLOAD_MAX_BYTES = env_int("CLUSTERSIM_UPLOAD_MAX_BYTES", 256 * 1024 * 1024)
CLUSTERSIM_REQUEST_MAX_BYTES = env_int(
    "CLUSTERSIM_REQUEST_MAX_BYTES", CLUSTERSIM_UPLOAD_MAX_BYTES + 1024 * 1024
)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# Limits on reading an upload (clustersim.traces.limits.ReadLimits, same defaults): the
# decompressed size (a gzip bomb stops here), the longest line (and Philly JSON job object),
# the widest header and the most rows (lines, or Philly JSON job objects). A file over one
# fails to parse with a message naming the setting.
CLUSTERSIM_TRACE_MAX_DECOMPRESSED_BYTES = env_int(
    "CLUSTERSIM_TRACE_MAX_DECOMPRESSED_BYTES", 384 << 20
)
CLUSTERSIM_TRACE_MAX_STREAMED_BYTES = env_int("CLUSTERSIM_TRACE_MAX_STREAMED_BYTES", 16 << 30)
CLUSTERSIM_TRACE_MAX_LINE_BYTES = env_int("CLUSTERSIM_TRACE_MAX_LINE_BYTES", 1 << 20)
CLUSTERSIM_TRACE_MAX_HEADER_FIELDS = env_int("CLUSTERSIM_TRACE_MAX_HEADER_FIELDS", 10_000)
CLUSTERSIM_TRACE_MAX_ROWS = env_int("CLUSTERSIM_TRACE_MAX_ROWS", 2_500_000)
FILE_UPLOAD_HANDLERS = [
    "config.uploads.CappedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("DJANGO_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# -- REST API -----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.CachedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "api.throttling.AnonymousRateLimit",  # before the 401: api/throttling.py
        "rest_framework.permissions.IsAuthenticated",
    ],
    # JSON bodies; the two upload endpoints take multipart forms (their views say so)
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "api.filters.FilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "api.schema.AutoSchema",  # documents the error answers too
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    # rate limits (api/throttling.py): 429 with Retry-After past them; "off" lifts one
    "DEFAULT_THROTTLE_CLASSES": [
        "api.throttling.AnonRateThrottle",
        "api.throttling.UserRateThrottle",
        "api.throttling.ExpensiveRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_rate("CLUSTERSIM_THROTTLE_ANON", "60/minute"),
        "user": env_rate("CLUSTERSIM_THROTTLE_USER", "1200/minute"),
        "expensive": env_rate("CLUSTERSIM_THROTTLE_EXPENSIVE", "120/hour"),
    },
    # proxies in front of the app that append to X-Forwarded-For: 0 trusts only the socket's
    # address (REMOTE_ADDR); behind one reverse proxy set 1, or every client looks like it
    "NUM_PROXIES": env_int("CLUSTERSIM_NUM_PROXIES", 0),
}
# Valid API tokens are remembered per process this long (0: off): a deleted token or a
# deactivated user still authenticates for at most this many seconds in other processes
# (immediately refused in the process that made the change). See api/authentication.py.
CLUSTERSIM_TOKEN_CACHE_S = env_float("CLUSTERSIM_TOKEN_CACHE_S", 5.0)

# Sign-in lock-outs (api/throttling.py LoginGuard): after ACCOUNT_FAILURES wrong passwords for
# one username (from anywhere), or IP_FAILURES from one client address (any usernames), that
# account or address is locked for LOCK_S, doubling with each further failure up to
# MAX_LOCK_S; counters are forgotten RESET_S after the last failure. A client address that
# signed in to an account before (within KNOWN_CLIENT_S) is not held by that account's lock,
# only by its own address's.
CLUSTERSIM_LOGIN_ACCOUNT_FAILURES = env_int("CLUSTERSIM_LOGIN_ACCOUNT_FAILURES", 5)
CLUSTERSIM_LOGIN_IP_FAILURES = env_int("CLUSTERSIM_LOGIN_IP_FAILURES", 20)
CLUSTERSIM_LOGIN_LOCK_S = env_float("CLUSTERSIM_LOGIN_LOCK_S", 30.0)
CLUSTERSIM_LOGIN_MAX_LOCK_S = env_float("CLUSTERSIM_LOGIN_MAX_LOCK_S", 900.0)
CLUSTERSIM_LOGIN_RESET_S = env_float("CLUSTERSIM_LOGIN_RESET_S", 3600.0)
CLUSTERSIM_LOGIN_KNOWN_CLIENT_S = env_float("CLUSTERSIM_LOGIN_KNOWN_CLIENT_S", 30 * 86400.0)

# Rate-limit and lock-out counters live in the "throttle" cache: Redis when
# CLUSTERSIM_THROTTLE_CACHE_URL (default: REDIS_URL) is set, so that every web worker shares
# them, else the process's memory (one process: `make run`). Keys are prefixed with a digest of
# the database name, so deployments (or test stacks) sharing a Redis keep apart. Should the
# cache fail, requests are let through (and logged): the limits protect capacity, they are
# not what keeps accounts safe.
_THROTTLE_CACHE_URL = env_str("CLUSTERSIM_THROTTLE_CACHE_URL", env_str("REDIS_URL", ""))
_THROTTLE_PREFIX = (
    "clustersim-" + hashlib.sha256(str(DATABASES["default"]["NAME"]).encode()).hexdigest()[:12]
)
CACHES: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": _THROTTLE_CACHE_URL,
            "KEY_PREFIX": _THROTTLE_PREFIX,
            "OPTIONS": {"socket_connect_timeout": 1.0, "socket_timeout": 1.0},
        }
        if _THROTTLE_CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"}
    ),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "clustersim API",
    "DESCRIPTION": (
        "What-if planning for shared ML accelerator clusters: inventories, workloads, "
        "experiments and their runs. Long work (parsing, simulating) answers 202 and runs "
        "in Celery workers; poll the resource for its state."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.drop_unused_components",
    ],
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "ENUM_NAME_OVERRIDES": {
        "RunStateEnum": "planner.models.RunState",
        "WorkloadStatusEnum": "planner.models.WorkloadStatus",
        "PolicyNameEnum": "api.enums.POLICY_NAMES",
        "PlacementEnum": "api.enums.PLACEMENT_NAMES",
        "PresetEnum": "api.enums.PRESET_NAMES",
        "TraceFormatEnum": "api.enums.TRACE_FORMATS",
    },
}

# -- Celery ---------------------------------------------------------------------------------------
# REDIS_URL (production) wins; otherwise CELERY_BROKER_URL; otherwise a filesystem broker that
# needs no server (the embedded default of `make run`).
REDIS_URL = env_str("REDIS_URL", "")
CELERY_BROKER_URL = REDIS_URL or env_str("CELERY_BROKER_URL", "filesystem://")
_BROKER_DIR = VAR_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {
        "data_folder_in": str(_BROKER_DIR / "queue"),
        "data_folder_out": str(_BROKER_DIR / "queue"),
        "control_folder": str(_BROKER_DIR / "control"),
        "store_processed": False,
    }
    for _folder in ("queue", "control"):
        (_BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
else:
    # an unacknowledged message (worker gone) is redelivered after this many seconds; the
    # heartbeat reaper usually requeues the run much sooner
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CLUSTERSIM_BROKER_VISIBILITY_TIMEOUT", 4 * 3600),
        # a broker host that does not answer fails a publish in seconds, not minutes
        "socket_connect_timeout": env_float("CLUSTERSIM_BROKER_CONNECT_TIMEOUT_S", 5.0),
    }
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_SEND_TASK_EVENTS = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TIMEZONE = "UTC"
# a publish while the broker is away gives up after about a second; the request that made the
# object still succeeds and the sweeper sends the work later (planner.tasks.sweep)
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 3,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}

# -- queues: three, so that none waits behind another (README, "Production shape") -----------
# ``<prefix>.sim``: simulations; ``<prefix>.parse``: parsing uploads, building synthetic and
# derived workloads; ``<prefix>.housekeeping``: the reaper, the sweeper, the run dispatcher.
# A worker serves the roles listed in CLUSTERSIM_WORKER_QUEUES ("sim", "parse,housekeeping";
# config/celery.py applies it), else the queues named by `celery worker -Q`, else all three.
# The prefix keeps deployments (and test runs) that share a broker apart.
CLUSTERSIM_CELERY_QUEUE = env_str("CLUSTERSIM_CELERY_QUEUE", "clustersim")
CLUSTERSIM_QUEUES = {
    role: f"{CLUSTERSIM_CELERY_QUEUE}.{role}" for role in ("sim", "parse", "housekeeping")
}
CLUSTERSIM_WORKER_QUEUES = env_list("CLUSTERSIM_WORKER_QUEUES", [])
CELERY_TASK_QUEUES = {
    name: {"exchange": name, "exchange_type": "direct", "routing_key": name}
    for name in CLUSTERSIM_QUEUES.values()
}
CELERY_TASK_DEFAULT_QUEUE = CLUSTERSIM_QUEUES["housekeeping"]
CELERY_TASK_ROUTES = {
    "planner.simulate_run": {"queue": CLUSTERSIM_QUEUES["sim"]},
    "planner.parse_workload": {"queue": CLUSTERSIM_QUEUES["parse"]},
    "planner.reap_stale_runs": {"queue": CLUSTERSIM_QUEUES["housekeeping"]},
    "planner.sweep": {"queue": CLUSTERSIM_QUEUES["housekeeping"]},
    "planner.dispatch_runs": {"queue": CLUSTERSIM_QUEUES["housekeeping"]},
    "planner.launch_experiment": {"queue": CLUSTERSIM_QUEUES["housekeeping"]},
    # capacity studies (planner.studies): the candidates and the phase steps are simulations
    "planner.advance_study": {"queue": CLUSTERSIM_QUEUES["sim"]},
    "planner.evaluate_candidate": {"queue": CLUSTERSIM_QUEUES["sim"]},
}

# run bookkeeping (planner.runner / planner.tasks)
CLUSTERSIM_RUN_SOFT_TIME_LIMIT_S = env_int("CLUSTERSIM_RUN_SOFT_TIME_LIMIT_S", 3600)
CLUSTERSIM_RUN_HARD_TIME_LIMIT_S = env_int("CLUSTERSIM_RUN_HARD_TIME_LIMIT_S", 3660)
CLUSTERSIM_PARSE_SOFT_TIME_LIMIT_S = env_int("CLUSTERSIM_PARSE_SOFT_TIME_LIMIT_S", 900)
CLUSTERSIM_PARSE_HARD_TIME_LIMIT_S = env_int("CLUSTERSIM_PARSE_HARD_TIME_LIMIT_S", 960)
# memory a parse task may allocate beyond what its worker process held when the task started (a
# data-segment limit; past it the parse fails with the reason and the worker lives); 0: none
CLUSTERSIM_PARSE_MAX_MEMORY_BYTES = env_int("CLUSTERSIM_PARSE_MAX_MEMORY_BYTES", 2 * 1024**3)
CLUSTERSIM_HEARTBEAT_S = env_float("CLUSTERSIM_HEARTBEAT_S", 2.0)
CLUSTERSIM_HEARTBEAT_THREAD = env_bool("CLUSTERSIM_HEARTBEAT_THREAD", True)
CLUSTERSIM_STALE_AFTER_S = env_float("CLUSTERSIM_STALE_AFTER_S", 60.0)
CLUSTERSIM_REAPER_EVERY_S = env_float("CLUSTERSIM_REAPER_EVERY_S", 30.0)
CLUSTERSIM_RUN_MAX_ATTEMPTS = env_int("CLUSTERSIM_RUN_MAX_ATTEMPTS", 3)
CLUSTERSIM_MAX_RUNS_PER_EXPERIMENT = env_int("CLUSTERSIM_MAX_RUNS_PER_EXPERIMENT", 500)
# queued runs one user may have at once; creating or re-running past it answers 429 (API) or
# a form error (web); 0: no limit
CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER = env_int("CLUSTERSIM_MAX_QUEUED_RUNS_PER_USER", 1000)
# fair share (planner.dispatch): a user's runs sent to the simulation queue and not started yet;
# the others wait in the database and are sent round-robin across users as runs start
CLUSTERSIM_DISPATCH_PER_USER = env_int("CLUSTERSIM_DISPATCH_PER_USER", 2)
# the sweeper (planner.dispatch.sweep): how often beat runs it; a message sent for a queued run
# or a pending workload counts as lost and is sent again when it was sent more than
# CLUSTERSIM_STALE_AFTER_S ago and its queue is empty or something sent later has started, or
# in any case after CLUSTERSIM_RESEND_AFTER_S (a duplicate is harmless: claims are conditional)
CLUSTERSIM_SWEEP_EVERY_S = env_float("CLUSTERSIM_SWEEP_EVERY_S", 30.0)
CLUSTERSIM_RESEND_AFTER_S = env_float("CLUSTERSIM_RESEND_AFTER_S", 3600.0)

CELERY_BEAT_SCHEDULE = {
    # a beat message not taken within its period expires: no pile-up while a worker is away
    "reap-stale-runs": {
        "task": "planner.reap_stale_runs",
        "schedule": CLUSTERSIM_REAPER_EVERY_S,
        "options": {"expires": CLUSTERSIM_REAPER_EVERY_S},
    },
    "sweep": {
        "task": "planner.sweep",
        "schedule": CLUSTERSIM_SWEEP_EVERY_S,
        "options": {"expires": CLUSTERSIM_SWEEP_EVERY_S},
    },
}
