# The README's two commands: `make demo` and `make test`. Each sets up everything it
# needs from a fresh clone (a virtualenv in .venv, Java when missing, the package with
# its prebuilt labextension).
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SOURCES := pyproject.toml package.json tsconfig.json $(wildcard labextension/src/*) \
	$(wildcard style/*) $(wildcard jupyter_spark_sessions/*.py jupyter_spark_sessions/*/*.py)

.PHONY: setup browser demo test lint typecheck pytest tstest bench clean

setup: $(STAMP)

$(STAMP): $(SOURCES)
	bash scripts/ensure-java.sh
	command -v node >/dev/null || { echo "Node.js 18+ is needed to build the JupyterLab extension"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# A regular (not editable) install: the same wheel, with the built labextension,
	# that users get.
	$(BIN)/python -m pip install --quiet ".[test]"
	touch $@

# JupyterLab refuses to run as root unless told to (containers and this kind of machine).
ALLOW_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

demo: setup
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 $(ALLOW_ROOT) $(DEMO_ARGS) demo/01-isolated-sessions.ipynb

# jlpm (Yarn, shipped with JupyterLab) comes from the venv; package scripts call it too.
JLPM := PATH="$(abspath $(BIN)):$$PATH" $(BIN)/jlpm

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(JLPM) install --immutable
	$(JLPM) lint:check

typecheck: setup
	$(BIN)/mypy
	$(JLPM) install --immutable
	$(JLPM) test:types

# Unit tests of the sidebar's TypeScript (vitest).
tstest: setup
	$(JLPM) install --immutable
	$(JLPM) test

# The browser tests drive Debian's Chromium through Playwright (no browser download).
browser:
	bash scripts/ensure-chromium.sh

pytest: setup browser
	$(BIN)/python -m pytest

test: lint typecheck tstest pytest

# Speed and memory targets (ratios against a baseline in the same run); rewrites
# docs/benchmarks.md. Run on a quiet machine: not part of `make test`.
bench: setup
	$(BIN)/python benchmarks/cancel_latency.py
	$(BIN)/python benchmarks/connect_cancel_latency.py
	$(BIN)/python benchmarks/artifacts.py
	$(BIN)/python benchmarks/kernel_shutdown.py
	$(BIN)/python benchmarks/report.py

clean:
	rm -rf $(VENV) node_modules lib jupyter_spark_sessions/labextension tsconfig.tsbuildinfo
