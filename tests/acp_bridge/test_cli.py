"""The command line's start-up cost: building the parser (and `serve --help`) loads neither a face's
libraries nor the tools' HTTP client, so `serve` meets its spawn → initialize budget. Each check runs in a
fresh interpreter, since this test process has long imported everything."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.bridge_harness import REPO

HEAVY = ("lsprotocol", "pygls", "httpx", "acp")


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )


def test_building_the_whole_parser_imports_no_face_library_and_no_http_client() -> None:
    probe = (
        "import json, sys\n"
        "import acp_bridge.cli as cli\n"
        "parser = cli.build_parser()\n"
        "parser.parse_args(['lsp', '--model', 'scripted'])\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    done = _python("-c", probe)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_serve_help_loads_only_the_command_line() -> None:
    done = _python("-X", "importtime", "-m", "acp_bridge", "serve", "--help")
    assert done.returncode == 0, done.stderr
    assert "--extra-tools" in done.stdout
    # -X importtime lines: "import time: self | cumulative | <indent>module".
    loaded = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "acp_bridge.cli" in loaded
    top = {name.split(".")[0] for name in loaded}
    assert not top & {*HEAVY, "registry_core", "presenters", "pydantic"}, sorted(top & {*HEAVY})


# What answers `initialize` must load none of: the registry, the tools (and pydantic, httpx), the session
# core, the mapping, the models, the ACP agent. `serve` loads them in a worker thread after answering.
CORE = (
    "registry_core", "presenters", "pydantic", "httpx", "anyio", "acp_bridge.acp.connection",
    "acp_bridge.session.manager", "acp_bridge.turn.loop", "acp_bridge.mapping", "acp_bridge.models",
    "acp_bridge.client.channel", "acp_bridge.auth.login", "acp_bridge.session.processes",
    "acp_bridge.history.store", "acp_bridge.permissions.policy",
)  # fmt: skip


def test_what_serve_answers_initialize_with_loads_none_of_the_core() -> None:
    probe = (
        "import json, sys\n"
        "import acp_bridge.cli as cli\n"
        "args = cli.build_parser(only='serve').parse_args(['serve', '--model', 'openai:x'])\n"
        "import acp_bridge.acp.serve, acp_bridge.acp.handshake\n"
        "from acp_bridge.runtime.boot import model_endpoint\n"
        "model_endpoint(args.model, args.base_url)\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({CORE!r}))))\n"
    )
    done = _python("-c", probe)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_main_lists_every_subcommand_and_parses_the_chosen_one_in_full() -> None:
    done = _python("-m", "acp_bridge", "--help")
    assert done.returncode == 0, done.stderr
    for name in ("serve", "demo", "lsp"):
        assert name in done.stdout
    from acp_bridge.cli import build_parser

    args = build_parser(only="lsp").parse_args(["lsp", "--mode", "plan", "--max-steps", "3"])
    assert (args.command, args.mode, args.max_steps) == ("lsp", "plan", 3)
    args = build_parser(only="serve").parse_args(["serve"])
    assert (args.mode, args.model, args.extra_tools) == ("default", "scripted", [])


def _load_core_probe(*serve_args: str) -> str:
    """A fresh interpreter that loads the ACP face's core (`serve.load_agent`, what the first `session/new`
    waits for) with `serve_args`, then prints which modules are loaded and whether garbage collection runs."""
    return (
        "import gc, json, sys\n"
        "import acp_bridge.cli as cli\n"
        f"args = cli.build_parser(only='serve').parse_args(['serve', '--no-history', *{serve_args!r}])\n"
        "from acp_bridge.acp.serve import AgentFacts, load_agent\n"
        "facts = AgentFacts(history=False, auth_endpoint=None, checkpoints=False)\n"
        "try:\n"
        "    load_agent(args, facts, None)\n"
        "except SystemExit as exc:\n"
        "    print(exc, file=sys.stderr)\n"
        "print(json.dumps({'modules': sorted(sys.modules), 'collecting': gc.isenabled()}))\n"
    )


def test_the_core_loads_the_module_of_its_own_model_backend_only() -> None:
    # The first `session/new` waits for the core: a backend's module (httpx for openai, the script's
    # pydantic models for scripted) is loaded only where that backend is the one configured.
    openai = _python("-c", _load_core_probe("--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1"))
    assert openai.returncode == 0, openai.stderr
    loaded = set(json.loads(openai.stdout)["modules"])
    assert "acp_bridge.models.openai" in loaded
    assert "acp_bridge.models.scripted" not in loaded
    scripted = _python("-c", _load_core_probe("--model", "scripted"))
    assert scripted.returncode == 0, scripted.stderr
    loaded = set(json.loads(scripted.stdout)["modules"])
    assert "acp_bridge.models.scripted" in loaded
    assert not {"acp_bridge.models.openai", "httpx"} & loaded


def test_garbage_collection_runs_again_once_the_core_is_loaded_or_failed_to_load() -> None:
    # The load pauses the collector (`boot.collection_paused`); a pause left on would leak every cycle.
    loaded = _python("-c", _load_core_probe("--model", "scripted"))
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout)["collecting"] is True
    failed = _python("-c", _load_core_probe("--extra-tools", "no_such_module_here:tools"))
    assert failed.returncode == 0, failed.stderr
    assert "--extra-tools 'no_such_module_here:tools'" in failed.stderr
    assert json.loads(failed.stdout)["collecting"] is True


def test_the_core_builds_web_fetch_without_loading_an_html_parser() -> None:
    # The first `session/new` waits for the core: `web_fetch` is built with it, but the HTML → Markdown
    # converter (`html.parser`) is loaded by the first page fetched (tests/presenters/test_web.py fetches
    # pages through it).
    done = _python("-c", _load_core_probe("--model", "scripted"))
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout)["modules"])
    assert "presenters.web" in loaded
    assert not {"presenters.html_text", "html.parser"} & loaded
