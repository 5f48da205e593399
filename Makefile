# One toolchain: ruff, mypy, import-linter, pytest. `make test` is what CI runs.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint format typecheck bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Until the web app exists: a demo simulation from the command line.
run: install
	@echo "clustersim demo (command line; the web app comes with the product issue)"
	$(BIN)/python -m clustersim run --preset philly --trace clustersim/data/demo/philly_sample.csv --policy fifo
	$(BIN)/python -m clustersim run --preset philly --trace clustersim/data/demo/philly_sample.csv --policy tiresias
	$(BIN)/python -m clustersim run --cluster v100:8,p100:8,k80:8 --trace clustersim/data/demo/gavel_synth_multigpu_n100.trace --policy gavel-las

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

test: lint typecheck
	$(BIN)/pytest -q

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
