# Icecore: `make run` serves the app on the demo warehouse; `make test` runs every check.
# Both create .venv from the pinned requirements first and say what to install when a
# system prerequisite (Python 3.11, Java 17, the SQLite JDBC driver) is missing.

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: run test test-quick lint format demo prereqs clean

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

test: $(VENV)/.dev lint
	@scripts/prereqs.sh java
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest $(PYTEST_ARGS)

# For the minutes in between: the lint, then every test that needs neither the Spark fixture
# nor more than a few seconds (README "Development" says how long it takes).
test-quick: $(VENV)/.dev lint
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -m "not spark and not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache test-artifacts
