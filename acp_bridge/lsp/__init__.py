"""The LSP face: the same agent core for editors that only speak the Language Server Protocol.

`acp-bridge lsp` (see `command.py`) serves it on stdio with pygls; `channel.LspChannel` is the core's
`ClientChannel` over LSP requests and notifications; `derive`, `approval` and `edits` are the pure
translations it uses (updates → log lines, progress and follow-along; the ask decision → a message
request; a file write → a workspace edit). docs/lsp.md shows the editor configurations.

Must not: import pygls at package import (the pure modules and their tests do not need it).
"""
