"""Files whose contents make later commands run code: a change to one always asks (except in `full_access`).

An agent that may edit `.git/config` without asking can set `core.fsmonitor` or a hook, and the next
`git status` (perhaps allowed by a rule) runs what it planted; `.envrc` runs on `cd` under direnv, an
editor's task file runs from the editor, a CI file runs with the repository's secrets. `protected_reason`
names what reads such a file, or None.

What is deliberately *not* here: project files that the project's own commands run (`package.json`
scripts, `Makefile`, `pyproject.toml`, `setup.py`, `Cargo.toml`/`build.rs`, `conftest.py`, test files). An
agent edits them all the time, and approving `npm test` or `make test` already means "run this project's
code as it is then", which an edit to a test file changes just as much: asking for those files would add
prompts without closing anything.

Matching is on a path relative to its workspace root (the permission policy passes both the path as named
and as resolved, so a symlinked directory cannot hide `.git`), segment by segment, case-insensitively
(macOS and Windows file systems fold case), after removing the code points HFS+ ignores in names (git does
the same in `is_hfs_dotgit`, utf8.c: `.g\\u200cit` is `.git` there).
"""

from __future__ import annotations

import functools
import unicodedata

# A directory anywhere on the path (nested repositories and monorepo packages have their own).
_DIRECTORIES: dict[str, str] = {
    ".git": "git's configuration and hooks",
    ".husky": "git hooks (husky)",
    ".idea": "JetBrains IDE settings (run configurations, tools)",
    ".vscode": "VS Code settings, tasks and launch configurations",
    ".zed": "Zed settings and tasks",
    ".helix": "Helix settings (language-server commands)",
    ".devcontainer": "dev container commands",
    ".circleci": "CI configuration",
    ".buildkite": "CI configuration",
    ".gitlab": "CI configuration",
    ".cargo": "Cargo configuration (build wrappers, runners)",
    ".mvn": "Maven JVM options and extensions",
    ".yarn": "Yarn releases and plugins",
    ".direnv": "direnv environments",
    ".config": "per-user tool configuration",
    ".ssh": "SSH configuration (ProxyCommand, authorized keys)",
    ".gnupg": "GnuPG configuration",
    ".aws": "AWS configuration (credential_process)",
    ".kube": "Kubernetes configuration (exec credential plugins)",
    ".docker": "Docker configuration (credential helpers)",
    "site-packages": "installed Python packages",
    "dist-packages": "installed Python packages",
}

# Two directories in a row, anywhere on the path.
_DIRECTORY_PAIRS: dict[tuple[str, str], str] = {
    (".github", "workflows"): "CI workflows",
    (".github", "actions"): "CI actions",
    (".local", "bin"): "programs on the user's PATH",
    ("gradle", "wrapper"): "the Gradle wrapper (which Gradle runs)",
}

