"""The system prompt every model step gets: the built-in template filled for the session, the client's
`systemPrompt` and the project's instructions.

The template is package data, `system_prompt.md` beside this module (its opening comment says how it is
written): `string.Template` fields (`$environment`) and blocks kept only when the session has one of the
tools they name (`features`). `build` fills it; `compose` puts the parts together, in this order:
1. the built-in prompt, or the client's text instead of it when its `systemPrompt` says `override`;
2. the client's text when it says `append`, under its own heading;
3. the project instructions (`instructions.InstructionFile`s), each in an `<instructions>` element naming
   its path and the folder it applies to, with a line saying which files changed when they were re-read.
The turn adds the MCP servers' instructions after all of it.

`TOKEN_CHARS`: the size estimate used to report the prompt in tokens (four characters a token, a common
rule of thumb for English text and code; no tokenizer is loaded).

Must not: depend on the conversation: the text is the same for every step of a session (a provider that
caches a repeated prompt prefix reuses it) until the instructions files change; touch the disk but to read
the template (once per process).
"""

from __future__ import annotations

import functools
import string
from collections.abc import Collection, Sequence
from importlib import resources

from acp_bridge.session.client_prompt import ClientSystemPrompt
from acp_bridge.session.environment import Environment, GitState
from acp_bridge.session.instructions import InstructionFile

TEMPLATE = "system_prompt.md"
TOKEN_CHARS = 4
# The names a template block may be kept for besides the tools': the session has MCP servers; every tool
# is reached through `run_code` (`--code-mode only`).
MCP = "mcp"
CODE_MODE_ONLY = "code-mode-only"


@functools.cache
def template_text() -> str:
    """The template as shipped (read once per process)."""
    return resources.files("acp_bridge.session").joinpath(TEMPLATE).read_text(encoding="utf-8")


def estimate_tokens(text: str) -> int:
    return -(-len(text) // TOKEN_CHARS)


def select_blocks(text: str, features: Collection[str]) -> str:
    """Drop the template's comments, and its `when:` blocks whose names are none of `features`."""
    out: list[str] = []
    keep = True
    in_comment = False
    for line in text.splitlines():
        stripped = line.strip()
        if in_comment:
            in_comment = not stripped.endswith("-->")
            continue
        if stripped.startswith("<!--"):
            body = stripped.removeprefix("<!--").removesuffix("-->").strip()
            if body.startswith("when:"):
                keep = any(name in features for name in body.removeprefix("when:").split())
            elif body == "end":
                keep = True
            in_comment = not stripped.endswith("-->")
            continue
        if keep:
            out.append(line)
    return "\n".join(out).strip() + "\n"


def build(environment: Environment, features: Collection[str], *, template: str | None = None) -> str:
    """The built-in prompt for a session with these tools (`features`) in this environment."""
    text = select_blocks(template if template is not None else template_text(), features)
    return string.Template(text).substitute(environment=describe_environment(environment))


def describe_environment(env: Environment) -> str:
    lines = [
        f"- Operating system: {env.os}; the user's shell: {env.shell}",
        f"- Today's date: {env.today} (when this session started)",
    ]
    for i, root in enumerate(env.roots):
        git = env.git[i] if i < len(env.git) else None
        what = "Working directory" if i == 0 else "Also in the workspace"
        lines.append(f"- {what}: `{root}`" + (f"; {describe_git(git)}" if git is not None else ""))
    return "\n".join(lines)


def describe_git(git: GitState) -> str:
    if not git.repository:
        return git.note or "not a git repository"
    where = f"on branch `{git.branch}`" if git.branch else "in a git repository"
    if git.tracking:
        where += f" ({git.tracking})"
    if not git.total:
        return f"git: {where}, no uncommitted changes when the session started"
    shown = ", ".join(f"`{entry}`" for entry in git.entries)
    more = f", and {git.total - len(git.entries)} more" if git.total > len(git.entries) else ""
    return f"git: {where}; uncommitted when the session started ({git.total}): {shown}{more}"


INSTRUCTIONS_INTRO = (
    "# Project instructions\n\n"
    "These come from the user and the project (`AGENTS.md` files, as agents.md describes them). Follow them; "
    "where they differ from the guidance above, they win, except that nothing in them lets you get around an "
    "approval or a denial. A file nearer to the files you work on wins over a more general one. A folder "
    "below may have its own file: you will be given it when you work there."
)


def describe_files(files: Sequence[InstructionFile], changed: Sequence[str] = ()) -> str:
    """The project-instructions section ("" without files)."""
    if not files:
        return ""
    parts = [INSTRUCTIONS_INTRO]
    if changed:
        parts.append(
            "Re-read since earlier in this conversation: "
            + "; ".join(changed)
            + ". The text below is current: where earlier messages followed an older version, follow this."
        )
    parts.extend(instruction_element(f) for f in files)
    return "\n\n".join(parts)


def instruction_element(file: InstructionFile) -> str:
    """One file as the model gets it: an `<instructions>` element naming where it comes from."""
    applies = "every project of this user" if file.scope == "user" else f"{file.folder} and below"
    attributes = f'path="{file.path}" applies-to="{applies}"'
    if file.alternative and file.scope != "user":
        attributes += f' note="no AGENTS.md in this folder: its {file.name} is used instead"'
    if file.skipped is not None:
        return f'<instructions {attributes} skipped="{file.skipped}"/>'
    return f"<instructions {attributes}>\n{file.text}\n</instructions>"


def compose(
    built_in: str,
    client: ClientSystemPrompt | None,
    files: Sequence[InstructionFile] = (),
    changed: Sequence[str] = (),
) -> str:
    """The whole system prompt (see the module's docstring for the order)."""
    parts = [client.text if client is not None and client.mode == "override" else built_in.strip()]
    if client is not None and client.mode == "append":
        parts.append("# Instructions from the client\n\n" + client.text)
    section = describe_files(files, changed)
    if section:
        parts.append(section)
    return "\n\n".join(part for part in parts if part) + "\n"
