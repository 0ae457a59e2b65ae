"""The end-to-end tests: the whole bridge as a real subprocess over real pipes (tests/support/), and
the clean-machine checks: the wheel, built once per session from a copy of the checkout's
files, and environments that share nothing with the checkout (another folder, no PYTHONPATH, no virtual
environment of the checkout's on PATH, no API key).

Downloads are cached across runs where pip and uv keep them anyway (the user's cache folders), so only a
first run on a machine pays for them.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from acp_bridge.credentials import SECRET_ENV_VARS
from tests.support.bridge_fixtures import bridges, compiled_packages, workspace

__all__ = ["bridges", "compiled_packages", "workspace"]

REPO = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 300


def uv_executable() -> str | None:
    """uv from the test's own environment (the dev extra installs it), else from PATH."""
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.exists() else shutil.which("uv")


def uvx_executable(uv: str) -> str:
    """`uvx` beside `uv` (both come with the uv package); `uvx` is `uv tool run`."""
    beside = Path(uv).parent / "uvx"
    found = str(beside) if beside.exists() else shutil.which("uvx")
    if found is None:
        pytest.skip(f"uvx is not beside {uv} nor on PATH")
    return found


def python_executable(version: str) -> str | None:
    """The absolute path of a working `python<version>`: from PATH, else from pyenv's versions (whose shims
    answer "command not found" for versions that are installed but not selected)."""
    candidates = [f"python{version}"]
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/{version}*/bin/python{version}"), reverse=True)
    for candidate in candidates:
        try:
            done = subprocess.run(
                [candidate, "-c", "import sys; print(sys.executable)"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    return None


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without what would lead a child back to the checkout or its virtual
    environment, and without API keys."""
    venv_bin = str(Path(sys.executable).parent)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "UV_PROJECT_ENVIRONMENT", *SECRET_ENV_VARS)
    }
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    env["UV_PYTHON_DOWNLOADS"] = "never"  # only this machine's interpreters
    # uvx's environments get bytecode as pip's do (PYTHONDONTWRITEBYTECODE would recompile every run).
    env["UV_COMPILE_BYTECODE"] = "1"
    env["NO_COLOR"] = "1"
    env.update(extra or {})
    return env


@pytest.fixture(scope="session")
def uv() -> str:
    found = uv_executable()
    if found is None:
        pytest.skip("uv is not installed (`make setup` installs it with the dev extra)")
    return found


@pytest.fixture(scope="session")
def uv_cache(uv: str) -> str:
    """uv's cache folder as this user has it, for children whose HOME is a temporary one."""
    done = subprocess.run([uv, "cache", "dir"], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def _source_files() -> list[str]:
    """What a fresh clone has (plus files not yet committed, unless ignored): never a build's leftovers."""
    done = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"not a git checkout, cannot tell the sources from build output: {done.stderr!r}")
    return [name for name in done.stdout.decode().split("\0") if name and (REPO / name).is_file()]


@pytest.fixture(scope="session")
def wheel_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout's files that go into the sdist and the wheel."""
    source = tmp_path_factory.mktemp("source")
    for name in _source_files():
        if name.startswith(("vscode-extension/", "tests/", "benchmarks/")):
            continue  # not in the package; the extension alone has thousands of files
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    return source


def build_wheel(uv: str, source: Path, out: Path) -> Path:
    """`uv build` (the sdist, then the wheel from the sdist), as `make wheel` does, with a fixed
    SOURCE_DATE_EPOCH."""
    done = subprocess.run(
        [uv, "build", "--out-dir", str(out), str(source)],
        env=clean_env({"SOURCE_DATE_EPOCH": "315532800"}),
        cwd=out,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("acp_bridge-*-py3-none-any.whl")
    return built


@pytest.fixture(scope="session")
def wheel(uv: str, wheel_source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel a release or the VS Code extension would ship."""
    return build_wheel(uv, wheel_source, tmp_path_factory.mktemp("dist"))
