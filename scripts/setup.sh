#!/usr/bin/env bash
# Makes .venv hold exactly the tested set: the packages and versions of uv.lock, the project itself
# (editable) and its dev extra. Needs only a Python 3.11+ on PATH (scripts/find-python.sh) and PyPI: uv
# is the one on PATH when it is recent enough, else it is installed from PyPI into .tools/uv first.
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(bash scripts/find-python.sh)
# The uv requirement of the dev extra, so the bootstrap and the lock agree on uv's version.
uv_requirement=$("$py" -c 'import tomllib; dev = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["dev"]; print(next(r for r in dev if r.startswith("uv>")))')
uv_minimum=${uv_requirement#uv>=}
uv_minimum=${uv_minimum%%,*}
recent_enough() {
  "$py" - "$1" "$uv_minimum" <<'PYTHON'
import sys
def parse(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())
found = sys.argv[1].split()[1] if len(sys.argv[1].split()) > 1 else "0"
sys.exit(0 if parse(found) >= parse(sys.argv[2]) else 1)
PYTHON
}
uv=""
if command -v uv >/dev/null 2>&1 && recent_enough "$(uv --version)"; then
  uv=$(command -v uv)
elif [ -x .tools/uv/bin/uv ] && recent_enough "$(.tools/uv/bin/uv --version)"; then
  uv=.tools/uv/bin/uv
else
  echo "uv: installing $uv_requirement from PyPI into .tools/uv" >&2
  rm -rf .tools/uv
  "$py" -m venv .tools/uv
  .tools/uv/bin/python -m pip install -q --disable-pip-version-check "$uv_requirement"
  uv=.tools/uv/bin/uv
fi
echo "uv: using $uv ($("$uv" --version))" >&2
# --locked: fail if pyproject.toml and uv.lock disagree (run `uv lock` after changing a dependency),
# rather than quietly installing something else than what was tested. The machine's Python only.
# --compile-bytecode, as pip does: with PYTHONDONTWRITEBYTECODE set (CI), every bridge and MCP server a
# test spawns would otherwise compile its libraries from source again (seconds each, past start-up
# timeouts on a busy 2-core machine).
UV_PYTHON_DOWNLOADS=never "$uv" sync --locked --compile-bytecode --extra dev --python "$py"
