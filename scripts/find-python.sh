#!/usr/bin/env bash
# Prints the path of the Python interpreter the project's virtual environment is made with: $PY when set, else the
# first of python3.11, python3.12, python3.13, python3.14, python3 on PATH that runs and is 3.11 or newer
# (the oldest first: the version the project is developed and measured on; the wheel tests cover 3.13).
# Says which one it picked on stderr; exits 1, saying what to do, when none fits.
set -euo pipefail
candidates=(python3.11 python3.12 python3.13 python3.14 python3)
if [ -n "${PY:-}" ]; then
  candidates=("$PY")
fi
for candidate in "${candidates[@]}"; do
  command -v "$candidate" >/dev/null 2>&1 || continue
  # A version manager's shim may exist for a version that is not installed: ask the interpreter itself.
  found=$("$candidate" -c 'import sys; v = sys.version_info; print(f"{v[0]}.{v[1]}.{v[2]} {sys.executable}") if v >= (3, 11) else sys.exit(1)' 2>/dev/null) || continue
  echo "python: using $candidate (Python ${found%% *}, ${found#* })" >&2
  echo "${found#* }"
  exit 0
done
echo "python: no Python 3.11 or newer found (tried ${candidates[*]}); install one (python.org, your package manager, pyenv) or run make PY=/path/to/python3.X" >&2
exit 1
