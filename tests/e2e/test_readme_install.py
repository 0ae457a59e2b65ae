"""The README's install section stays true: every version it names is the project's, and the Zed and
JetBrains snippets are the shapes those editors document (Zed's `agent_servers` custom entry, JetBrains'
`acp.json`), starting the same command as the ACP Registry entry."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

from acp_bridge import __version__

from .conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
DISTRIBUTION = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end]


def _json_after(label: str) -> dict[str, Any]:
    section = _section("Install and editor set-up")
    match = re.compile(r"```json\n(.*?)\n```", re.DOTALL).search(section, section.index(label))
    assert match is not None, label
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def _registry_command() -> list[str]:
    manifest = json.loads((REPO / "packaging" / "acp-registry" / "agent.json").read_text(encoding="utf-8"))
    uvx = manifest["distribution"]["uvx"]
    return [uvx["package"], *uvx["args"]]


def test_every_version_the_readme_names_is_the_projects() -> None:
    named = re.findall(rf"{re.escape(DISTRIBUTION)}==([0-9][0-9A-Za-z.+-]*[0-9A-Za-z])", README)
    named += re.findall(rf"{DISTRIBUTION.replace('-', '_')}-([0-9][^-]*)-py3-none-any\.whl", README)
    assert named, "the README names no version"
    assert set(named) == {__version__}


def test_the_readme_never_installs_the_unrelated_acp_bridge_package() -> None:
    # `acp-bridge` on PyPI is another project's: what installs or runs a package names acp-bridge-agent.
    assert DISTRIBUTION == "acp-bridge-agent"
    wrong = [
        r"\bacp-bridge==",  # a pin of the other project
        r"\bacp_bridge-[0-9]",  # a wheel of the other name
        r"\b(?:pip|pipx|uv tool|uv pip) install (?:-\S+ )*acp-bridge(?![\w-])",
        r"\buvx (?:-\S+ )*acp-bridge(?![\w-])",  # uvx PACKAGE fetches PACKAGE from PyPI
    ]
    found = [match.group(0) for pattern in wrong for match in re.finditer(pattern, README)]
    assert found == []


def test_the_zed_snippet_is_a_custom_agent_server_running_the_registry_command() -> None:
    servers = _json_after("**Zed**")["agent_servers"]
    (entry,) = servers.values()
    assert set(entry) == {"type", "command", "args", "env"}
    assert entry["type"] == "custom"
    assert [entry["command"], *entry["args"]] == ["uvx", *_registry_command()]


def test_the_jetbrains_snippet_is_an_acp_json_agent_server_running_the_registry_command() -> None:
    servers = _json_after("**JetBrains IDEs**")["agent_servers"]
    (entry,) = servers.values()
    assert set(entry) == {"command", "args", "env"}
    assert [entry["command"], *entry["args"]] == ["uvx", *_registry_command()]
