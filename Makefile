# redline — `make help` lists the targets.
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
PIP   := $(VENV)/bin/pip
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)
# Every pip install (maturin develop's too) takes the tested versions from constraints.txt.
export PIP_CONSTRAINT := $(abspath constraints.txt)

.DEFAULT_GOAL := help
.PHONY: help install demo scale-demo test test-rust test-python lint bench bench-taskqueue bench-syscalls clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  make %-16s %s\n", $$1, $$2}'

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip

install: $(VENV)/bin/python ## create .venv; install build tools, redline (release build, with its ray extra) and taskqueue
	$(PIP) install -q 'maturin>=1.5,<2'
	$(PIP) install -q -e 'services/taskqueue[test]'
	$(VENV)/bin/maturin develop --release --quiet --extras test,lint,ray,otlp
	@$(PY) -c "import redline, taskqueue; print('installed redline', redline.__version__)"

demo: install ## find taskqueue's capacity (redline demo): four answers, demo-report.html/.md
	$(PY) examples/demo.py

scale-demo: install ## taskqueue on PostgreSQL: redline find on 1 instance, then 2 behind nginx (apt: postgresql nginx)
	$(PY) bench/taskqueue_scale.py

test: install test-rust test-python ## cargo test + pytest (CI: `.ci/run` runs lint, then test)

# The Rust tests build once, in the `checked` profile: optimised like release, with integer
# overflow checks and debug assertions on, and without release's LTO (21 test binaries each
# linked with thin LTO took 12 of CI's 45 minutes, on top of a second build for the checks).
test-rust: ## the engine's and the target server's tests (profile `checked`)
	cargo test --profile checked -p redline-engine -p redline-target

# -ra names every skip with its reason; --durations lists the slowest tests (CI's time budget).
# Most tests wait on servers rather than use the CPU (the whole suite uses about a third of one
# core), so they run on PYTEST_WORKERS pytest-xdist workers; the few that load or measure the
# machine's CPUs on purpose (marked `alone`: busy loops, the local Ray clusters) run after
# them, by themselves. PYTEST_WORKERS=0 runs everything in one process. --dist loadgroup (no
# test has a group: each is its own unit) hands a test to a worker as it frees up; the default
# `load` gives each worker a first batch of dozens in collected order, so every slow test went
# to the first worker and the suite took 12 min instead of 6.
PYTEST_WORKERS ?= 3
XDIST = -n $(PYTEST_WORKERS) --dist loadgroup
test-python:
	$(PY) -m pytest -q -ra --durations=15 $(XDIST) -m "not alone" tests
	$(PY) -m pytest -q -ra -m alone tests
	cd services/taskqueue && PYTHONPATH=$(abspath tests) $(abspath $(PY)) -m pytest -q -ra --durations=10 $(XDIST) -p leftovers -p slowfirst -m "not alone" tests
	cd services/taskqueue && PYTHONPATH=$(abspath tests) $(abspath $(PY)) -m pytest -q -ra -p leftovers -m alone tests

lint: install ## rustfmt, clippy, ruff, mypy
	cargo fmt --all --check
	cargo clippy --release -p redline-engine -p redline-target -p redline-py --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests bench examples services/taskqueue
	$(VENV)/bin/mypy python/redline examples  # examples: the library as a user's script types it
	cd services/taskqueue && $(abspath $(VENV))/bin/mypy src/taskqueue

bench: install ## redline vs wrk/hey/k6/locust side by side (needs ../shared/tools/install-peers.sh)
	$(PY) bench/run.py

bench-taskqueue: install ## taskqueue: status GETs, durable submissions, seed-000 mix (wrk, k6)
	$(PY) bench/taskqueue.py

bench-syscalls: install ## syscalls per request under strace -c -f (redline, wrk)
	$(PY) bench/syscalls.py

clean: ## remove build outputs and the venv
	rm -rf target $(VENV) .pytest_cache
