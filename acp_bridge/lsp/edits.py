"""A file write as an LSP `WorkspaceEdit`: the smallest whole-line range that changed, or a created file.

`line_edit(old, new, units)` finds the common leading and trailing lines of the old and new text and
replaces only the lines in between, so the editor's undo, marks and folds outside the change survive.
Ranges are in whole lines, which keeps them independent of the negotiated position encoding except at the
very end of a document without a final line break (`units` counts that line in the client's code units).
Line breaks are LSP's (`\\n`, `\\r\\n`, `\\r`); other Unicode separators are ordinary characters, as in
every LSP client.

`workspace_edit(...)` wraps the change for what the client supports: `documentChanges` with the open
document's version (a stale buffer makes the editor refuse instead of corrupting it) and, where change
annotations are supported, an annotation with `needsConfirmation`, so the editor may show the change for
review; otherwise the plain `changes` map. A new file is a `CreateFile` followed by an insert.

Must not: do I/O or decide *whether* an edit goes through the editor (the channel does).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from lsprotocol import types

_BREAK: Final = re.compile(r"\r\n|\r|\n")

Units = Callable[[str], int]  # characters → the client's position units (UTF-16 by default)


def split_lines(text: str) -> list[str]:
    """`text` cut after each LSP line break, breaks kept ("a\\r\\nb" → ["a\\r\\n", "b"])."""
    lines: list[str] = []
    start = 0
    for match in _BREAK.finditer(text):
        lines.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def end_position(lines: list[str], units: Units) -> types.Position:
    """The position just past the last character of the document made of `lines`."""
    if not lines:
        return types.Position(line=0, character=0)
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return types.Position(line=len(lines), character=0)
    return types.Position(line=len(lines) - 1, character=units(last))


@dataclass(frozen=True, slots=True)
class LineEdit:
    """Replace lines [first, first + removed) of the old text by `text` (`added` lines)."""

    range: types.Range
    text: str
    added: int
    removed: int


def line_edit(old: str, new: str, units: Units) -> LineEdit | None:
    """The smallest whole-line replacement turning `old` into `new`, or None when they are equal."""
    if old == new:
        return None
    a, b = split_lines(old), split_lines(new)
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start = types.Position(line=head, character=0)
    stop = len(a) - tail
    end = types.Position(line=stop, character=0) if stop < len(a) else end_position(a, units)
    return LineEdit(
        types.Range(start=start, end=end), "".join(b[head : len(b) - tail]), len(b) - head - tail, stop - head
    )


@dataclass(frozen=True, slots=True)
class EditSupport:
    """The parts of the client's `workspace.workspaceEdit` capability an edit's shape depends on."""

    document_changes: bool = False
    change_annotations: bool = False


def workspace_edit(
    uri: str,
    old: str | None,
    new: str,
    units: Units,
    support: EditSupport,
    *,
    version: int | None = None,
    annotation: types.ChangeAnnotation | None = None,
    annotation_id: str = "acp-bridge",
) -> types.WorkspaceEdit | None:
    """The WorkspaceEdit writing `new` to `uri`. `old` None: create the file (needs documentChanges; the
    caller checks resource-operation support). None when nothing changes."""
    annotate = annotation is not None and support.change_annotations and support.document_changes
    annotations = {annotation_id: annotation} if annotate and annotation is not None else None
    if old is None:
        if not support.document_changes:
            raise ValueError("creating a file needs documentChanges support")
        insert = _text_edit(
            types.Range(start=types.Position(0, 0), end=types.Position(0, 0)), new, annotate, annotation_id
        )
        create = types.CreateFile(
            uri=uri,
            options=types.CreateFileOptions(overwrite=False, ignore_if_exists=True),
            annotation_id=annotation_id if annotate else None,
        )
        document = types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None), edits=[insert]
        )
        return types.WorkspaceEdit(document_changes=[create, document], change_annotations=annotations)
    change = line_edit(old, new, units)
    if change is None:
        return None
    if not support.document_changes:
        return types.WorkspaceEdit(changes={uri: [types.TextEdit(range=change.range, new_text=change.text)]})
    edit = _text_edit(change.range, change.text, annotate, annotation_id)
    document = types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=[edit]
    )
    return types.WorkspaceEdit(document_changes=[document], change_annotations=annotations)


def _text_edit(
    range_: types.Range, text: str, annotate: bool, annotation_id: str
) -> types.TextEdit | types.AnnotatedTextEdit:
    if annotate:
        return types.AnnotatedTextEdit(annotation_id=annotation_id, range=range_, new_text=text)
    return types.TextEdit(range=range_, new_text=text)
