# Every target sets itself up from nothing and is idempotent: `make demo`, `make test`.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
UV_VERSION := 0.13.9
UV := $(or $(shell command -v uv 2>/dev/null),$(CURDIR)/.tools/bin/uv)
export CLAUDE_CODE_VERSION := 2.1.330
export PATH := $(CURDIR)/$(VENV)/bin:$(CURDIR)/.tools/bin:$(PATH)

.PHONY: help env lint fmt prereqs test test-fast test-slow bench demo dist install clean

help:
	@echo "make demo   run the main job: a Springfield build loop on a throw-away project"
	@echo "make test   lint and the whole test suite (installs and starts what it needs)"
	@echo "make bench  benchmarks, printed as tables"
	@echo "make lint   ruff, mypy and the docs checker (links, anchors, examples)"
	@echo "make dist   wheels and sdists of pensa, ralph and sgf in dist/"
	@echo "make install  sgf, pn and ralph on your PATH with uv tool install"

$(CURDIR)/.tools/bin/uv:
	python3 -m venv .tools
	.tools/bin/pip install -q uv==$(UV_VERSION)

$(VENV)/.synced: uv.lock pyproject.toml $(wildcard packages/*/pyproject.toml) | $(UV)
	$(UV) sync --all-packages --locked --quiet --compile-bytecode
	touch $@

# The workspace's own sources are installed editable, so `--compile-bytecode` skips them, and
# with PYTHONDONTWRITEBYTECODE set (as on our CI machines) every pn/ralph/sgf process would
# compile them again on every run. compileall writes the .pyc files regardless of that
# variable and only recompiles what changed.
env: $(VENV)/.synced
	$(VENV)/bin/python -m compileall -q -j0 packages/pensa/src packages/ralph/src packages/sgf/src

lint: env
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy packages/pensa/src packages/ralph/src packages/sgf/src
	$(VENV)/bin/mypy conftest.py scripts
	# One run per test tree: each holds its own conftest.py and test_cli.py.
	for tree in packages/*/tests tests bench; do \
	  if compgen -G "$$tree/*.py" >/dev/null; then $(VENV)/bin/mypy "$$tree"; fi; \
	done
	# The manual's links and anchors resolve and its examples parse against the real CLIs.
	$(VENV)/bin/python scripts/check_docs.py

fmt: env
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# Docker engine, local base image and the pinned agent CLIs: installed/started when missing.
prereqs:
	scripts/ensure-docker.sh
	scripts/ensure-base-image.sh
	scripts/ensure-claude.sh >/dev/null
	scripts/ensure-agents.sh >/dev/null

# Branch coverage of the tests and every process they start (pyproject [tool.coverage.run]);
# the floor sits a little under the first honest figure (94.0% total; pensa 93.5, ralph 95.2,
# sgf 93.2 on 2026-11-23) and only ever goes up.
COVERAGE_FLOOR := 92
export COVERAGE_FILE := $(CURDIR)/.coverage

# Two pytest workers (pytest-xdist), one per core: most tests wait on git, Docker or a child
# process, so two at a time roughly halve the suite; worksteal evens out the long e2e tests.
WORKERS ?= 2

test: env lint prereqs
	rm -f .coverage .coverage.*
	SPRINGFIELD_CLAUDE="$$(scripts/ensure-claude.sh)" $(VENV)/bin/coverage run -m pytest \
	  -n $(WORKERS) --dist worksteal --durations=20
	$(VENV)/bin/coverage combine --quiet
	for pkg in pensa ralph sgf; do \
	  printf '%-6s %6s%%\n' $$pkg "$$($(VENV)/bin/coverage report --include="*/packages/$$pkg/src/*" --format=total)"; \
	done
	printf '%-6s %6s%% (floor %s%%)\n' total "$$($(VENV)/bin/coverage report --format=total)" $(COVERAGE_FLOOR)
	$(VENV)/bin/coverage report --fail-under=$(COVERAGE_FLOOR) >/dev/null

# Quick loop for developers: the pure tests, in-process, no lint and no set-up. A test that
# starts any program carries `process` (or docker, an agent's marker, e2e); the root conftest
# fails one that starts a program without it, so nothing slow creeps in unmarked.
test-fast: env
	$(VENV)/bin/pytest -n $(WORKERS) --dist worksteal \
	  -m "not (process or docker or claude or codex or opencode or gemini or e2e)"

# The long model-based run: thousands of random pn and git steps on two clones (~0.3 s a
# step), without the suite's 300 s limit per test, which cut it short.
test-slow: env
	PENSA_MODEL_STEPS=$${PENSA_MODEL_STEPS:-3000} $(VENV)/bin/pytest --timeout=0 \
	  packages/pensa/tests/committed/test_sync_model.py

# Every benchmark runs, each printing its table; the target fails after them if one missed.
bench: env prereqs
	export SPRINGFIELD_CLAUDE="$$(scripts/ensure-claude.sh)"; failed=""; \
	for script in bench/bench_*.py; do $(VENV)/bin/python "$$script" || failed="$$failed $$script"; done; \
	if [ -n "$$failed" ]; then echo "benchmarks that missed a target or failed:$$failed"; exit 1; fi

demo: env
	scripts/demo.sh

# The three wheels and sdists: the unit a user installs.
dist: | $(UV)
	rm -rf dist
	$(UV) build --all-packages --out-dir dist

# The README's install command: sgf with pensa and ralph, all three executables on PATH.
install: | $(UV)
	$(UV) tool install --force --compile-bytecode ./packages/sgf --with ./packages/pensa \
	  --with ./packages/ralph --with-executables-from pensa,ralph

clean:
	rm -rf dist $(VENV) .tools .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.*
