# Entry points: `make demo`, `make test` (lint, then every test, as CI runs it) and
# `make test-fast` (the tests not marked slow). All create .venv on first use.
# Tests run in parallel processes (pytest-xdist), one test file per process at a time
# so that a file's module-scoped fixtures are built once; most of a test's time is a
# single-threaded process start or graph build, so two processes use both cores.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint clean

# tf_keras (Keras 2, of the installed TensorFlow's version) goes beside the environment,
# not in it: the tests run TF 1.x code without it and, putting it on PYTHONPATH, with it.
TF_KERAS_DIR := $(VENV)/extras/tf_keras
TF_VERSION = $$($(BIN)/python -c 'from importlib.metadata import version; print(*version("tensorflow").split(".")[:2], sep=".")')

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	rm -rf $(TF_KERAS_DIR)
	$(BIN)/python -m pip install --quiet --no-deps --target $(TF_KERAS_DIR) "tf_keras==$(TF_VERSION).*" \
		|| echo "No tf_keras for this TensorFlow: tests/tf1 skips its runs with tf_keras."
	touch $(STAMP)

demo: $(STAMP)
	PYTHON=$(BIN)/python bash demo.sh

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

PARALLEL := -n auto --maxprocesses=4 --dist loadfile

test: $(STAMP) lint
	$(BIN)/python -m pytest -q $(PARALLEL) --durations=10 tests

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q $(PARALLEL) -m "not slow" tests

clean:
	rm -rf $(VENV) .pytest_cache
