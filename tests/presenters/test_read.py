"""`read` end to end on real files: windows, caps, binary and error cases, streaming of large files,
editor buffers, and its cards (live and replayed from the durable event)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from presenters import read
from registry_core import (
    GenericCallView,
    GenericResultView,
    ImageBlock,
    ReadResultView,
    TextBlock,
    ToolCallEvent,
    ToolResultEvent,
)

from .conftest import Buffers, Session, text_of


def write_lines(path: Path, count: int, *, newline: str = "\n", final: bool = True) -> list[str]:
    lines = [f"line {i}" for i in range(1, count + 1)]
    path.write_bytes((newline.join(lines) + (newline if final else "")).encode())
    return lines


async def test_reads_a_file_with_numbered_lines_and_a_read_card(session: Session) -> None:
    src = session.cwd / "src"
    src.mkdir()
    (src / "a.py").write_text("import os\n\nprint(os.sep)\n")
    args = {"file_path": "src/a.py"}

    result = await session.run("read", args)

    assert not result.is_error
    assert text_of(result) == "     1\timport os\n     2\t\n     3\tprint(os.sep)"
    card = session.result_card("read", args, result)
    assert isinstance(card, ReadResultView)
    assert card.path == str(src / "a.py")
    assert card.title == "Read src/a.py"
    assert card.lang == "python"
    assert card.offset == 1 and card.total_lines == 3 and not card.truncated
    assert [(line.number, line.text) for line in card.lines] == [
        (1, "import os"),
        (2, ""),
        (3, "print(os.sep)"),
    ]
    assert card.content == "import os\n\nprint(os.sep)"


async def test_call_card_titles_and_locations() -> None:
    from presenters import build_tools

    read = next(t for t in build_tools(cwd="/proj") if t.name == "read")
    assert read.present_call is not None and read.parse_args is not None

    def card(args: dict[str, Any]) -> GenericCallView:
        view = read.present_call(read.parse_args(args))  # type: ignore[misc]
        assert isinstance(view, GenericCallView)
        return view

    plain = card({"file_path": "/proj/src/a.py"})
    assert (plain.title, plain.kind) == ("Read src/a.py", "read")
    assert [(loc.path, loc.line) for loc in plain.locations] == [("/proj/src/a.py", 1)]
    assert card({"file_path": "src/a.py", "offset": 10, "limit": 50}).title == "Read src/a.py (10 - 59)"
    windowed = card({"file_path": "src/a.py", "offset": 10})
    assert windowed.title == "Read src/a.py (from line 10)"
    assert windowed.locations[0].line == 10
    assert card({"file_path": "/etc/hosts", "limit": 5}).title == "Read /etc/hosts (1 - 5)"
    # The `..` segment rule: "..cache" is a name inside the cwd, ".." leaves it.
    assert card({"file_path": "/proj/..cache/x"}).title == "Read ..cache/x"
    assert card({"file_path": "/proj/../x"}).title == "Read /x"


async def test_window_and_the_note_that_says_how_to_read_on(session: Session) -> None:
    write_lines(session.cwd / "f.txt", 100)
    args = {"file_path": "f.txt", "offset": 10, "limit": 5}

    result = await session.run("read", args)

    text = text_of(result)
    assert text.splitlines()[:5] == [f"{n:>6}\tline {n}" for n in range(10, 15)]
    assert "Showing lines 10-14 of 100. Use offset=15 to read more." in text
    card = session.result_card("read", args, result)
    assert isinstance(card, ReadResultView)
    assert card.title == "Read f.txt (10 - 14)"
    assert card.offset == 10 and card.total_lines == 100
    assert not card.truncated  # the model asked for this window


async def test_default_limit_is_2000_lines_and_marks_truncation(session: Session) -> None:
    write_lines(session.cwd / "long.txt", 2500)

    result = await session.run("read", {"file_path": "long.txt"})

    assert result.meta["lines"][-1] == "line 2000"
    assert len(result.meta["lines"]) == 2000
    assert result.meta["truncated"] is True
    assert "Use offset=2001" in text_of(result)


async def test_long_lines_are_cut_with_a_visible_marker(session: Session) -> None:
    (session.cwd / "wide.txt").write_text("x" * 5000 + "\nshort\n")

    result = await session.run("read", {"file_path": "wide.txt"})

    first = result.meta["lines"][0]
    assert first.startswith("x" * 2000) and first.endswith("… [line cut at 2000 characters]")
    assert len(first) < 2100
    assert result.meta["lines"][1] == "short"
    assert result.meta["truncated"] is True
    assert "1 long line(s) were cut" in text_of(result)


async def test_empty_file_and_offset_past_the_end(session: Session) -> None:
    (session.cwd / "empty.txt").write_text("")
    write_lines(session.cwd / "three.txt", 3)

    empty = await session.run("read", {"file_path": "empty.txt"})
    past = await session.run("read", {"file_path": "three.txt", "offset": 10})

    assert text_of(empty) == "(The file empty.txt is empty.)"
    assert empty.meta["total_lines"] == 0
    assert "has 3 lines; offset 10 is past its end" in text_of(past)
    card = session.result_card("read", {"file_path": "three.txt", "offset": 10}, past)
    assert isinstance(card, ReadResultView)
    assert card.offset == 10 and card.lines == () and card.total_lines == 3


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "a PNG image"),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 100, "a JPEG image"),
        (b"%PDF-1.7\n...", "a PDF document"),
        (b"text then a NUL \x00 byte", "a binary file"),
    ],
)
async def test_binary_files_and_images_are_reported_not_dumped(
    session: Session, data: bytes, kind: str
) -> None:
    (session.cwd / "blob").write_bytes(data)
    args = {"file_path": "blob"}

    result = await session.run("read", args)

    assert result.is_error and result.error is not None
    assert result.error.code == "BINARY_FILE"
    assert f"blob is {kind}" in result.error.message
    assert "\x00" not in text_of(result)
    card = session.result_card("read", args, result)
    assert isinstance(card, GenericResultView) and card.title == "Read blob"


async def test_missing_file_directory_and_invalid_utf8_are_clear_errors(session: Session) -> None:
    (session.cwd / "config.yaml").write_text("a: 1\n")
    (session.cwd / "dir").mkdir()
    (session.cwd / "latin1.txt").write_bytes(b"ok\ncaf\xe9\n")

    missing = await session.run("read", {"file_path": "config.yml"})
    directory = await session.run("read", {"file_path": "dir"})
    latin = await session.run("read", {"file_path": "latin1.txt"})

    assert missing.error is not None and missing.error.code == "NOT_FOUND"
    assert "File not found: config.yml" in missing.error.message
    assert "config.yaml" in missing.error.message  # the likely typo is named
    assert directory.error is not None and directory.error.code == "IS_DIRECTORY"
    assert latin.error is not None and latin.error.code == "INVALID_UTF8"
    assert "byte 0xe9 on line 2" in latin.error.message
    for result in (missing, directory, latin):
        assert "Traceback" not in text_of(result)


async def test_devices_and_pipes_are_refused_not_read_forever(session: Session) -> None:
    os.mkfifo(session.cwd / "pipe")

    device = await session.run("read", {"file_path": "/dev/zero"})
    pipe = await session.run("read", {"file_path": "pipe"})
    edited = await session.run("edit", {"file_path": "/dev/null", "old_string": "a", "new_string": "b"})

    for result in (device, pipe, edited):
        assert result.error is not None and result.error.code == "NOT_A_FILE", result.error


async def test_permission_denied_is_a_clear_error(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    target = session.cwd / "secret.txt"
    target.write_text("s\n")
    real_open = os.open

    def guarded_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        # Tests may run as root, where chmod 000 does not stop a read: refuse this one path instead.
        if os.fspath(file) == str(target):
            raise PermissionError(13, "Permission denied", str(target))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_open)
    result = await session.run("read", {"file_path": "secret.txt"})

    assert result.error is not None and result.error.code == "PERMISSION_DENIED"
    assert result.error.message.startswith("Permission denied: cannot read secret.txt.")


async def test_crlf_bom_and_utf16_files_read_as_text(session: Session) -> None:
    (session.cwd / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (session.cwd / "bom.txt").write_bytes(b"\xef\xbb\xbffirst\nsecond\n")
    (session.cwd / "utf16.txt").write_bytes("hé\nwörld\n".encode("utf-16"))

    crlf = await session.run("read", {"file_path": "crlf.txt"})
    bom = await session.run("read", {"file_path": "bom.txt"})
    utf16 = await session.run("read", {"file_path": "utf16.txt"})

    assert crlf.meta["lines"] == ("one", "two")
    assert bom.meta["lines"] == ("first", "second")
    assert utf16.meta["lines"] == ("hé", "wörld")


@pytest.mark.skipif(not os.path.isfile("/proc/self/status"), reason="needs Linux procfs")
async def test_a_file_is_read_to_its_end_whatever_size_it_was_opened_with(session: Session) -> None:
    # procfs files are regular and say they hold 0 bytes: the small-file path reads on to the real end.
    result = await session.run("read", {"file_path": "/proc/self/status"})

    assert not result.is_error, result
    lines = result.meta["lines"]
    assert lines[0].startswith("Name:") and any(line.startswith("Pid:") for line in lines)
    assert result.meta["total_lines"] == len(lines) > 10


async def test_small_and_mid_sized_files_read_alike_inline_or_by_a_worker(session: Session) -> None:
    # 40 KB (read inline, from the bare descriptor) and 400 KB (read whole by a worker thread).
    for name, count in (("small.txt", 4_000), ("mid.txt", 40_000)):
        lines = write_lines(session.cwd / name, count, newline="\r\n", final=False)
        result = await session.run("read", {"file_path": name, "offset": count - 2, "limit": 5})
        assert result.meta["lines"] == tuple(lines[-3:]) and result.meta["total_lines"] == count


async def test_large_file_window_at_the_end_is_streamed(session: Session) -> None:
    # 3 MB: above the whole-file threshold, so the chunked two-pass reader runs.
    path = session.cwd / "big.log"
    lines = [f"{i:08d} " + "y" * 40 for i in range(1, 60_001)]
    path.write_text("\n".join(lines) + "\n")
    args = {"file_path": "big.log", "offset": 59_990, "limit": 20}

    result = await session.run("read", args)

    assert result.meta["total_lines"] == 60_000
    assert result.meta["lines"] == tuple(lines[59_989:])
    card = session.result_card("read", args, result)
    assert isinstance(card, ReadResultView)
    assert card.lines[0].number == 59_990 and card.lines[-1].number == 60_000


async def test_large_file_edges_long_lines_and_no_final_newline(session: Session) -> None:
    path = session.cwd / "edge.txt"
    body = ["a" * 100] * 20_000 + ["é" * 3000, "tail without newline"]
    path.write_text("\n".join(body))  # 2 MB, no final newline, a long multi-byte line near the end

    result = await session.run("read", {"file_path": "edge.txt", "offset": 20_001})

    assert result.meta["total_lines"] == 20_002
    cut, last = result.meta["lines"]
    assert cut == "é" * 2000 + "… [line cut at 2000 characters]"
    assert last == "tail without newline"

    (session.cwd / "bad.bin").write_bytes(b"x" * (2 << 20) + b"\nline \xff\n")
    bad = await session.run("read", {"file_path": "bad.bin", "offset": 2})
    assert bad.error is not None and bad.error.code == "INVALID_UTF8" and "line 2" in bad.error.message


async def test_outside_cwd_paths_are_absolute_in_titles(session: Session, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x\n")
    args = {"file_path": str(outside)}

    result = await session.run("read", args)

    card = session.result_card("read", args, result)
    assert isinstance(card, ReadResultView) and card.title == f"Read {outside}"


async def test_editor_buffer_wins_over_the_disk_and_falls_back(make_session: Any) -> None:
    probe = make_session()
    unsaved = probe.cwd / "open.py"
    unsaved.write_text("on disk\n")
    (probe.cwd / "closed.py").write_text("closed\n")
    session = make_session(services={"fs": Buffers({str(unsaved): "unsaved edit\nsecond\n"})})

    from_editor = await session.run("read", {"file_path": "open.py"})
    from_disk = await session.run("read", {"file_path": "closed.py"})

    assert from_editor.meta["lines"] == ("unsaved edit", "second")
    assert from_editor.meta["source"] == "editor"
    assert from_disk.meta["lines"] == ("closed",) and from_disk.meta["source"] == "disk"


async def test_a_failing_editor_service_falls_back_to_the_disk(make_session: Any) -> None:
    class Broken(Buffers):
        async def read_text(self, path: str) -> str | None:
            raise ConnectionError("client went away")

    session = make_session(services={"fs": Broken({})})
    (session.cwd / "a.txt").write_text("disk\n")

    result = await session.run("read", {"file_path": "a.txt"})

    assert result.meta["lines"] == ("disk",)


async def test_replayed_result_renders_the_same_card(session: Session) -> None:
    (session.cwd / "r.md").write_text("# T\nbody\n")
    args = {"file_path": "r.md", "offset": 2}
    result = await session.run("read", args)
    live = session.result_card("read", args, result)

    call = ToolCallEvent.from_json(
        json.loads(json.dumps({"type": "tool/call", "callId": "c", "name": "read", "arguments": args}))
    )
    event = ToolResultEvent("c", "read", result.content, result.is_error, result.error, result.meta)
    replayed = ToolResultEvent.from_json(json.loads(json.dumps(event.to_json())))
    definition = session.registry.get("read")
    assert (
        definition is not None and definition.present_result is not None and definition.parse_args is not None
    )

    again = definition.present_result(definition.parse_args(call.arguments), replayed.to_result())

    assert again == live
    assert (
        isinstance(again, ReadResultView) and again.lang == "markdown" and again.title == "Read r.md (2 - 2)"
    )


async def test_a_logged_window_of_odd_lines_or_offset_still_gets_a_card(session: Session) -> None:
    """An older or hand-edited log: lines that are not all texts are shown as their texts; an offset
    below 1 gets no read card (the caller falls back to a generic one), not an exception."""
    (session.cwd / "n.txt").write_text("1\n2\n3\n")
    args = {"file_path": "n.txt"}
    result = await session.run("read", args)
    definition = session.registry.get("read")
    assert definition is not None and definition.present_result is not None
    assert definition.parse_args is not None
    typed = definition.parse_args(ToolCallEvent("c", "read", args).arguments)
    live = definition.present_result(typed, result)
    odd = dict(result.meta, lines=[1, "2", 3])
    card = definition.present_result(
        typed, ToolResultEvent("c", "read", result.content, False, None, odd).to_result()
    )
    assert card == live and isinstance(card, ReadResultView)
    assert [(line.number, line.text) for line in card.lines] == [(1, "1"), (2, "2"), (3, "3")]
    below = dict(result.meta, offset=0)
    with pytest.raises(ValueError):
        definition.present_result(
            typed, ToolResultEvent("c", "read", result.content, False, None, below).to_result()
        )


async def test_an_image_file_is_returned_as_an_image_and_a_huge_one_is_refused(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100
    (session.cwd / "shot.PNG").write_bytes(png)
    args = {"file_path": "shot.PNG"}
    result = await session.run("read", args)
    assert not result.is_error
    text, image = result.content
    assert (
        isinstance(text, TextBlock)
        and text.text == "shot.PNG is an image (image/png, 108 bytes); it follows."
    )
    assert isinstance(image, ImageBlock) and (image.mime_type, base64.b64decode(image.data)) == (
        "image/png",
        png,
    )
    assert result.meta == {"path": str(session.cwd / "shot.PNG"), "cwd": str(session.cwd),
                           "image": {"mime_type": "image/png", "size": 108}}  # fmt: skip
    card = session.result_card("read", args, result)
    assert isinstance(card, GenericResultView) and card.title == "Read shot.PNG" and card.content is None

    monkeypatch.setattr(read, "MAX_IMAGE_BYTES", 100)
    refused = await session.run("read", args)
    assert refused.is_error and refused.error is not None and refused.error.code == "BINARY_FILE"
    assert "an image too large to show (image/png)" in refused.error.message
