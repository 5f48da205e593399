# One toolchain: ruff, mypy, import-linter, pytest. `make test` is what CI runs.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test fidelity lint format typecheck bench clean schema django-checks

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@echo "compiling the engine's kernels (numba, cached; a few seconds, once)"
	$(BIN)/python -c "from clustersim.engine import warm_up; warm_up()"
	touch $(STAMP)

MANAGE := $(BIN)/python manage.py
# `check --deploy` runs with production settings and throwaway values (no real secret here)
DEPLOY_ENV := DJANGO_SETTINGS_MODULE=config.settings.production \
	DJANGO_SECRET_KEY=make-test-check-deploy-only-not-a-secret-0123456789abcdefghijklmnop \
	DJANGO_ALLOWED_HOSTS=clustersim.example DATABASE_URL=sqlite:///:memory:
CHECK_ENV := DJANGO_SETTINGS_MODULE=config.settings.test

# The embedded default: SQLite, a filesystem broker (no server), the demo data, the web app on
# 127.0.0.1:8000 and three Celery workers, one per queue, so that none waits behind another:
# simulations (2 slots), parsing (1 slot, memory-bounded) and housekeeping (the stale-run
# reaper, the sweeper and the run dispatcher, with beat embedded to schedule them). Once every
# worker says it is ready and the web app answers, `manage.py ready` prints the sign-in line
# and the API token, last, below the workers' banners. The previous run's logs are kept as .1.
CELERY_WORKER := $(BIN)/celery -A config worker --without-gossip --without-mingle --loglevel INFO
WORKER_LOGS := var/worker-sim.log var/worker-parse.log var/worker-housekeeping.log
run: install
	$(MANAGE) migrate --noinput
	$(MANAGE) planner demo
	@mkdir -p var && rm -f var/celerybeat-schedule*  # only last-run times; a stale one can crash beat
	@for log in $(WORKER_LOGS); do if [ -f $$log ]; then mv -f $$log $$log.1; fi; done
	@set -e; \
	CLUSTERSIM_WORKER_QUEUES=sim $(CELERY_WORKER) -n sim@%h --concurrency 2 \
		--logfile var/worker-sim.log & \
	sim=$$!; \
	CLUSTERSIM_WORKER_QUEUES=parse $(CELERY_WORKER) -n parse@%h --concurrency 1 \
		--max-memory-per-child 1048576 --logfile var/worker-parse.log & \
	parse=$$!; \
	CLUSTERSIM_WORKER_QUEUES=housekeeping $(CELERY_WORKER) -n housekeeping@%h --concurrency 1 \
		-B -s var/celerybeat-schedule --logfile var/worker-housekeeping.log & \
	housekeeping=$$!; \
	$(MANAGE) runserver 127.0.0.1:8000 --noreload & \
	web=$$!; \
	trap 'kill $$web $$sim $$parse $$housekeeping 2>/dev/null; \
		wait $$web $$sim $$parse $$housekeeping 2>/dev/null' EXIT INT TERM; \
	$(MANAGE) ready --url http://127.0.0.1:8000 --user demo --logs $(WORKER_LOGS); \
	wait $$web

# Regenerate the committed OpenAPI schema after changing the API.
schema: install
	$(CHECK_ENV) $(MANAGE) spectacular --validate --fail-on-warn --file docs/api-schema.yaml

# Django's own checks: migrations match the models, production settings pass
# `check --deploy`, the committed OpenAPI schema validates and matches the code.
django-checks: install
	$(CHECK_ENV) $(MANAGE) makemigrations --check --dry-run
	$(DEPLOY_ENV) $(MANAGE) check --deploy --fail-level WARNING
	@tmp=$$(mktemp -d); \
	$(CHECK_ENV) $(MANAGE) spectacular --validate --fail-on-warn --file $$tmp/schema.yaml \
		&& diff -u docs/api-schema.yaml $$tmp/schema.yaml > $$tmp/diff; \
	status=$$?; \
	if [ $$status -ne 0 ]; then cat $$tmp/diff; \
		echo "docs/api-schema.yaml is out of date or invalid: run 'make schema'"; fi; \
	rm -rf $$tmp; exit $$status

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

test: lint typecheck django-checks
	$(BIN)/pytest -q -m "not long"

# The fidelity runs too long for `make test` (a minute or more each), e.g. gavel-mmf-packed's
# centre on Gavel's 500-job trace against Gavel's printed numbers.
fidelity: install
	$(BIN)/pytest -q -m long

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
