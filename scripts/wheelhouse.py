"""Fills the wheelhouse the packaging tests install from with no package index (tests/e2e/): the wheels
of uv.lock's runtime set (`uv export --no-dev`, hashes checked) for each Python the tests run the built
wheel on, and the pinned build backend `uv build` needs. The tests then reach no package index at all.

    python scripts/wheelhouse.py [--dir DIR] [--python 3.11 --python 3.13 ...] [--check]

The Pythons are 3.11 and 3.13 (the wheel tests' oldest and newest) and that of `python3` on PATH (the
one the VS Code extension's first-use install picks). Compiled dependencies need one wheel per Python;
a dependency's environment markers are evaluated for each Python in turn. The download is skipped when
the stamp in DIR says it holds this set already; wheels of any other version are removed, so an install
from DIR can only pick the locked ones. `--check` downloads nothing: it exits 1, naming `make
wheelhouse`, when DIR is missing or out of date. Runs on the project's .venv (pip and packaging come with
its dev extra); the download is the only step that needs PyPI.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker, default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DIR = REPO / ".cache" / "wheelhouse"
TEST_PYTHONS = ("3.11", "3.13")
STAMP = ".complete.json"
DOWNLOAD_TIMEOUT_S = 900


@dataclass(frozen=True, slots=True)
class Pin:
    name: str
    version: str
    hashes: tuple[str, ...]
    marker: str | None

    def line(self) -> str:
        return " ".join([f"{self.name}=={self.version}", *(f"--hash={h}" for h in self.hashes)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--python", action="append", metavar="X.Y", help="a Python version (repeatable)")
    parser.add_argument("--check", action="store_true", help="only say whether DIR is complete")
    args = parser.parse_args()
    versions = sorted(set(args.python or [*TEST_PYTHONS, *path_python3()]), key=version_key)
    pins = locked_runtime_pins()
    build = build_backend_pins()
    wanted = Stamp(tuple(versions), platform_tag(), set_digest([*pins, *build]))
    stamp_path = args.dir / STAMP
    found = Stamp.read(stamp_path)
    if found is not None and found.covers(wanted):
        print(f"wheelhouse: {relative(args.dir)} is complete (Python {', '.join(versions)})", file=sys.stderr)
        return 0
    if args.check:
        state = "missing" if found is None else "out of date (uv.lock, the Pythons or the platform changed)"
        print(
            f"wheelhouse: {relative(args.dir)} is {state}; run `make wheelhouse` (`make test` does) to"
            f" download the locked wheels for Python {', '.join(versions)} once",
            file=sys.stderr,
        )
        return 1
    args.dir.mkdir(parents=True, exist_ok=True)
    stamp_path.unlink(missing_ok=True)
    for version in versions:
        download(
            args.dir, version, "uv.lock's runtime set", [p for p in pins if applies(p, version)], hashed=True
        )
        download(args.dir, version, "the build backend", build, hashed=False)
    removed = prune(args.dir, [*pins, *build])
    stamp_path.write_text(wanted.text(), encoding="utf-8")
    count = sum(1 for _ in args.dir.glob("*.whl"))
    print(
        f"wheelhouse: {relative(args.dir)} holds {count} wheels for Python {', '.join(versions)}"
        + (f" (removed {len(removed)} other files)" if removed else ""),
        file=sys.stderr,
    )
    return 0


@dataclass(frozen=True, slots=True)
class Stamp:
    """What a complete wheelhouse was made for: the Pythons, the platform and the pinned set."""

    pythons: tuple[str, ...]
    platform: str
    digest: str

    @classmethod
    def read(cls, path: Path) -> Stamp | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(tuple(data["pythons"]), data["platform"], data["set"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def covers(self, wanted: Stamp) -> bool:
        same_set = (self.platform, self.digest) == (wanted.platform, wanted.digest)
        return same_set and set(wanted.pythons) <= set(self.pythons)

    def text(self) -> str:
        return json.dumps({"pythons": self.pythons, "platform": self.platform, "set": self.digest}, indent=2)


def platform_tag() -> str:
    return f"{sys.platform}-{platform.machine()}"


def set_digest(pins: list[Pin]) -> str:
    return hashlib.sha256("\n".join(f"{p.line()} ; {p.marker}" for p in pins).encode()).hexdigest()


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def path_python3() -> list[str]:
    """The X.Y of `python3` on PATH when it is 3.11 or newer, else nothing."""
    python3 = shutil.which("python3")
    if python3 is None:
        return []
    done = subprocess.run(
        [python3, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    found = done.stdout.strip()
    ok = done.returncode == 0 and re.fullmatch(r"\d+\.\d+", found) and version_key(found) >= (3, 11)
    return [found] if ok else []


def uv() -> str:
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.exists() else shutil.which("uv")
    if found is None:
        sys.exit("wheelhouse: no uv beside this Python nor on PATH (`make setup` installs it)")
    return found


def locked_runtime_pins() -> list[Pin]:
    """uv.lock's packages that the installed wheel needs (no dev extra, not the project itself)."""
    done = subprocess.run(
        [uv(), "export", "--frozen", "--no-dev", "--no-emit-project", "--no-header", "--no-annotate",
         "--format", "requirements.txt"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"wheelhouse: uv export failed: {done.stderr.strip()}")
    # One requirement per logical line; its hashes follow on continuation lines.
    logical = re.sub(r"\\\n\s*", " ", done.stdout)
    pins = []
    for line in logical.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        spec, *options = line.split(" --hash=")
        requirement = Requirement(spec.strip())
        (specifier,) = requirement.specifier
        pins.append(
            Pin(
                str(canonicalize_name(requirement.name)),
                specifier.version,
                tuple(o.strip() for o in options),
                str(requirement.marker) if requirement.marker else None,
            )
        )
    return pins


def build_backend_pins() -> list[Pin]:
    """What `uv build` installs to build the wheel: `[build-system] requires`, each pinned by the
    project's build constraints (so the wheel's bytes do not depend on the day it is built)."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    constraints = {
        canonicalize_name(r.name): r
        for r in map(Requirement, pyproject["tool"]["uv"].get("build-constraint-dependencies", []))
    }
    pins = []
    for requirement in map(Requirement, pyproject["build-system"]["requires"]):
        pinned = constraints.get(canonicalize_name(requirement.name))
        exact = [s for s in pinned.specifier if s.operator == "=="] if pinned else []
        if not exact:
            sys.exit(f"wheelhouse: build requirement {requirement} has no == constraint in pyproject.toml")
        pins.append(Pin(str(canonicalize_name(requirement.name)), exact[0].version, (), None))
    return pins


def applies(pin: Pin, version: str) -> bool:
    """The pin's marker, for `version` on this machine's platform and implementation."""
    if pin.marker is None:
        return True
    environment: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    if version != environment["python_version"]:
        environment.update(python_version=version, python_full_version=f"{version}.0")
    return Marker(pin.marker).evaluate(environment)


def download(directory: Path, version: str, what: str, pins: list[Pin], *, hashed: bool) -> None:
    """`pip download` of exactly `pins` for Python `version` on this platform: wheels only, no
    dependency resolution (the list is the whole set). A wheel already there with the right hash is kept.
    Errors only (-qq): pip configurations that name local indexes warn once per package otherwise."""
    if not pins:
        return
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as requirements:
        requirements.write("\n".join(p.line() for p in pins) + "\n")
    try:
        command = [
            sys.executable, "-m", "pip", "download", "-qq", "--disable-pip-version-check", "--no-input",
            "--no-deps", "--only-binary=:all:", "--python-version", version, "--dest", str(directory),
            *(["--require-hashes"] if hashed else []),
            "-r", requirements.name,
        ]  # fmt: skip
        print(f"wheelhouse: Python {version}: {what} ({len(pins)}) from PyPI", file=sys.stderr)
        # The index is the point here, whatever a caller's environment says for the tests.
        env = {k: v for k, v in os.environ.items() if k not in ("PIP_NO_INDEX", "PIP_FIND_LINKS")}
        done = subprocess.run(command, env=env, timeout=DOWNLOAD_TIMEOUT_S, check=False)
        if done.returncode != 0:
            sys.exit(f"wheelhouse: pip download for Python {version} failed (exit {done.returncode})")
    finally:
        os.unlink(requirements.name)


def prune(directory: Path, pins: list[Pin]) -> list[Path]:
    """Removes what is not one of `pins` (an older lock's wheels, partial downloads)."""
    wanted = {(p.name, Version(p.version)) for p in pins}
    removed = []
    for path in directory.iterdir():
        if path.name == STAMP:
            continue
        keep = False
        if path.suffix == ".whl":
            name, version, _build, _tags = parse_wheel_filename(path.name)
            keep = (str(name), version) in wanted
        if not keep:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
    return removed


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
