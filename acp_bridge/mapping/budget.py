"""The payload budget: `bound_update` shrinks an update until it serialises to at most
`max_update_bytes`, and `bounded_raw_input` makes `rawInput` a bounded plain-JSON copy of the arguments.

Oversized strings are cut in the middle behind an explicit "(truncated, N bytes omitted)" marker, the longest
first (a water level), so short ones stay whole; when too many pieces leave nothing fair to cut, the update
keeps its identity and says that its content was omitted.

Must not: decide what a card shows; it only shortens what the other modules built (and leaves updates that
already fit untouched: one serialisation to measure, since the live-output path calls it for every frame).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeVar

from acp_bridge.common.json_bytes import dumps

from .text import tail, text_block, truncate_middle
from .wire import DEFAULT_MAX_UPDATE_BYTES, RAW_INPUT_MAX_BYTES

_MIN_KEEP_CHARS: Final = 256
_MARKER_ALLOWANCE: Final = 96  # bytes a truncation marker may add to a string

# Any shape of `wire` (an update, a permission request's tool call); the budget walks it as plain JSON.
Shape = TypeVar("Shape", bound=Mapping[str, object])


def bound_update(update: Shape, max_bytes: int = DEFAULT_MAX_UPDATE_BYTES) -> Shape:
    """Shrink `update` in place (text, diffs, terminal data, raw input/output) until it serialises to at
    most `max_bytes`, and return it; every update the bridge builds goes through here."""
    json_update: Any = update  # cut as plain JSON: the cuts keep every field's type
    _fit(json_update, max_bytes)
    return update


def _shrinkable(update: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(container, key) of every string the budget may cut: displayed text, diff texts, terminal data,
    raw input/output strings and plan entries. Titles and ids are already bounded."""
    leaves: list[tuple[Any, Any]] = []

    def strings(container: Any, key: Any) -> None:
        value = container[key]
        if isinstance(value, str):
            leaves.append((container, key))
        elif isinstance(value, dict):
            for inner in value:
                strings(value, inner)
        elif isinstance(value, list):
            for index in range(len(value)):
                strings(value, index)

    content = update.get("content")
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        leaves.append((content, "text"))
    elif isinstance(content, dict) and isinstance(content.get("resource"), dict):
        resource = content["resource"]  # a replayed prompt's embedded text resource
        if isinstance(resource.get("text"), str):
            leaves.append((resource, "text"))
    elif isinstance(content, list):
        for block in content:
            inner = block.get("content") if isinstance(block, dict) else None
            if isinstance(inner, dict) and isinstance(inner.get("text"), str):
                leaves.append((inner, "text"))
            elif isinstance(inner, dict) and isinstance(inner.get("resource"), dict):
                resource = inner["resource"]  # an embedded text resource
                if isinstance(resource.get("text"), str):
                    leaves.append((resource, "text"))
            elif isinstance(block, dict) and block.get("type") == "diff":
                leaves += [(block, k) for k in ("oldText", "newText") if isinstance(block.get(k), str)]
    meta = update.get("_meta")
    if isinstance(meta, dict):
        out = meta.get("terminal_output")
        if isinstance(out, dict) and isinstance(out.get("data"), str):
            leaves.append((out, "data"))
    for key in ("rawInput", "rawOutput"):
        if key in update:
            strings(update, key)
    for entry in update.get("entries") or ():
        if isinstance(entry, dict) and isinstance(entry.get("content"), str):
            leaves.append((entry, "content"))
    return leaves


def _water_level(lengths: Sequence[int], target: int) -> int:
    """The largest cap t with sum(min(n, t)) <= target: long strings shrink, short ones stay whole."""
    if target <= 0:
        return 0
    remaining = target
    ordered = sorted(lengths)
    for index, length in enumerate(ordered):
        left = len(ordered) - index
        if length * left <= remaining:
            remaining -= length
            continue
        return remaining // left
    return ordered[-1] if ordered else 0


