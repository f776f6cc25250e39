# The README's two commands: `make demo` and `make test`. Each sets up everything it
# needs from a fresh clone (a virtualenv in .venv, Java when missing, the package with
# its prebuilt labextension).
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SOURCES := pyproject.toml package.json tsconfig.json $(wildcard labextension/src/*) \
	$(wildcard style/*) $(wildcard jupyter_spark_sessions/*.py jupyter_spark_sessions/*/*.py) \
	$(wildcard jupyter_spark_sessions/*.json jupyter_spark_sessions/*.properties jupyter_spark_sessions/jars/*.jar)

.PHONY: setup setup-all java-runtime browser demo test static check lint typecheck pytest pytest-light tstest test-lowest \
	test-newest screenshots bench jar clean

setup: $(STAMP)

# One wheel, with the built labextension (the TypeScript is built once), is what every
# venv below installs: the same wheel users get, not an editable install.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
WHEEL_DIR := build/wheel
WHEEL := $(WHEEL_DIR)/jupyter_spark_sessions-$(VERSION)-py3-none-any.whl

# uv (a dependency of the package: it builds sessions' environments) builds the wheel:
# 17 s against pip wheel's 42, its build environment (hatchling, JupyterLab) from its
# cache.
$(WHEEL): $(SOURCES)
	command -v node >/dev/null || { echo "Node.js 18+ is needed to build the JupyterLab extension"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip "uv>=0.5"
	rm -rf $(WHEEL_DIR)
	$(BIN)/uv build --quiet --wheel --out-dir $(WHEEL_DIR) .
	test -f $@

# Python writes the bytecode of what it imports, as it does by default: where the
# environment says not to (PYTHONDONTWRITEBYTECODE, set on this kind of machine and in
# many container images), every kernel, Python worker and test process compiled all it
# imported, every time. So the venvs are installed without compiling all of every
# package (16 of pip's 40 CPU-s per venv): the first import compiles what is used, once.
unexport PYTHONDONTWRITEBYTECODE

# install-wheel VENV [PIP OPTIONS]: the dependencies (with the test extra), then this
# very wheel even when a wheel of the same version is installed already.
PIP_INSTALL = -m pip install --quiet --no-compile
define install-wheel
	$(1)/bin/python -m pip install --quiet --upgrade pip
	$(1)/bin/python $(PIP_INSTALL) $(2) "$(WHEEL)[test]"
	$(1)/bin/python $(PIP_INSTALL) --no-deps --force-reinstall "$(WHEEL)"
endef

$(STAMP): $(WHEEL) | java-runtime
	$(call install-wheel,$(VENV))
	$(BIN)/python $(PIP_INSTALL) "$(WHEEL)[test-gateway]"
	touch $@

# JupyterLab refuses to run as root unless told to (containers and this kind of machine).
ALLOW_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

# The demos run from copies in build/demo (made once: your edits and outputs stay there,
# and the tracked notebooks stay clean; delete the folder for fresh copies), where Spark
# also writes its spark-warehouse. The printed URL opens the first demo.
DEMO_DIR := build/demo
demo: setup
	@mkdir -p $(DEMO_DIR)
	@for f in demo/*.ipynb; do [ -e "$(DEMO_DIR)/$${f#demo/}" ] || cp "$$f" $(DEMO_DIR)/; done
	@echo "The demos run from copies in $(DEMO_DIR) (delete it for fresh ones)."
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 $(ALLOW_ROOT) --ServerApp.root_dir=$(DEMO_DIR) \
		--LabApp.default_url=/lab/tree/01-isolated-sessions.ipynb $(DEMO_ARGS)

# jlpm (Yarn, shipped with JupyterLab) comes from the venv; package scripts call it too.
JLPM := PATH="$(abspath $(BIN)):$$PATH" $(BIN)/jlpm
NODE_STAMP := node_modules/.jss-installed

lint: setup $(NODE_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(JLPM) lint:check

typecheck: setup $(NODE_STAMP)
	$(BIN)/mypy
	$(JLPM) test:types

# Unit tests of the sidebar's TypeScript (vitest).
tstest: setup $(NODE_STAMP)
	$(JLPM) test

# Java for Spark; the browser tests drive Debian's Chromium through Playwright (no browser
# download). Each installs Debian's package when missing: one after the other, since
# apt-get holds a lock (make test sets up with several jobs).
java-runtime:
	bash scripts/ensure-java.sh

browser: | java-runtime
	bash scripts/ensure-chromium.sh

# Each pytest run writes its JUnit XML (and the processes it started, tests/conftest.py)
# to $(RESULTS); scripts/test_times.py turns them into CONTRIBUTING.md's time table.
RESULTS := build/test-results
JUNIT = --junitxml=$(RESULTS)/$@.xml

# Modules run side by side in PYTEST_WORKERS processes (pytest-xdist), each module whole
# in one of them (its fixtures shared as written); the longest start first, as timed in
# tests/module_seconds.json (conftest), rather than those with most tests. Three on two
# cores: a module often waits (a job of sleeping tasks, an idle timeout, the soak's
# settling). Four were faster (fresh-clone make test here: 14:04-14:38 against 15:28)
# but two of four runs had a timing-bound browser test fail (a SQL cell's completion,
# the sidebar's first look at a new kernel): harden those before trying four again.
PYTEST_WORKERS ?= 3
PARALLEL = -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder
PARALLEL_LOWEST = -n 2 --dist loadfile --no-loadscope-reorder

# Every test on the main venv (the Python you develop with): the loop before a commit.
# make test runs the same suite on Python 3.13 instead (test-newest).
pytest: setup browser
	$(BIN)/python -m pytest $(PARALLEL) $(JUNIT)

# The README's test command: set up, then every target side by side (each one's output
# printed whole when it ends), each timed; a table of where the time went (per target and
# per module) is printed at the end (scripts/test_times.py). Side by side because the
# kernel-level suites wait on JVMs and kernels: one at a time leaves the cores idle.
TEST_TARGETS := timed-test-newest timed-test-lowest timed-static

test:
	@rm -rf $(RESULTS) && mkdir -p $(RESULTS)
	@started=$$(date +%s); \
	$(MAKE) --no-print-directory --keep-going -j4 --output-sync=target TEST_STARTED=$$started \
		$(TEST_TARGETS); \
	status=$$?; \
	setup=$$(sed -n 's/^setup-all //p' $(RESULTS)/targets.txt); \
	echo "test $$(( $$(date +%s) - started - $${setup:-0} ))" >> $(RESULTS)/targets.txt; \
	$(BIN)/python scripts/test_times.py $(RESULTS); exit $$status

# The suites start once all is set up (one make: each part is made once), the set-up's
# time being the wait for that. static needs only the main venv and the npm packages: it
# starts once they are there, beside the rest of the set-up (the other venvs and the
# class-data archives, a chain that left a core idle: 121 s at 60% of the two cores).
.PHONY: set-up-done
set-up-done: setup-all
	@echo "setup-all $$(( $$(date +%s) - $(TEST_STARTED) ))" >> $(RESULTS)/targets.txt
timed-test-newest timed-test-lowest: set-up-done
timed-static: setup $(NODE_STAMP)

# Lint, format, types and the TypeScript tests.
static: lint typecheck tstest

# timed-TARGET: make TARGET, and add its wall time to $(RESULTS)/targets.txt.
timed-%:
	@mkdir -p $(RESULTS); started=$$(date +%s); \
	$(MAKE) --no-print-directory $*; status=$$?; \
	echo "$* $$(( $$(date +%s) - started ))" >> $(RESULTS)/targets.txt; exit $$status

# The fast loop for edits: lint, format, types, the TypeScript tests and the tests not
# marked spark, kernel or browser.
check: lint typecheck tstest pytest-light

pytest-light: setup
	$(BIN)/python -m pytest -m "not spark and not kernel and not browser"

# The screenshots the README and docs show (docs/images), taken by the browser tests;
# a plain test run saves them to build/screenshots instead.
screenshots: setup browser
	JSS_SCREENSHOTS=$(abspath docs/images) $(BIN)/python -m pytest tests/e2e

# Every version the package accepts, proved (issue 18). The oldest supported Python with
# the lowest versions of the direct dependencies it allows (ci/lowest-direct.txt) runs
# the kernel-level suite; the newest supported Python, with the newest releases, every
# test (make test's main suite). Each has its own venv, made from a pyenv interpreter
# (or one on PATH; set PYTHON_OLDEST / PYTHON_NEWEST to choose); a missing interpreter
# fails, never skips.
PYENV_VERSIONS := $(or $(PYENV_ROOT),$(HOME)/.pyenv)/versions
PYTHON_OLDEST ?= $(firstword $(wildcard $(PYENV_VERSIONS)/3.10.*/bin/python3.10) $(shell command -v python3.10))
PYTHON_NEWEST ?= $(firstword $(wildcard $(PYENV_VERSIONS)/3.13.*/bin/python3.13) $(shell command -v python3.13))
LOWEST_VENV ?= .venv-py310-lowest
NEWEST_VENV ?= .venv-py313

