"""Bytes ↔ text for the file tools: what a file is from its first bytes, its encoding, and the exact
round trip.

- `sniff(head)`: a non-text file named from its first bytes ("a PNG image", "a binary file": a NUL byte),
  None for text; `image_type(head)`: the MIME type of an image a model can be shown.
- Encodings: UTF-8, UTF-8 with a byte-order mark, UTF-16 (LE or BE) with a byte-order mark; a BOM decides
  (`detect_encoding`), otherwise UTF-8. Anything else is refused, never guessed (a wrong guess corrupts
  the file when it is written back).
- `decode(data, display)` → (text, encoding, bom) of a whole file, and `encode(text, encoding, bom)` its
  inverse: no newline translation either way, so line endings and the final newline survive byte for
  byte, and the BOM is written back. `trim_partial_utf8` drops a multi-byte sequence cut off at the end
  of a chunk; `uses_crlf` tells a file's line-ending convention.

Must not: read or write files (bytes in, bytes out), or decode anything but the encodings above; a
refusal is a `file_errors` ToolError (BINARY_FILE, INVALID_UTF8, INVALID_ENCODING).
"""

from __future__ import annotations

import codecs

from registry_core import ToolError

from .file_errors import invalid_utf8, not_text

SNIFF_BYTES = 8192

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\x7fELF", "an ELF executable"),
)


_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_type(head: bytes) -> str | None:
    """The MIME type of an image a model can be shown (PNG, JPEG, GIF, WebP) from its first bytes."""
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def sniff(head: bytes) -> str | None:
    """Describe a non-text file from its first bytes ("a PNG image", "a binary file"), None for text."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None  # UTF-16 text legitimately contains NUL bytes
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "a WebP image"
    if b"\x00" in head:
        return "a binary file"
    return None


def detect_encoding(head: bytes) -> tuple[str, bool]:
    """(codec, has_bom) from the first bytes: a BOM decides, otherwise UTF-8."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8", True
    if head.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le", True
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be", True
    return "utf-8", False


def bom_bytes(encoding: str) -> bytes:
    return {"utf-8": codecs.BOM_UTF8, "utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE}[
        encoding
    ]


def decode(data: bytes, display: str) -> tuple[str, str, bool]:
    """(text, encoding, bom) of a whole file's bytes, or a ToolError for binary / undecodable data."""
    kind = sniff(data[:SNIFF_BYTES])
    encoding, bom = detect_encoding(data[:4])
    if kind is None and not encoding.startswith("utf-16") and b"\x00" in data:
        kind = "a binary file"  # a NUL past the sniffed head still means binary
    if kind is not None:
        raise not_text(display, kind, len(data))
    body = data[len(bom_bytes(encoding)) :] if bom else data
    try:
        return body.decode(encoding), encoding, bom
    except UnicodeDecodeError as exc:
        if encoding != "utf-8":
            raise ToolError(
                f"{display} is not valid {encoding.upper()} text.", code="INVALID_ENCODING"
            ) from None
        raise invalid_utf8(display, body, exc) from None


def encode(text: str, encoding: str, bom: bool) -> bytes:
    return (bom_bytes(encoding) if bom else b"") + text.encode(encoding)


def trim_partial_utf8(data: bytes) -> bytes:
    """Drop an incomplete multi-byte UTF-8 sequence cut off at the end of `data`."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead (or ASCII) byte: is its sequence complete?
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return data if need <= back else data[:-back]
    return data


def uses_crlf(text: str) -> bool:
    """True when most line breaks of `text` are CRLF."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf * 2 >= text.count("\n")
