"""`/init [focus]`: the model is asked to survey the repository and write a starter `AGENTS.md`.

The command becomes the prompt's text for the model (`INIT_PROMPT`, with the user's focus when given);
the prompt's blocks stay as the user sent them, so the log and a replay show `/init`. The model writes the
file with the ordinary `write` (or `edit`) tool, so the user reviews the diff and approves it as any write.

Must not: write anything itself.
"""

from __future__ import annotations

import dataclasses

from acp_bridge.session.prompt_blocks import Prompt

NAME = "init"
# (name, description, input hint) as the session's command list takes it.
COMMAND = (NAME, "Survey the repository and write a starter AGENTS.md for agents working in it", "focus")

INIT_PROMPT = """\
Write an AGENTS.md for this repository: the instructions a coding agent (you, in later sessions) needs \
to work in it. It goes at the root of the working directory.

First survey the repository; don't guess:
1. Read what exists: an AGENTS.md (or CLAUDE.md, GEMINI.md, .github/copilot-instructions.md, \
.cursorrules), the README, CONTRIBUTING, the build and package files (Makefile, package.json, \
pyproject.toml, Cargo.toml, go.mod, ...), the CI workflows, the linter and formatter configuration.
2. Look at the layout (`glob`) and at a few representative source and test files.

Then write AGENTS.md, short and specific to this repository (about 40 to 120 lines of Markdown):
- what the project is, in one or two sentences;
- the exact commands to set up, build, run the tests (all of them, and a single test), lint, format and \
type-check, as the project's own files define them;
- the layout: the main folders and what lives in each, and the entry points;
- the conventions a newcomer would get wrong: code style, naming, error handling, how tests are written, \
the commit and review rules, anything the project forbids;
- nothing generic ("write clean code"), nothing you did not see in the repository.

If an AGENTS.md exists, improve it instead: keep what is right, fix what is outdated, add what is \
missing. If the repository has one of the other files above and no AGENTS.md, build on it. Write the \
file with the file tools (the user reviews the change), then say in a few lines what you wrote and what \
you could not find out."""


def expand(prompt: Prompt) -> Prompt:
    """`prompt` with `/init [focus]` replaced by the text the model gets; any other prompt unchanged. The
    blocks as sent are kept (a text-only prompt has none: its `/init` becomes its one block), so the log
    and a replay show what the user typed."""
    words = prompt.text.split(None, 1)
    if not words or words[0] != f"/{NAME}":
        return prompt
    focus = words[1].strip() if len(words) > 1 else ""
    text = INIT_PROMPT + (f"\n\nThe user asks you to focus on: {focus}" if focus else "")
    blocks = prompt.blocks if prompt.blocks is not None else ({"type": "text", "text": prompt.text},)
    return dataclasses.replace(prompt, text=text, blocks=blocks)
