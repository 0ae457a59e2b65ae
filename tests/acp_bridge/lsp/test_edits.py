"""acp_bridge.lsp.edits: the smallest whole-line WorkspaceEdit, checked by applying it like an editor."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types

from acp_bridge.lsp.edits import EditSupport, line_edit, split_lines, workspace_edit


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def apply(old: str, range_: types.Range, new_text: str) -> str:
    """Apply one edit the way an LSP client does (positions in UTF-16 code units, LSP line breaks)."""
    lines = split_lines(old)

    def offset(position: types.Position) -> int:
        before = sum(len(line) for line in lines[: position.line])
        if position.line >= len(lines):
            return before
        line, units, index = lines[position.line], 0, 0
        while units < position.character and index < len(line):
            units += utf16(line[index])
            index += 1
        return before + index

    return old[: offset(range_.start)] + new_text + old[offset(range_.end) :]


def test_split_lines_uses_lsp_line_breaks_only() -> None:
    assert split_lines("a\r\nb\rc\nd") == ["a\r\n", "b\r", "c\n", "d"]
    assert split_lines("form\x0cfeed\u2028x") == ["form\x0cfeed\u2028x"]
    assert split_lines("") == []


def test_only_the_changed_lines_are_replaced() -> None:
    old = "one\ntwo\nthree\nfour\n"
    change = line_edit(old, "one\nTWO\nthree\nfour\n", utf16)
    assert change is not None
    assert (change.range.start.line, change.range.end.line, change.text) == (1, 2, "TWO\n")
    assert (change.added, change.removed) == (1, 1)


def test_equal_text_needs_no_edit() -> None:
    assert line_edit("same\n", "same\n", utf16) is None


def test_end_of_a_file_without_final_newline_counts_utf16_units() -> None:
    old = "a\n😀x"
    change = line_edit(old, "a\n😀y", utf16)
    assert change is not None
    assert change.range.end == types.Position(line=1, character=3)
    assert apply(old, change.range, change.text) == "a\n😀y"


@given(
    st.lists(st.sampled_from(["a", "b", "😀", "é", "\n", "\r\n", "\r", "x y"]), max_size=12),
    st.lists(st.sampled_from(["a", "b", "😀", "é", "\n", "\r\n", "\r", "x y"]), max_size=12),
)
def test_applying_the_edit_gives_exactly_the_new_text(old_parts: list[str], new_parts: list[str]) -> None:
    old, new = "".join(old_parts), "".join(new_parts)
    change = line_edit(old, new, utf16)
    if change is None:
        assert old == new
    else:
        assert apply(old, change.range, change.text) == new


def test_document_changes_carry_the_version_and_the_annotation() -> None:
    note = types.ChangeAnnotation(label="acp-bridge: edit a.py", needs_confirmation=True)
    edit = workspace_edit(
        "file:///p/a.py",
        "x\n",
        "y\n",
        utf16,
        EditSupport(True, True),
        version=7,
        annotation=note,
        annotation_id="e1",
    )
    assert edit is not None and edit.document_changes is not None
    (document,) = edit.document_changes
    assert isinstance(document, types.TextDocumentEdit)
    assert document.text_document.version == 7
    (text_edit,) = document.edits
    assert isinstance(text_edit, types.AnnotatedTextEdit) and text_edit.annotation_id == "e1"
    assert edit.change_annotations == {"e1": note}


def test_without_document_changes_the_plain_changes_map_is_used_unannotated() -> None:
    note = types.ChangeAnnotation(label="x", needs_confirmation=True)
    edit = workspace_edit("file:///p/a.py", "x\n", "y\n", utf16, EditSupport(False, True), annotation=note)
    assert edit is not None and edit.document_changes is None and edit.change_annotations is None
    assert edit.changes == {
        "file:///p/a.py": [
            types.TextEdit(range=types.Range(types.Position(0, 0), types.Position(1, 0)), new_text="y\n")
        ]
    }


def test_a_new_file_is_created_then_filled() -> None:
    edit = workspace_edit("file:///p/n.txt", None, "hello\n", utf16, EditSupport(True, False))
    assert edit is not None and edit.document_changes is not None
    create, fill = edit.document_changes
    assert isinstance(create, types.CreateFile) and create.uri == "file:///p/n.txt"
    assert isinstance(fill, types.TextDocumentEdit) and fill.edits[0].new_text == "hello\n"
    with pytest.raises(ValueError, match="documentChanges"):
        workspace_edit("file:///p/n.txt", None, "x", utf16, EditSupport(False, False))
