"""The end-to-end tests: the whole bridge as a real subprocess over real pipes (tests/support/), and
the clean-machine checks: the wheel, built once per session from a copy of the checkout's
files, and environments that share nothing with the checkout (another folder, no PYTHONPATH, no virtual
environment of the checkout's on PATH, no API key).

Those checks reach no package index: the build backend and the wheel's dependencies come from the
wheelhouse that `make wheelhouse` (part of `make test`) downloads once per uv.lock
(scripts/wheelhouse.py), and every child runs with pip and uv told to use no index and with its proxies
pointing at a 127.0.0.1 port that refuses connections, so an install that tried PyPI anyway fails.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from acp_bridge.common.credentials import SECRET_ENV_VARS
from tests.support.bridge_fixtures import bridges, compiled_packages, workspace

__all__ = ["bridges", "compiled_packages", "workspace"]

REPO = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 300
WHEELHOUSE = REPO / ".cache" / "wheelhouse"
# The Pythons the wheel runs on in these tests (the oldest and the newest supported).
WHEEL_PYTHONS = ("3.11", "3.13")
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


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


@functools.cache
def _refusing_socket() -> socket.socket:
    """A 127.0.0.1 port that is bound for this whole test session and never listened on: a connection
    to it is refused at once, and no other program can take the port meanwhile."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.bind(("127.0.0.1", 0))
    return held


def refusing_proxy() -> str:
    port = _refusing_socket().getsockname()[1]
    return f"http://127.0.0.1:{port}"


def no_index_env() -> dict[str, str]:
    """Installs from the wheelhouse only, and proof of it. pip: no index, the wheelhouse as its links.
    uv: offline (it reads no variable for `--no-index`, which the commands here pass), the same links.
    Anything that tries the network anyway goes to a proxy that refuses; only loopback goes direct."""
    env = {
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(WHEELHOUSE),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "UV_OFFLINE": "1",
        "UV_FIND_LINKS": str(WHEELHOUSE),
        "UV_PYTHON_DOWNLOADS": "never",  # only this machine's interpreters
        "NO_PROXY": "127.0.0.1,localhost,::1",
        "no_proxy": "127.0.0.1,localhost,::1",
    }
    env.update(dict.fromkeys(PROXY_VARIABLES, refusing_proxy()))
    return env


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without what would lead a child back to the checkout or its virtual
    environment, without API keys, and with no way to a package index (no_index_env)."""
    venv_bin = str(Path(sys.executable).parent)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "UV_PROJECT_ENVIRONMENT", *SECRET_ENV_VARS)
    }
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    env.update(no_index_env())
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
def wheelhouse() -> Path:
    """The wheelhouse, complete for uv.lock and WHEEL_PYTHONS; else the test fails saying to run
    `make wheelhouse` (a missing download is a set-up step not taken, not a reason to skip)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "wheelhouse.py"), "--check", "--dir", str(WHEELHOUSE),
         *(f"--python={version}" for version in WHEEL_PYTHONS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.fail(
            done.stderr.strip() or f"scripts/wheelhouse.py --check: exit {done.returncode}", pytrace=False
        )
    return WHEELHOUSE


def no_index_args(wheelhouse: Path) -> list[str]:
    """uv's options for the wheelhouse and nothing else."""
    return ["--no-index", "--find-links", str(wheelhouse)]


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


def build_wheel(uv: str, source: Path, out: Path, wheelhouse: Path) -> Path:
    """`uv build` (the sdist, then the wheel from the sdist), as `make wheel` does, with a fixed
    SOURCE_DATE_EPOCH and the build backend from the wheelhouse."""
    done = subprocess.run(
        [uv, "build", *no_index_args(wheelhouse), "--out-dir", str(out), str(source)],
        env=clean_env({"SOURCE_DATE_EPOCH": "315532800"}),
        cwd=out,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("acp_bridge_agent-*-py3-none-any.whl")
    return built


@pytest.fixture(scope="session")
def wheel(uv: str, wheel_source: Path, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel a release or the VS Code extension would ship."""
    return build_wheel(uv, wheel_source, tmp_path_factory.mktemp("dist"), wheelhouse)
