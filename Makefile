# hookchain: `make demo` replays example sessions through every plugin; `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PLUGINS := $(sort $(dir $(wildcard plugins/*/pyproject.toml)))
PLUGIN_TESTS := $(wildcard plugins/*/tests)
# Each plugin folder holds a package of the same name: plugins/loop_breaker/loop_breaker.
PLUGIN_PACKAGES := $(foreach p,$(PLUGINS),$(p)$(notdir $(patsubst %/,%,$(p))))
STAMP := $(VENV)/.installed

.PHONY: install harnesses test lint typecheck pytest demo bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall when any package definition changes; the host first so plugins find it installed.
$(STAMP): $(BIN)/python pyproject.toml $(wildcard plugins/*/pyproject.toml)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	for plugin in $(PLUGINS); do $(BIN)/python -m pip install --quiet -e "$${plugin}[test]" || exit 1; done
	touch $(STAMP)

install: $(STAMP)

lint: install
	$(BIN)/ruff check framework tests benchmarks examples plugins
	$(BIN)/ruff format --check framework tests benchmarks examples plugins
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy
	$(if $(PLUGIN_PACKAGES),$(BIN)/mypy $(PLUGIN_PACKAGES))

# The real Claude Code binary of the end-to-end suite, npm-installed once into .cache/ (gitignored).
# Without node/npm it says the suite will skip; under CI=true that is an error.
# The Agent SDK (its wheel bundles a Claude Code CLI, ~385 MB) goes into the venv as an extra.
harnesses: install $(VENV)/.agent-sdk
	$(PYTHON) tests/e2e_claude_code/harness.py install

$(VENV)/.agent-sdk: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[agent-sdk]'
	touch $@

pytest: install harnesses
	$(BIN)/python -m pytest -q tests $(PLUGIN_TESTS)

test: lint typecheck pytest

demo: install
	$(BIN)/hookchain replay examples/transcripts

bench: install
	$(BIN)/python benchmarks/dispatch.py
	for script in $(filter-out benchmarks/dispatch.py,$(wildcard benchmarks/*.py)) $(wildcard plugins/*/benchmarks/*.py); do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .import_linter_cache .cache/harnesses
