# Every target sets itself up: a fresh clone needs nothing before `make demo` or `make test`.
PY      ?= python3.11
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test test-python test-extension lint types bench setup clean

demo: $(STAMP)
	$(BIN)/acp-bridge demo

test: lint types test-python test-extension

setup: $(STAMP)

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null || { echo "need $(PY) on PATH" >&2; exit 1; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	bash scripts/system-deps.sh
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check registry_core presenters acp_bridge tests benchmarks
	$(BIN)/ruff format --check registry_core presenters acp_bridge tests benchmarks

types: $(STAMP)
	$(BIN)/mypy

test-python: $(STAMP)
	$(BIN)/pytest -q

test-extension: $(STAMP)
	bash vscode-extension/scripts/test.sh

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
