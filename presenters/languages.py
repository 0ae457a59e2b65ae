"""Language hints for read cards (syntax highlighting), from a file's name or extension.

The ids are the common Markdown fence / highlight.js names, which editors and ACP clients accept.
Invariant: a pure lookup; an unknown extension gives None (no guessing from content).
"""

from __future__ import annotations

import os

_BY_NAME = {
    "dockerfile": "dockerfile",
    "makefile": "makefile",
    "gnumakefile": "makefile",
    "cmakelists.txt": "cmake",
    "gemfile": "ruby",
    "rakefile": "ruby",
    "justfile": "makefile",
    ".bashrc": "bash",
    ".zshrc": "bash",
    ".profile": "bash",
}

_BY_EXT = {
    "py": "python", "pyi": "python", "pyw": "python", "ipynb": "json",
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "jsx",
    "ts": "typescript", "mts": "typescript", "cts": "typescript", "tsx": "tsx",
    "json": "json", "jsonc": "jsonc", "json5": "json5",
    "md": "markdown", "markdown": "markdown", "mdx": "mdx", "rst": "rst", "txt": None,
    "rs": "rust", "go": "go", "java": "java", "kt": "kotlin", "kts": "kotlin", "scala": "scala",
    "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp", "hxx": "cpp",
    "cs": "csharp", "fs": "fsharp", "swift": "swift", "m": "objectivec", "mm": "objectivec",
    "rb": "ruby", "php": "php", "pl": "perl", "pm": "perl", "lua": "lua", "r": "r", "jl": "julia",
    "dart": "dart", "ex": "elixir", "exs": "elixir", "erl": "erlang", "hs": "haskell", "ml": "ocaml",
    "clj": "clojure", "elm": "elm", "zig": "zig", "nim": "nim", "v": "v", "sol": "solidity",
    "sh": "bash", "bash": "bash", "zsh": "bash", "fish": "fish", "ps1": "powershell", "bat": "bat",
    "yaml": "yaml", "yml": "yaml", "toml": "toml", "ini": "ini", "cfg": "ini", "conf": "ini",
    "xml": "xml", "svg": "xml", "html": "html", "htm": "html", "vue": "vue", "svelte": "svelte",
    "css": "css", "scss": "scss", "sass": "sass", "less": "less",
    "sql": "sql", "graphql": "graphql", "gql": "graphql", "proto": "protobuf", "tf": "hcl", "hcl": "hcl",
    "diff": "diff", "patch": "diff", "tex": "latex", "cmake": "cmake", "gradle": "groovy", "groovy": "groovy",
    "dockerfile": "dockerfile", "mk": "makefile", "nix": "nix", "prisma": "prisma", "csv": "csv",
}  # fmt: skip


def language_of(path: str) -> str | None:
    """The language id for `path` (e.g. "python"), or None when unknown."""
    name = os.path.basename(path).lower()
    if name in _BY_NAME:
        return _BY_NAME[name]
    _, dot, ext = name.rpartition(".")
    if not dot:
        return None
    return _BY_EXT.get(ext)
