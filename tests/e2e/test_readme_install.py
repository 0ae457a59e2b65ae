"""The install and editor pages stay true (README.md, docs/install.md, docs/editors/*.md): every version they
name is the project's, nothing installs the unrelated `acp-bridge` package, and the Zed and JetBrains
snippets are the shapes those editors document (Zed's `agent_servers` custom entry, JetBrains' `acp.json`),
starting the same command as the ACP Registry entry. The Zed snippet is checked where it appears: in the
README and on its editor page."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from acp_bridge import __version__

from .conftest import REPO

DOCS = REPO / "docs"
README = REPO / "README.md"
# Every page a user installs from: the README and every docs page.
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
DISTRIBUTION = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end == -1 else text[start:end]


def _json_after(text: str, label: str) -> dict[str, Any]:
    match = re.compile(r"```json\n(.*?)\n```", re.DOTALL).search(text, text.index(label))
    assert match is not None, label
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def _registry_command() -> list[str]:
    manifest = json.loads((REPO / "packaging" / "acp-registry" / "agent.json").read_text(encoding="utf-8"))
    uvx = manifest["distribution"]["uvx"]
    return [uvx["package"], *uvx["args"]]


def test_every_version_the_pages_name_is_the_projects() -> None:
    named: list[str] = []
    for page in PAGES:
        text = _text(page)
        named += re.findall(rf"{re.escape(DISTRIBUTION)}==([0-9][0-9A-Za-z.+-]*[0-9A-Za-z])", text)
        named += re.findall(rf"{DISTRIBUTION.replace('-', '_')}-([0-9][^-]*)-py3-none-any\.whl", text)
    assert re.search(rf"{re.escape(DISTRIBUTION)}==", _text(README)), "the README names no version"
    assert re.search(rf"{re.escape(DISTRIBUTION)}==", _text(DOCS / "install.md")), "install.md names none"
    assert set(named) == {__version__}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_no_page_installs_the_unrelated_acp_bridge_package(page: Path) -> None:
    # `acp-bridge` on PyPI is another project's: what installs or runs a package names acp-bridge-agent.
    assert DISTRIBUTION == "acp-bridge-agent"
    wrong = [
        r"\bacp-bridge==",  # a pin of the other project
        r"\bacp_bridge-[0-9]",  # a wheel of the other name
        r"\b(?:pip|pipx|uv tool|uv pip) install (?:-\S+ )*acp-bridge(?![\w-])",
        r"\buvx (?:-\S+ )*acp-bridge(?![\w-])",  # uvx PACKAGE fetches PACKAGE from PyPI
    ]
    text = _text(page)
    found = [match.group(0) for pattern in wrong for match in re.finditer(pattern, text)]
    assert found == []


# Where a Zed snippet is: the page, and the section of it (None: the whole page).
ZED_SNIPPETS: dict[str, tuple[Path, str | None]] = {
    "README.md": (README, "Zed"),
    "docs/editors/zed.md": (DOCS / "editors" / "zed.md", None),
}


@pytest.mark.parametrize("where", sorted(ZED_SNIPPETS))
def test_the_zed_snippet_is_a_custom_agent_server_running_the_registry_command(where: str) -> None:
    page, section = ZED_SNIPPETS[where]
    text = _text(page) if section is None else _section(_text(page), section)
    servers = _json_after(text, "settings.json")["agent_servers"]
    (entry,) = servers.values()
    assert set(entry) == {"type", "command", "args", "env"}
    assert entry["type"] == "custom"
    assert [entry["command"], *entry["args"]] == ["uvx", *_registry_command()]


def test_the_jetbrains_snippet_is_an_acp_json_agent_server_running_the_registry_command() -> None:
    servers = _json_after(_text(DOCS / "editors" / "jetbrains.md"), "acp.json")["agent_servers"]
    (entry,) = servers.values()
    assert set(entry) == {"command", "args", "env"}
    assert [entry["command"], *entry["args"]] == ["uvx", *_registry_command()]
