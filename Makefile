# Icecore: `make run` serves the app on the demo warehouse; `make test` runs every check.
# Both create .venv from the pinned requirements first and say what to install when a
# system prerequisite (Python 3.11, Java 17, the SQLite JDBC driver) is missing.

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
PYTHONS ?= 3.12 3.13

.PHONY: run test test-quick test-pythons lint format demo prereqs clean

$(VENV)/.runtime: requirements.txt
	@scripts/prereqs.sh python
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

prereqs:
	@scripts/prereqs.sh python java

# A workstation: links and the sidebar may open any catalog, and "Run on Spark" is offered.
# A deployment (the Docker image) sets neither: it serves only its own catalogs.
run: $(VENV)/.runtime
	@scripts/prereqs.sh java
	PATH="$(CURDIR)/$(BIN):$$PATH" ICECORE_OPEN_CATALOGS=1 ICECORE_SPARK_QUERIES=1 scripts/serve.sh

demo: $(VENV)/.runtime
	@scripts/prereqs.sh java
	$(BIN)/python -m pipeline.demo --warehouse warehouse $(DEMO_ARGS)

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/codespell

format: $(VENV)/.dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The Spark-marked tests and the others as two pytest processes side by side
# (scripts/test-split.sh says why); PYTEST_ARGS with -m run as one process.
test: $(VENV)/.dev lint
	@scripts/prereqs.sh java
	PATH="$(CURDIR)/$(BIN):$$PATH" scripts/test-split.sh $(PYTEST_ARGS)

# For the minutes in between: the lint, then every test that needs neither the Spark fixture
# nor more than a few seconds (README "Development" says how long it takes).
test-quick: $(VENV)/.dev lint
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -m "not spark and not slow" $(PYTEST_ARGS)

# test-quick's tests on Python 3.12 and 3.13 too (pyenv's, in .venv312/.venv313 made from the
# pinned requirements), both at once; a Python the machine lacks is skipped with a note. .ci/run
# runs it after `make test`; README "Development" says how long it takes. PYTHONS=3.13 picks one.
test-pythons: $(VENV)/.dev
	PYTEST_ARGS="$(PYTEST_ARGS)" scripts/test-pythons.sh $(PYTHONS)

clean:
	rm -rf $(VENV) .venv312 .venv313 .pytest_cache .ruff_cache .mypy_cache test-artifacts
