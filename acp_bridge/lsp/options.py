"""What the LSP face learns at `initialize`: the user's switches and what the editor can do.

- `LspOptions.from_init(initializationOptions)`: the model spec, the MCP servers every session of the
  connection starts (`mcpServers`, ACP's list or the `--mcp-config` file's object; read by the core's
  `acp_bridge.mcp.config`), and the switches `follow` (default true),
  `applyEditsInEditor` (default true), `terminalOutput` (default false, as for ACP clients: true opts in to
  Zed's `_meta.terminal_output` convention, live output as deltas instead of a re-sent console block) and
  `showMessageRequest` (default: follow the client's `window.showMessage` capability; true asks even
  without it, for editors such as Emacs eglot that answer the request without advertising it).
  Read leniently: a mistyped value keeps its default and produces a warning the server shows the user.
- `EditorFeatures.from_lsp(capabilities)`: the capabilities the face acts on, as plain booleans.
- `session_cwd(params)`: the first workspace folder, else `rootUri`, else `rootPath`.

Must not: do I/O or talk to the client; this module only reads values.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from lsprotocol import types
from pygls.uris import to_fs_path


@dataclass(frozen=True, slots=True)
class LspOptions:
    """The `initializationOptions` the face understands (camelCase on the wire)."""

    model: str | None = None
    follow: bool = True
    apply_edits_in_editor: bool = True
    terminal_output: bool = False
    show_message_request: bool | None = None  # None: trust the client's window.showMessage capability
    mcp_servers: object = field(default=None, compare=False)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @staticmethod
    def from_init(raw: object) -> LspOptions:
        """Parse `initializationOptions`. Unknown keys are ignored; a mistyped known key keeps its default
        and adds a warning (never raises: a typo must not stop the editor from starting the server)."""
        if raw is None:
            return LspOptions()
        if not isinstance(raw, Mapping):
            return LspOptions(
                warnings=(f"initializationOptions must be an object, got {type(raw).__name__}",)
            )
        warnings: list[str] = []

        def flag(key: str, default: bool) -> bool:
            value = raw.get(key, default)
            if isinstance(value, bool):
                return value
            warnings.append(
                f"initializationOptions.{key} must be true or false; using {str(default).lower()}"
            )
            return default

        model = raw.get("model")
        if model is not None and (not isinstance(model, str) or not model.strip()):
            warnings.append(
                "initializationOptions.model must be a model spec string; using the default model"
            )
            model = None
        ask = raw.get("showMessageRequest")
        if ask is not None and not isinstance(ask, bool):
            warnings.append(
                "initializationOptions.showMessageRequest must be true, false or null; ignoring it"
            )
            ask = None
        return LspOptions(
            model=model.strip() if isinstance(model, str) else None,
            follow=flag("follow", True),
            apply_edits_in_editor=flag("applyEditsInEditor", True),
            terminal_output=flag("terminalOutput", False),
            show_message_request=ask,
            mcp_servers=raw.get("mcpServers"),
            warnings=tuple(warnings),
        )


@dataclass(frozen=True, slots=True)
class EditorFeatures:
    """The client capabilities the LSP face uses. Everything defaults to "unsupported"."""

    work_done_progress: bool = False
    show_message_request: bool = False
    show_document: bool = False
    apply_edit: bool = False
    document_changes: bool = False
    create_files: bool = False
    change_annotations: bool = False

    @staticmethod
    def from_lsp(caps: types.ClientCapabilities | None) -> EditorFeatures:
        window = caps.window if caps is not None else None
        workspace = caps.workspace if caps is not None else None
        edit = workspace.workspace_edit if workspace is not None else None
        resource_ops = (edit.resource_operations or ()) if edit is not None else ()
        document_changes = bool(edit is not None and edit.document_changes)
        return EditorFeatures(
            work_done_progress=bool(window is not None and window.work_done_progress),
            show_message_request=window is not None and window.show_message is not None,
            show_document=bool(
                window is not None and window.show_document is not None and window.show_document.support
            ),
            apply_edit=bool(workspace is not None and workspace.apply_edit),
            document_changes=document_changes,
            # CreateFile only exists inside `documentChanges`.
            create_files=document_changes and types.ResourceOperationKind.Create in resource_ops,
            # Annotations attach to AnnotatedTextEdits, which also only exist inside `documentChanges`.
            change_annotations=document_changes
            and edit is not None
            and edit.change_annotation_support is not None,
        )


def session_cwd(params: types.InitializeParams) -> str | None:
    """The session's cwd from `initialize`: the first `file:` workspace folder, else `rootUri`, else
    `rootPath`. None when the client sent none of them (the caller falls back to the process cwd)."""
    candidates: list[str | None] = [folder.uri for folder in params.workspace_folders or ()]
    candidates.append(params.root_uri)
    for uri in candidates:
        if uri and uri.startswith("file:"):
            path = to_fs_path(uri)
            if path and os.path.isabs(path):
                return os.path.normpath(path)
    if params.root_path and os.path.isabs(params.root_path):
        return os.path.normpath(params.root_path)
    return None
