"""A command's output, kept within bounds: its head and tail in memory, the whole of it in a spill file once
it outgrows them; and any byte range of it read back (`bash_output` reads a background command's new
output).

- `feed(data)` records a chunk and returns its text for live progress (UTF-8 decoded incrementally).
- Under `HEAD_BYTES + TAIL_BYTES` in all, head and tail hold everything. Past that the whole output goes to
  a file (`spill_path`, made in the directory `spill_dir()` names): what memory held, then every chunk. A
  file that cannot be written (disk full, I/O error) is deleted and `spill_error` says why; the output is
  still drained, and only the head and the tail are kept.
- `text()`: what a model is given of it all: the output itself, or its head and tail around a line saying
  how much was left out and where the full output is.
- `read(start, limit)`: the bytes from offset `start` to the end so far, decoded, at most `limit` bytes of
  them (the first and last halves when there are more), and the offset to read from next; the part no
  longer held anywhere (a spill that failed) is said, not invented.

Must not: hold more than the head and the tail in memory, raise from `feed` (a failed spill is data), or
cut a UTF-8 character it can avoid cutting.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

HEAD_BYTES = 16 * 1024
TAIL_BYTES = 16 * 1024


def skip_utf8_continuation(data: bytes) -> bytes:
    """Skip continuation bytes a cut left at the start (a tail may begin mid-character)."""
    skip = 0
    while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
        skip += 1
    return data[skip:]


def utf8_incomplete_end(data: bytes) -> int:
    """How many bytes at the end of `data` are an incomplete multi-byte UTF-8 sequence (0 to 3)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead (or ASCII) byte: is its sequence complete?
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return 0 if need <= back else back
    return 0


@dataclass(frozen=True, slots=True)
class OutputRead:
    """A stretch of the output read back: its text (for a long stretch, its start, then `rest`, its end),
    the offset the next read starts at, and how many bytes of the stretch are in neither (`omitted`: left
    out between `text` and `rest`, still in the spill file; `lost`: held nowhere any more, the spill
    having failed)."""

    text: str
    next_offset: int
    rest: str = ""
    omitted: int = 0
    lost: int = 0


class Capture:
    """Head and tail of the output for the model; everything, once it outgrows them, in a spill file."""

    def __init__(self, spill_dir: Callable[[], str | None], prefix: str = "acp-bridge-bash-") -> None:
        self.head = bytearray()
        self.tail = bytearray()  # bytearray drops from the front in O(1) amortised (CPython)
        self.total = 0
        self.spill: IO[bytes] | None = None
        self.spill_path: str | None = None
        self.spill_error: str | None = None  # why the full output could not be saved
        self._spill_dir = spill_dir
        self._prefix = prefix
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes) -> str:
        """Record `data`; return its text for live progress. Never raises: a spill file that cannot be
        written is dropped (`spill_error`) and the output keeps being drained."""
        chunk = data
        self.total += len(chunk)
        if self.spill is None and self.spill_error is None and self.total > HEAD_BYTES + TAIL_BYTES:
            # Nothing was dropped yet: head + tail still hold everything before this chunk.
            self._open_spill()
        if self.spill is not None:
            try:
                self.spill.write(chunk)
            except OSError as exc:
                self._spill_failed(exc)
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > TAIL_BYTES:
                del self.tail[: len(self.tail) - TAIL_BYTES]
        return self._decoder.decode(data)

    def _open_spill(self) -> None:
        try:
            fd, self.spill_path = tempfile.mkstemp(prefix=self._prefix, suffix=".log", dir=self._spill_dir())
            self.spill = os.fdopen(fd, "wb")
            self.spill.write(self.head)
            self.spill.write(self.tail)
        except OSError as exc:
            self._spill_failed(exc)

    def _spill_failed(self, exc: OSError) -> None:
        """The full output cannot be saved (ENOSPC, EIO, EFBIG...): delete the partial file (it would say
        less than it claims, and holds the space the disk lacks) and keep only the head and tail."""
        self.spill_error = exc.strerror or str(exc)
        spill, self.spill = self.spill, None
        if spill is not None:
            with contextlib.suppress(OSError):
                spill.close()  # flushing may fail the same way; the descriptor is closed anyway
        if self.spill_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.spill_path)
            self.spill_path = None

    def flush(self) -> str:
        return self._decoder.decode(b"", final=True)

    def close(self) -> None:
        if self.spill is not None:
            try:
                self.spill.close()
            except OSError as exc:  # the last buffered bytes did not fit either
                self._spill_failed(exc)
            else:
                self.spill = None

    @property
    def truncated(self) -> bool:
        return self.total > HEAD_BYTES + TAIL_BYTES

    def text(self) -> str:
        if not self.truncated:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
        omitted = self.total - len(self.head) - len(self.tail)
        kept = bytes(self.head)
        head = kept[: len(kept) - utf8_incomplete_end(kept)].decode("utf-8", "replace")
        tail = skip_utf8_continuation(bytes(self.tail)).decode("utf-8", "replace")
        where = (
            f"the full output is in {self.spill_path}"
            if self.spill_path is not None
            else f"the full output could not be saved: {self.spill_error}"
        )
        return f"{head}\n\n[... {omitted} bytes omitted; {where} ...]\n\n{tail}"

    # --- reading back ---------------------------------------------------------------------------------

    def read(self, start: int, limit: int, *, final: bool = False) -> OutputRead:
        """The output from byte `start` to its end so far, at most `limit` bytes of it (its first and last
        halves when longer). Unless `final` (no more output will come), an incomplete UTF-8 character at
        the end is left for the next read."""
        end = self.total
        start = max(0, min(start, end))
        if end - start <= limit:
            data, lost = self._bytes(start, end)
            keep = 0 if final else utf8_incomplete_end(data)
            return OutputRead(_decode(data[: len(data) - keep]), end - keep, lost=lost)
        half = limit // 2
        first, lost_first = self._bytes(start, start + half)
        last, lost_last = self._bytes(end - half, end)
        keep = 0 if final else utf8_incomplete_end(last)
        first = first[: len(first) - utf8_incomplete_end(first)]
        last = skip_utf8_continuation(last[: len(last) - keep])
        omitted = end - start - 2 * half
        return OutputRead(_decode(first), end - keep, _decode(last), omitted, lost_first + lost_last)

    def _bytes(self, start: int, end: int) -> tuple[bytes, int]:
        """Bytes `start`..`end` of the output, and how many of them are held nowhere any more."""
        if end <= start:
            return b"", 0
        if not self.truncated:
            return (bytes(self.head) + bytes(self.tail))[start:end], 0
        if self.spill_path is not None:
            try:
                if self.spill is not None:
                    self.spill.flush()
                with open(self.spill_path, "rb") as f:
                    f.seek(start)
                    data = f.read(end - start)
                return data, (end - start) - len(data)
            except OSError:
                pass  # deleted under us (the session ended): what memory holds is all there is
        # Only the head and the tail: [0, len(head)) and [total - len(tail), total).
        pieces = []
        if start < len(self.head):
            pieces.append(bytes(self.head[start : min(end, len(self.head))]))
        tail_start = self.total - len(self.tail)
        if end > tail_start:
            pieces.append(bytes(self.tail[max(start, tail_start) - tail_start : end - tail_start]))
        data = b"".join(pieces)
        return data, (end - start) - len(data)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")
