# Every target sets itself up: a fresh clone needs nothing before `make demo` or `make test`.
# Set-up (scripts/setup.sh) picks a Python 3.11+ on PATH (PY=/path/to/python overrides; it says which),
# installs uv from PyPI if it is missing, and syncs .venv to uv.lock: the exact tested set.
# The tests reach no package index: what they install comes from the wheelhouse (`make wheelhouse`, part
# of `make test`'s set-up), the locked wheels downloaded once per lock into a git-ignored folder.
PY         ?=
VENV       := .venv
BIN        := $(VENV)/bin
STAMP      := $(VENV)/.installed
WHEELHOUSE := .cache/wheelhouse
# For the extension's tests: its wheel build (uv) and its first-use install (pip, in code-server) take
# packages from the wheelhouse only. uv has no environment variable for --no-index: offline instead.
NO_INDEX   := PIP_NO_INDEX=1 PIP_FIND_LINKS=$(CURDIR)/$(WHEELHOUSE) UV_OFFLINE=1 UV_FIND_LINKS=$(CURDIR)/$(WHEELHOUSE)

.PHONY: demo test test-python test-extension lint types bench setup wheelhouse editor-clients wheel clean

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

# One worker per core (pytest-xdist), a test file per worker: most tests wait on subprocesses and pipes, and
# a file's module fixtures stay in one worker.
test-python: $(STAMP) wheelhouse editor-clients
	$(BIN)/pytest -q -n auto --dist loadfile

# The editors the client tests drive: Neovim 0.11 (PyPI) and Emacs 29+ (Debian), for the tests only.
editor-clients: $(STAMP)
	bash scripts/editor-clients.sh

test-extension: $(STAMP) wheelhouse
	$(NO_INDEX) bash vscode-extension/scripts/test.sh

# The locked runtime wheels for Python 3.11, 3.13 and the python3 on PATH, and the build backend, from
# PyPI; a no-op when $(WHEELHOUSE) already holds them (scripts/wheelhouse.py).
wheelhouse: $(STAMP)
	$(BIN)/python scripts/wheelhouse.py --dir $(WHEELHOUSE)

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# dist/acp_bridge_agent-<version>-py3-none-any.whl (and the sdist), built from a fresh copy of the sdist. The
# same commit gives the same wheel bytes: timestamps come from the commit, the build backend is pinned.
wheel: $(STAMP)
	rm -f dist/acp_bridge_agent-*
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 315532800) $(BIN)/uv build --out-dir dist
	@ls dist/acp_bridge_agent-*.whl

clean:
	rm -rf $(VENV) .tools .cache .pytest_cache .mypy_cache .ruff_cache dist build *.egg-info
