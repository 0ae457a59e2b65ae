"""acp_bridge.lsp.options: initializationOptions, client capabilities, and the session cwd."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import client_capabilities

from acp_bridge.lsp.options import EditorFeatures, LspOptions, session_cwd


def test_defaults_follow_and_apply_edits_in_the_editor() -> None:
    options = LspOptions.from_init(None)
    assert (options.model, options.follow, options.apply_edits_in_editor) == (None, True, True)
    assert options.show_message_request is None and options.terminal_output is False
    assert options.warnings == ()


def test_options_are_read_and_mistyped_ones_warn_and_keep_their_default() -> None:
    options = LspOptions.from_init(
        {"model": "scripted:/x.json", "follow": False, "applyEditsInEditor": "no", "showMessageRequest": True}
    )
    assert options.model == "scripted:/x.json" and options.follow is False
    assert options.apply_edits_in_editor is True and options.show_message_request is True
    assert options.warnings == ("initializationOptions.applyEditsInEditor must be true or false; using true",)
    assert LspOptions.from_init([1]).warnings == ("initializationOptions must be an object, got list",)


def test_recorded_client_capabilities() -> None:
    neovim = EditorFeatures.from_lsp(client_capabilities("neovim@v0.11.0"))
    assert neovim.show_message_request and neovim.show_document and neovim.work_done_progress
    assert neovim.apply_edit and not neovim.document_changes and not neovim.create_files
    vscode = EditorFeatures.from_lsp(client_capabilities("visual-studio-code"))
    assert vscode.document_changes and vscode.create_files and vscode.change_annotations
    emacs = EditorFeatures.from_lsp(client_capabilities("emacs"))
    assert not emacs.show_message_request and not emacs.show_document and emacs.work_done_progress
    assert EditorFeatures.from_lsp(types.ClientCapabilities()) == EditorFeatures()


def _params(**kwargs: object) -> types.InitializeParams:
    return types.InitializeParams(capabilities=types.ClientCapabilities(), **kwargs)  # type: ignore[arg-type]


def test_session_cwd_prefers_the_first_workspace_folder() -> None:
    folders = [
        types.WorkspaceFolder(uri="file:///a/b%20c", name="x"),
        types.WorkspaceFolder(uri="file:///d", name="y"),
    ]
    assert session_cwd(_params(workspace_folders=folders, root_uri="file:///e")) == "/a/b c"
    assert session_cwd(_params(root_uri="file:///e/")) == "/e"
    assert session_cwd(_params(root_path="/f")) == "/f"
    assert session_cwd(_params(root_uri="untitled:x")) is None
    assert session_cwd(_params()) is None