# The kernel-level suite: sessions, files, the board and cancel (the panel's click while
# a cell is busy included), the private-API checks and fallbacks,
# the REST relay, and the unit tests (seconds). Not the browser tests: JupyterLab's
# frontend is not what varies with the Python packages. Nor local-cluster's runs of the
# classic tests: separate executor processes do not vary with them either (local[2] runs
# the same stories; make pytest runs local-cluster), and they were a third of its time.
# Nor the demo notebooks: what they show is tested here module by module (files per
# session: test_artifacts_kernel; the panel's cancel: test_job_board_kernel), and make
# pytest and test-newest run them. Nor the stories of recovery (a killed driver, a lost
# server: 2.5 min) and of the in-cell view through a kernel (1.4 min): the PySpark and
# ipykernel internals they rest on are checked here by test_private_apis,
# test_connect_private_apis and test_ipykernel_internals (issue 47: the whole make test
# within 15 minutes).
LOWEST_TESTS := tests/test_ipykernel_internals.py tests/test_private_api_fallbacks.py \
	tests/test_panel.py tests/test_job_board.py tests/test_job_tags.py \
	tests/test_magic_parsing.py tests/test_registry_with_fake_backend.py \
	tests/test_protocol_schema.py tests/test_artifacts.py tests/test_archives.py \
	tests/test_package.py tests/test_private_apis.py tests/test_connect_private_apis.py \
	tests/test_sessions_kernel.py tests/test_artifacts_kernel.py \
	tests/test_job_board_kernel.py tests/test_server_relay.py \
	tests/test_cell_progress.py \
	tests/test_job_descriptions.py tests/test_job_descriptions_kernel.py tests/test_builder_binding_kernel.py