# A file name, in any directory.
_FILES: dict[str, str] = {
    ".gitmodules": "git submodule configuration",
    ".gitconfig": "git's configuration",
    ".npmrc": "npm configuration (script-shell, node-options)",
    ".yarnrc": "Yarn configuration",
    ".yarnrc.yml": "Yarn configuration (yarnPath, plugins)",
    ".pnpmfile.cjs": "pnpm hooks",
    ".pnpmfile.mjs": "pnpm hooks",
    "bunfig.toml": "Bun configuration (preload scripts)",
    "lefthook.yml": "git hooks (lefthook)",
    "lefthook.yaml": "git hooks (lefthook)",
    ".lefthook.yml": "git hooks (lefthook)",
    ".lefthook.yaml": "git hooks (lefthook)",
    "lefthook-local.yml": "git hooks (lefthook)",
    ".lefthook-local.yml": "git hooks (lefthook)",
    ".overcommit.yml": "git hooks (overcommit)",
    ".gitlab-ci.yml": "CI configuration",
    ".travis.yml": "CI configuration",
    ".drone.yml": "CI configuration",
    "azure-pipelines.yml": "CI configuration",
    "bitbucket-pipelines.yml": "CI configuration",
    "appveyor.yml": "CI configuration",
    "jenkinsfile": "CI configuration",
    "mise.toml": "mise configuration (tasks, hooks, environment)",
    ".mise.toml": "mise configuration (tasks, hooks, environment)",
    "mise.local.toml": "mise configuration (tasks, hooks, environment)",
    ".mise.local.toml": "mise configuration (tasks, hooks, environment)",
    ".rtx.toml": "rtx configuration",
    "rust-toolchain": "the Rust toolchain (which compiler runs)",
    "rust-toolchain.toml": "the Rust toolchain (which compiler runs)",
    ".bazelrc": "Bazel options (--run_under, wrappers)",
    ".pypirc": "package index credentials",
    "pip.conf": "pip configuration (package index)",
    "pip.ini": "pip configuration (package index)",
    ".netrc": "network credentials",
    ".bashrc": "shell start-up",
    ".bash_profile": "shell start-up",
    ".bash_login": "shell start-up",
    ".bash_logout": "shell start-up",
    ".profile": "shell start-up",
    ".zshrc": "shell start-up",
    ".zshenv": "shell start-up",
    ".zprofile": "shell start-up",
    ".zlogin": "shell start-up",
    ".zlogout": "shell start-up",
    ".xprofile": "session start-up",
    ".xinitrc": "session start-up",
    ".exrc": "Vim/Neovim per-directory configuration",
    ".nvimrc": "Neovim per-directory configuration",
    ".nvim.lua": "Neovim per-directory configuration",
}

# A file name starting with one of these, in any directory.
_NAME_PREFIXES: tuple[tuple[str, str], ...] = (
    (".env", "environment files (direnv, dotenv loaders)"),  # .env, .env.local, .envrc
    (".pre-commit-config.", "git hooks (pre-commit)"),
    (".lintstagedrc", "commands run on commit (lint-staged)"),
    ("lint-staged.config.", "commands run on commit (lint-staged)"),
    (".huskyrc", "git hooks (husky)"),
    (".simple-git-hooks", "git hooks (simple-git-hooks)"),
)
_PREFIXES = tuple(prefix for prefix, _ in _NAME_PREFIXES)

# A file name ending with one of these.
_NAME_SUFFIXES: tuple[tuple[str, str], ...] = (
    (".code-workspace", "VS Code workspace settings and tasks"),
    (".pth", "Python start-up code (.pth files run when Python starts)"),
)
_SUFFIXES = tuple(suffix for suffix, _ in _NAME_SUFFIXES)

# Code points HFS+ drops from names (git's utf8.c, `next_hfs_char`): zero-width joiners and marks.
_HFS_IGNORED = dict.fromkeys((*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF))


def _fold(rel: str) -> str:
    if rel.isascii():
        return rel.lower()
    return unicodedata.normalize("NFC", rel).translate(_HFS_IGNORED).casefold()


@functools.lru_cache(maxsize=4096)  # pure, and asked about the same few files on every decision
def protected_reason(rel: str) -> str | None:
    """What reads the file at `rel` (relative to its workspace root, `/`-separated) to run code, or None."""
    if rel == ".":
        return None
    segments = _fold(rel).split("/")
    previous = ""
    for segment in segments:
        reason = _DIRECTORIES.get(segment)
        if reason is not None:
            return reason
        if segment.endswith(".git"):  # a bare repository (`repo.git/hooks`)
            return "git's configuration and hooks"
        reason = _DIRECTORY_PAIRS.get((previous, segment))
        if reason is not None:
            return reason
        previous = segment
    name = segments[-1]
    reason = _FILES.get(name)
    if reason is not None:
        return reason
    if name.startswith(_PREFIXES):
        return next(why for prefix, why in _NAME_PREFIXES if name.startswith(prefix))
    if name.endswith(_SUFFIXES):
        return next(why for suffix, why in _NAME_SUFFIXES if name.endswith(suffix))
    return None
