"""The pure-Python search: `grep`'s backend when ripgrep is not on PATH, or cannot take a query.

`search(query, root, sink, stop)` answers a `ripgrep.Query` as ripgrep does and hands each file with
matches to `sink.add` in the same form (`ripgrep` module docstring): the same files (`ignore.walk` mirrors
ripgrep's hidden-file and ignore-file rules; a `glob` is an `ignore.Overrides`), in the same order (by
path), with the same lines. Files are read as ripgrep reads them: UTF-16 with a byte-order mark is
transcoded; a NUL byte in the first `BINARY_SNIFF` bytes makes a file binary (skipped), a later one ends
the text at the line before it; an unreadable file is skipped. The regular expressions are Python's (the
dialects' differences: `grep`'s docstring): a pattern `re` rejects raises `InvalidPattern`.

Blocking (it runs in a worker thread, `runtime.run_blocking`); `stop` ends it between files.

Must not: load more than one file at a time.
"""

from __future__ import annotations

import os
import re
import threading

from .ignore import Overrides, walk
from .ripgrep import Query, Sink
from .runtime import check

BINARY_SNIFF = 64 * 1024


class InvalidPattern(Exception):
    """Python's `re` rejects the query's pattern; the message is its explanation."""


def search(query: Query, root: str, sink: Sink, stop: threading.Event) -> None:
    flags = re.IGNORECASE if query.case_insensitive else 0
    try:
        regex = re.compile(query.pattern, flags)
    except re.error as exc:
        raise InvalidPattern(str(exc)) from None
    # Whole-text prefilter (re.M gives ^/$ their per-line meaning): a file without a whole-text match
    # has no matching line. \A and \Z mean "line start/end" per line, so they skip the prefilter.
    pattern = query.pattern
    whole = None if "\\A" in pattern or "\\Z" in pattern else re.compile(pattern, flags | re.M)
    before, after = query.lines_before, query.lines_after
    files = (
        [root] if os.path.isfile(root) else walk(root, Overrides([query.glob]) if query.glob else None, stop)
    )
    for path in files:
        check(stop)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue  # unreadable files are skipped, as ripgrep does
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            text = data.decode("utf-16", "replace")  # ripgrep transcodes UTF-16 with a BOM
        else:
            if b"\x00" in data[:BINARY_SNIFF]:
                continue  # binary: ripgrep skips it
            nul = data.find(b"\x00")
            if nul >= 0:
                data = data[: data.rfind(b"\n", 0, nul) + 1]
            text = data.decode("utf-8", "replace").removeprefix("\ufeff")
        if whole is not None and whole.search(text) is None:
            continue
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        if query.mode == "files_with_matches":  # the first match decides, like `rg -l`
            if any(regex.search(line) for line in lines):
                sink.add(path, 1)
            continue
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
        if not hits:
            continue
        if query.mode != "content":
            sink.add(path, len(hits))
            continue
        shown: dict[int, bool] = {}
        for i in hits:
            for k in range(max(0, i - before), min(len(lines), i + after + 1)):
                shown.setdefault(k, False)
            shown[i] = True
        sink.add(path, len(hits), ((k + 1, lines[k], shown[k]) for k in sorted(shown)))
