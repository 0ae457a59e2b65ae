# Every target sets itself up: a fresh clone needs nothing before `make demo` or `make test`.
# Set-up (scripts/setup.sh) picks a Python 3.11+ on PATH (PY=/path/to/python overrides; it says which),
# installs uv from PyPI if it is missing, and syncs .venv to uv.lock: the exact tested set.
PY      ?=
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test test-python test-extension lint types bench setup wheel clean

demo: $(STAMP)
	$(BIN)/acp-bridge demo

test: lint types test-python test-extension

setup: $(STAMP)

$(STAMP): pyproject.toml uv.lock scripts/setup.sh scripts/find-python.sh scripts/system-deps.sh
	PY="$(PY)" bash scripts/setup.sh
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

# dist/acp_bridge-<version>-py3-none-any.whl (and the sdist), built from a fresh copy of the sdist. The
# same commit gives the same wheel bytes: timestamps come from the commit, the build backend is pinned.
wheel: $(STAMP)
	rm -f dist/acp_bridge-*
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 315532800) $(BIN)/uv build --out-dir dist
	@ls dist/acp_bridge-*.whl

clean:
	rm -rf $(VENV) .tools .pytest_cache .mypy_cache .ruff_cache dist build *.egg-info