# require-python PYTHON MAJOR.MINOR VARIABLE: fail in one line unless PYTHON runs that
# version (checked before anything is built).
define require-python
	@test -n "$(1)" && "$(1)" -c 'import sys; sys.exit(sys.version_info[:2] != ($(subst .,$(comma),$(2))))' 2>/dev/null \
		|| { echo "make $@: Python $(2) not found ($(3)='$(1)'; looked in $(PYENV_VERSIONS)/$(2).* and on PATH): run 'pyenv install $(2)' or set $(3)=/path/to/python$(2)" >&2; exit 1; }
endef
comma := ,

.PHONY: require-python-oldest require-python-newest
require-python-oldest:
	$(call require-python,$(PYTHON_OLDEST),3.10,PYTHON_OLDEST)
require-python-newest:
	$(call require-python,$(PYTHON_NEWEST),3.13,PYTHON_NEWEST)

$(LOWEST_VENV)/.installed: $(WHEEL) ci/lowest-direct.txt | require-python-oldest java-runtime
	"$(PYTHON_OLDEST)" -m venv $(LOWEST_VENV)
	$(call install-wheel,$(LOWEST_VENV),--constraint ci/lowest-direct.txt)
	touch $@

$(NEWEST_VENV)/.installed: $(WHEEL) | require-python-newest java-runtime
	"$(PYTHON_NEWEST)" -m venv $(NEWEST_VENV)
	$(call install-wheel,$(NEWEST_VENV),--upgrade --upgrade-strategy eager)
	$(NEWEST_VENV)/bin/python $(PIP_INSTALL) --upgrade --upgrade-strategy eager "$(WHEEL)[test-gateway]"
	touch $@

# The versions under test first, in the log. -p no:cacheprovider: these runs leave
# .pytest_cache to the main one.
SHOW_VERSIONS := pip list --format=freeze | grep -iE '^(pyspark|ipykernel|ipython|jupyterlab|jupyter.server|ipywidgets|pandas|comm|traitlets)=='

test-lowest: require-python-oldest $(LOWEST_VENV)/.jvm-class-data
	$(LOWEST_VENV)/bin/python -m $(SHOW_VERSIONS)
	$(LOWEST_VENV)/bin/python -m pytest -p no:cacheprovider $(PARALLEL_LOWEST) $(JUNIT) \
		-k "not local-cluster" $(LOWEST_TESTS)

