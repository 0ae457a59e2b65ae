"""acp_bridge.lsp.approval: the permission request as a showMessageRequest, and the answer back.
Inputs come from the real mapping and permission options, as the core sends them."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_bridge import mapping
from acp_bridge.client.channel import PermissionOutcome
from acp_bridge.lsp.approval import build_question, diff_counts
from acp_bridge.permissions.policy import PolicyConfig, SessionPermissions
from presenters.diffs import split_lines
from registry_core.presentation import DiffCallView, FileDiff, GenericCallView, TerminalCallView

CWD = "/work/proj"
CTX = mapping.WireContext(cwd=CWD)


def _options(tool: str, args: dict[str, object]) -> list[mapping.PermissionOption]:
    perms = SessionPermissions(PolicyConfig(), CWD, (CWD,))
    return mapping.permission_options(perms.scope_for(tool, args).label())


def test_bash_question_names_the_command_and_the_always_scope() -> None:
    args = {"command": "npm test -- --watch=false"}
    call = mapping.permission_tool_call(
        CTX, "c1", "bash", args, TerminalCallView(title=args["command"]), None
    )
    question = build_question(call, _options("bash", args), CWD)
    assert question.actions == ("Allow once", "Always allow", "Reject", "Always reject")
    lines = question.message.splitlines()
    assert lines[0] == "acp-bridge wants to run `bash`:"
    assert lines[1] == "$ npm test -- --watch=false"
    assert '"Always" answers cover `npm test` commands (this session).' in lines


def test_edit_question_names_the_file_and_a_diff_summary() -> None:
    diff = FileDiff(path="/work/proj/src/app.py", old_text="a\nb\nc\n", new_text="a\nB\nc\nd\ne\n")
    args = {"file_path": "src/app.py", "old_string": "b", "new_string": "B"}
    call = mapping.permission_tool_call(
        CTX, "c2", "edit", args, DiffCallView(title="Edit /work/proj/src/app.py", diffs=(diff,)), None
    )
    message = build_question(call, _options("edit", args), CWD).message
    assert "edit src/app.py (+3 −1 lines)" in message.splitlines()
    assert "`edit` on src/app.py" in message


def test_new_file_question_says_create_with_its_size() -> None:
    diff = FileDiff(path="/work/proj/new.txt", old_text=None, new_text="1\n2\n")
    call = mapping.permission_tool_call(
        CTX, "c3", "write", {}, DiffCallView(title="Write new.txt", diffs=(diff,)), None
    )
    assert "create new.txt (2 lines)" in build_question(call, _options("write", {}), CWD).message


def test_the_reason_is_part_of_the_question() -> None:
    view = GenericCallView(title="Fetch https://example.com", kind="fetch")
    call = mapping.permission_tool_call(
        CTX, "c4", "web_fetch", {"url": "https://example.com"}, view, "Why: docs"
    )
    message = build_question(call, _options("web_fetch", {"url": "https://example.com"}), CWD).message
    assert message.splitlines()[0] == "acp-bridge wants to run `web_fetch`: Fetch https://example.com"
    assert "Why: docs" in message


@pytest.mark.parametrize(
    ("title", "option"),
    [
        ("Allow once", "allow_once"),
        ("Always allow", "allow_always"),
        ("Reject", "reject_once"),
        ("Always reject", "reject_always"),
        (None, "reject_once"),  # dismissed: rejects, never allows
    ],
)
def test_answers_map_to_the_acp_option_ids(title: str | None, option: str) -> None:
    call = mapping.permission_tool_call(
        CTX, "c1", "bash", {"command": "ls"}, TerminalCallView(title="ls"), None
    )
    question = build_question(call, _options("bash", {"command": "ls"}), CWD)
    assert question.outcome(title) == PermissionOutcome("selected", option)


def test_an_action_that_was_not_offered_is_an_error() -> None:
    call = mapping.permission_tool_call(
        CTX, "c1", "bash", {"command": "ls"}, TerminalCallView(title="ls"), None
    )
    question = build_question(call, _options("bash", {"command": "ls"}), CWD)
    with pytest.raises(ValueError, match="not offered"):
        question.outcome("Sure")


def test_diff_counts() -> None:
    assert diff_counts(None, "a\nb\n") == (2, 0)
    assert diff_counts(None, "") == (0, 0)
    assert diff_counts("a\nb\nc\n", "a\nc\n") == (0, 1)
    assert diff_counts("a\n", "a\n") == (0, 0)
    assert diff_counts("a\nb", "a\nb\n") == (1, 1)  # lines end at "\n", as in the write tool's hunks
    assert diff_counts("x\n" * 5000, "y\n" * 5000) == (5000, 5000)


def test_diff_counts_are_exact_on_big_files() -> None:
    old = [f"line {i}\n" for i in range(10_000)]
    new = list(old)
    new[10] = "changed\n"
    new[9_990:9_991] = ["changed\n", "added\n"]
    del new[5_000]
    assert diff_counts("".join(old), "".join(new)) == (3, 3)


@st.composite
def edited_files(draw: st.DrawFn) -> tuple[str, str, int, int]:
    """A file of distinct lines, a version of it after random replacements, insertions and deletions of
    new lines, and the (added, removed) lines those edits made: with distinct lines, exactly the old lines
    that survived match (no alignment can match more)."""
    old = [(i, f"line {i}\n") for i in range(draw(st.integers(0, 60)))]
    new: list[tuple[int | None, str]] = list(old)
    for n in range(draw(st.integers(0, 5))):
        at = draw(st.integers(0, len(new)))
        span = draw(st.integers(0, 6))
        fresh: list[tuple[int | None, str]] = [(None, f"new {n}.{k}\n") for k in range(span)]
        kind = draw(st.sampled_from(["replace", "insert", "delete"]))
        if kind == "replace":
            new[at : at + len(fresh)] = fresh
        elif kind == "insert":
            new[at:at] = fresh
        else:
            del new[at : at + len(fresh)]
    kept = sum(origin is not None for origin, _ in new)
    return "".join(t for _, t in old), "".join(t for _, t in new), len(new) - kept, len(old) - kept


@settings(max_examples=300, deadline=None)
@given(files=edited_files())
def test_diff_counts_are_exact_on_random_edits(files: tuple[str, str, int, int]) -> None:
    old, new, added, removed = files
    assert diff_counts(old, new) == (added, removed)
    # The same as difflib's counts (exact on inputs this small).
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    assert added == sum(j2 - j1 for tag, _, _, j1, j2 in opcodes if tag in ("replace", "insert"))
    assert removed == sum(i2 - i1 for tag, i1, i2, _, _ in opcodes if tag in ("replace", "delete"))


def _lcs(a: list[str], b: list[str]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal, row[0] = 0, 0
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], diagonal + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


texts = st.lists(st.sampled_from(["a\n", "b\n", "a", "\r\n", "\n", "é\n"]), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(old=texts, new=texts)
def test_diff_counts_are_consistent_on_any_text(old: str, new: str) -> None:
    added, removed = diff_counts(old, new)
    a, b = split_lines(old), split_lines(new)
    assert added - removed == len(b) - len(a)
    assert (added + removed == 0) == (old == new)
    assert added >= len(b) - _lcs(a, b)  # no more lines matched than truly can be