def _fit(update: dict[str, Any], max_bytes: int) -> None:
    size = _json_size(update)
    for _ in range(4):
        if size <= max_bytes:
            return
        leaves = _shrinkable(update)
        if not leaves:
            break
        lengths = [len(container[key]) for container, key in leaves]
        # Removing k chars removes at least k serialised bytes, so cutting the excess (plus room for
        # the markers) in chars always gets under the cap in one pass unless the floor stops it.
        target = sum(lengths) - (size - max_bytes) - _MARKER_ALLOWANCE * len(leaves) - 256
        level = max(_water_level(lengths, target), _MIN_KEEP_CHARS)
        changed = False
        for (container, key), length in zip(leaves, lengths, strict=True):
            if length > level:
                container[key] = truncate_middle(container[key], level)
                changed = True
        if not changed:
            break
        size = _json_size(update)
    if size > max_bytes:
        _last_resort(update, max_bytes, size)


def _last_resort(update: dict[str, Any], max_bytes: int, size: int) -> None:
    """Too many pieces to cut fairly (thousands of blocks): keep the card's identity and say so."""
    notice = f"(content omitted: this update would be {size} bytes, over the {max_bytes}-byte limit)"
    content = update.get("content")
    if isinstance(content, list):
        update["content"] = [text_block(notice)]
    elif isinstance(content, dict):
        update["content"] = {"type": "text", "text": notice}
    if "entries" in update:
        update["entries"] = update["entries"][:20]
    if "locations" in update:
        update["locations"] = update["locations"][:10]
    if "rawInput" in update:
        update["rawInput"] = "(omitted: too large)"
    if "rawOutput" in update:
        raw = update["rawOutput"]
        update["rawOutput"] = {"isError": raw.get("isError")} if isinstance(raw, dict) else "(omitted)"
    meta = update.get("_meta")
    if isinstance(meta, dict) and isinstance(meta.get("terminal_output"), dict):
        data = meta["terminal_output"].get("data", "")
        meta["terminal_output"]["data"] = tail(data, max(_MIN_KEEP_CHARS, max_bytes // 16))


def _json_size(value: Any) -> int:
    return len(dumps(value))


def _jsonable(value: Any, max_str: int, max_items: int, depth: int, size: list[int]) -> Any:
    """A plain, bounded JSON copy (frozen mappings/tuples thawed, foreign values stringified); adds to
    `size[0]` an upper bound of the copy's serialised bytes (6 per character: the longest escape)."""
    if value is None or isinstance(value, bool):
        size[0] += 5
        return value
    if isinstance(value, str):
        out = truncate_middle(value, max_str)
        size[0] += 6 * len(out) + 2
        return out
    if isinstance(value, int):
        size[0] += len(str(value)) if abs(value) > 10**15 else 17
        return value
    if isinstance(value, float):
        size[0] += 32
        return value if math.isfinite(value) else str(value)
    if depth <= 0:
        size[0] += 8
        return "…"
    if isinstance(value, Mapping):
        out_map: dict[str, Any] = {}
        size[0] += 2
        for index, (key, item) in enumerate(value.items()):
            if index >= max_items:
                out_map["…"] = f"{len(value) - max_items} more keys omitted"
                size[0] += 64
                break
            name = str(key)
            size[0] += 6 * len(name) + 4
            out_map[name] = _jsonable(item, max_str, max_items, depth - 1, size)
        return out_map
    if isinstance(value, (list, tuple)):
        size[0] += 2 + len(value[:max_items])
        items = [_jsonable(item, max_str, max_items, depth - 1, size) for item in value[:max_items]]
        if len(value) > max_items:
            items.append(f"… {len(value) - max_items} more items omitted")
            size[0] += 64
        return items
    out = truncate_middle(repr(value), max_str)
    size[0] += 6 * len(out) + 2
    return out


def bounded_raw_input(arguments: Any) -> Any:
    """`rawInput` = the arguments, but never megabytes (a `write` of a 10 MB file)."""
    if isinstance(arguments, str):
        return truncate_middle(arguments, RAW_INPUT_MAX_BYTES // 2)
    for max_str, max_items, depth in ((4096, 200, 16), (256, 20, 6)):
        bound = [0]
        value = _jsonable(arguments, max_str, max_items, depth, bound)
        # The bound settles the usual small arguments without serialising them to measure.
        if bound[0] <= RAW_INPUT_MAX_BYTES or _json_size(value) <= RAW_INPUT_MAX_BYTES:
            return value
    return truncate_middle(json.dumps(value, ensure_ascii=False), RAW_INPUT_MAX_BYTES // 4)