# make test's main suite: every test, as make pytest runs them, on the newest Python with
# the newest releases. (It was a smoke subset run beside make pytest on Python 3.11; one
# suite on 3.13 tests more, and the two cores no longer run the subset's kernels and
# JVMs nor make a class-data archive for the 3.11 venv: issue 47.)
test-newest: require-python-newest $(NEWEST_VENV)/.jvm-class-data browser
	$(NEWEST_VENV)/bin/python -m $(SHOW_VERSIONS)
	$(NEWEST_VENV)/bin/python -m pytest -p no:cacheprovider $(PARALLEL) $(JUNIT)

# The class-data archive a test venv's JVMs start from (tests/jvm_options.py: about a
# minute, once; a test run makes it itself when it is missing).
%/.jvm-class-data: %/.installed
	$*/bin/python tests/jvm_options.py
	touch $@

# Everything `make test` needs installed: the three venvs (the main one for static; the
# newest and the lowest with their JVM class-data archives), Chromium, the npm packages.
# Made before the targets start side by side (two sub-makes must not build one wheel at
# once); starting the main suite before the other venvs were made was measured slower
# (their installs beside its first modules: 17:05 against 15:57, and timing-bound tests
# failed).
setup-all: setup browser require-python-oldest require-python-newest $(NODE_STAMP) \
		$(NEWEST_VENV)/.jvm-class-data $(LOWEST_VENV)/.jvm-class-data

# The npm packages of the lint, the type check and the TypeScript tests, after the wheel
# (whose build runs its own install in this folder: two at once would collide).
$(NODE_STAMP): package.json yarn.lock $(WHEEL) | setup
	$(JLPM) install --immutable
	touch $@

# Speed and memory targets (ratios against a baseline in the same run); rewrites
# docs/benchmarks.md. Run on a quiet machine: not part of `make test`.
bench: setup
	$(BIN)/python -m pip install --quiet "$(WHEEL)[test,bench]"
	$(BIN)/python benchmarks/board_overhead.py
	$(BIN)/python benchmarks/board_scale.py
	$(BIN)/python benchmarks/many_stages.py
	$(BIN)/python benchmarks/diagnosis_corpus.py
	$(BIN)/python benchmarks/cell_overhead.py
	$(BIN)/python benchmarks/cancel_latency.py
	$(BIN)/python benchmarks/connect_cancel_latency.py
	$(BIN)/python benchmarks/artifacts.py
	$(BIN)/python benchmarks/kernel_shutdown.py
	$(BIN)/python benchmarks/fair_share.py
	$(BIN)/python benchmarks/session_env.py
	$(BIN)/python benchmarks/python_worker_start.py
	$(BIN)/python benchmarks/spark_auth_cost.py
	$(BIN)/python benchmarks/spark_ui_route.py
	$(BIN)/python benchmarks/sql_cell.py
	$(BIN)/python benchmarks/sql_completion.py
	$(BIN)/python benchmarks/streaming_queries.py
	$(BIN)/python benchmarks/shared_driver.py
	$(BIN)/python benchmarks/shared_driver_prewarm.py
	$(BIN)/python benchmarks/connect_client_cost.py
	$(BIN)/python benchmarks/shared_driver_soak.py  # an hour
	$(BIN)/python benchmarks/report.py

clean:
	rm -rf $(VENV) $(LOWEST_VENV) $(NEWEST_VENV) $(WHEEL_DIR) node_modules lib jupyter_spark_sessions/labextension tsconfig.tsbuildinfo

# The JVM helper (java/, see jupyter_spark_sessions/backends/cell_scope.py), built with a
# JDK against the PySpark of .venv and committed, so installing needs only a Java runtime. The manifest records the
# sources' hash: tests/test_private_apis.py fails when the jar is older than java/.
JAVA_SOURCES := $(sort $(wildcard java/jss/*.java))
DRIVER_JAR := jupyter_spark_sessions/jars/jss-driver.jar

jar: setup $(JAVA_SOURCES)
	command -v javac >/dev/null || { echo "javac (a JDK 17+) is needed to build the jar"; exit 1; }
	rm -rf build/java && mkdir -p build/java/classes
	javac --release 17 -Xlint:all,-classfile,-processing,-path -Werror -d build/java/classes \
		-cp "$$($(BIN)/python -c 'import pyspark, os; print(os.path.dirname(pyspark.__file__))')/jars/*" \
		$(JAVA_SOURCES)
	printf 'Source-SHA256: %s\n' "$$(cat $(JAVA_SOURCES) | sha256sum | cut -d' ' -f1)" > build/java/manifest.txt
	jar --create --date=2026-01-01T00:00:00Z --file $(DRIVER_JAR) --manifest build/java/manifest.txt -C build/java/classes .
