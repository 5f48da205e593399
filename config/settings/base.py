"""Settings shared by every environment; everything deployment-specific comes from env vars.

See ``.env.example`` for the variables and their meaning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from config.env import env_bool, env_database, env_float, env_int, env_list, env_str

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

# Uploads are read into the database (workers share no filesystem with the web server).
CLUSTERSIM_UPLOAD_MAX_BYTES = env_int("CLUSTERSIM_UPLOAD_MAX_BYTES", 256 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

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
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "api.filters.FilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
# Valid API tokens are remembered per process this long (0: off): a deleted token or a
# deactivated user still authenticates for at most this many seconds in other processes
# (immediately refused in the process that made the change). See api/authentication.py.
CLUSTERSIM_TOKEN_CACHE_S = env_float("CLUSTERSIM_TOKEN_CACHE_S", 5.0)
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
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "ENUM_NAME_OVERRIDES": {
        "RunStateEnum": "planner.models.RunState",
        "WorkloadStatusEnum": "planner.models.WorkloadStatus",
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
