# Entry points: `make demo`, `make test` (lint, then every test, as CI runs it) and
# `make test-fast` (the tests not marked slow). All create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

demo: $(STAMP)
	PYTHON=$(BIN)/python bash demo.sh

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: $(STAMP) lint
	$(BIN)/python -m pytest -q --durations=10 tests

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" tests

clean:
	rm -rf $(VENV) .pytest_cache
